-- sag-pg schema, version 2: stored event clusterings (sag-algorithm §4).  Frozen once released.
-- One clustering run chooses a set of events, clusters them (sag_pg.cluster) and stores every cluster with
-- its events; deleting an event removes it from the clusters that held it (cluster sizes are as computed).

create table sag.cluster_runs (
    id             bigint generated always as identity primary key,
    -- The source of every chosen event, or NULL when they came from several sources.
    source_id      bigint references sag.sources(id) on delete cascade,
    created_at     timestamptz not null default now(),
    -- The §4.4 parameters and the event selection the run used: {"params": {...}, "selection": {...}}.
    params         jsonb not null default '{}'::jsonb,
    event_count    integer not null check (event_count >= 0),
    cluster_count  integer not null check (cluster_count >= 0),
    -- Modularity of the Louvain partition of the fused graph; NULL when the graph had no edge.
    modularity     double precision
);
comment on table sag.cluster_runs is 'One clustering of chosen events (sag-algorithm §4): parameters, counts, modularity.';
create index cluster_runs_source_idx on sag.cluster_runs (source_id, created_at desc);

create table sag.clusters (
    id        bigint generated always as identity primary key,
    run_id    bigint not null references sag.cluster_runs(id) on delete cascade,
    ordinal   integer not null check (ordinal >= 0),  -- 0 = the largest cluster of the run
    title     text not null default '',
    size      integer not null check (size > 0),
    -- The cluster's most characteristic keys: [{"id", "type", "name", "score"}], score = sum of the IDF of the
    -- key over the cluster's events, best first.
    top_keys  jsonb not null default '[]'::jsonb,
    unique (run_id, ordinal)
);
comment on table sag.clusters is 'The communities of one clustering run, largest first, with a title and top keys.';

create table sag.cluster_events (
    cluster_id  bigint not null references sag.clusters(id) on delete cascade,
    event_id    bigint not null references sag.events(id) on delete cascade,
    primary key (cluster_id, event_id)
);
comment on table sag.cluster_events is 'Which events each cluster holds (each chosen event is in exactly one cluster of its run).';
create index cluster_events_event_idx on sag.cluster_events (event_id);

-- sag-pg schema, version 8: GraphRAG communities (a Louvain hierarchy over the event clustering) and their
-- reports.  Frozen once released.
--
-- A hierarchy is a clustering run (sag.cluster_runs, params->>'kind' = 'hierarchy') whose clusters sit at
-- several levels: level 0 is the coarsest partition (python-louvain's best_partition, which is also what a
-- plain `sag-pg cluster` run stores), each deeper level one step finer in Louvain's dendrogram, every
-- cluster's parent_id the cluster of the level above that holds its events (GraphRAG's numbering: 0 = root).
-- sag.cluster_events holds each event once per level.

alter table sag.clusters add column level integer not null default 0 check (level >= 0);
alter table sag.clusters add column parent_id bigint references sag.clusters(id) on delete cascade;
-- md5 of the sorted event ids (sag.membership_hash): a report is reused while its community keeps its events.
alter table sag.clusters add column membership_hash text;
alter table sag.clusters drop constraint clusters_run_id_ordinal_key;
alter table sag.clusters add constraint clusters_run_level_ordinal_key unique (run_id, level, ordinal);
create index clusters_parent_idx on sag.clusters (parent_id);
create index clusters_membership_idx on sag.clusters (membership_hash);
comment on column sag.clusters.level is 'Hierarchy level: 0 = coarsest (and the only level of a plain clustering run).';
comment on column sag.clusters.parent_id is 'The cluster one level up (coarser) that holds this cluster''s events.';

create table sag.community_reports (
    cluster_id          bigint primary key references sag.clusters(id) on delete cascade,
    -- 'llm': the GraphRAG report prompt, JSON-validated; 'extractive': sentences and keys picked offline.
    kind                text not null check (kind in ('llm', 'extractive')),
    title               text not null,
    summary             text not null,
    -- [{"summary", "explanation", "rating"}], most important first.
    findings            jsonb not null default '[]'::jsonb,
    rating              double precision not null,   -- GraphRAG's "rank" (impact, 0-10)
    rating_explanation  text not null default '',
    full_content        text not null,
    membership_hash     text not null,
    embedding           halfvec,
    prompt_tokens       integer not null default 0,
    completion_tokens   integer not null default 0,
    created_at          timestamptz not null default now()
);
comment on table sag.community_reports is
    'GraphRAG community reports: one per community (sag.clusters row) of a hierarchy; kind says whether an '
    'LLM wrote it or it is extractive.  membership_hash is the community''s when the report was written.';
create index community_reports_hash_idx on sag.community_reports (membership_hash);

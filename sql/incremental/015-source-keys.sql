-- Issue #32 (Citus), step A: a schema that distributes by source, on one node too.  Frozen once released.
--
-- Every per-source table (documents, chunks, events, keys, relations, tags) has the primary key
-- (source_id, id); the link tables (event_keys, chunk_keys, relation_events, key_tags, recall_stats) carry
-- source_id, first in their primary keys; every foreign key between per-source tables is composite,
-- (source_id, x_id) -> (source_id, id), so a row can only point at a row of its own source and Citus can
-- co-locate both ends.  Unique constraints without source_id get it (chunks, kg_names).  Each per-source table
-- keeps a plain, non-unique index on id for the lookups by id alone that the code still does (Citus allows no
-- unique index without the distribution column; they go once every caller passes the source).
--
-- Left out of step A: the clustering tables (cluster_runs, clusters, community_reports).  A run may span
-- several sources (cluster_runs.source_id NULL = every chosen source), so they have no source of their own:
-- on Citus they stay on the coordinator (or get a per-source design) in a later step.  Their only link to a
-- per-source table, cluster_events.event_id, does get the event's source_id: the foreign key to sag.events
-- must name its primary key, (source_id, id).
--
-- Link tables are rebuilt set-based (one INSERT ... SELECT each, keys and indexes built after the rows), not
-- updated in place: an UPDATE of every row would leave each table twice its size until a VACUUM.  The parent
-- tables only change their keys and indexes (no row is rewritten).

do $$
declare
    fk record;
begin
    -- Shown by `sag-pg db upgrade` (alembic/env.py prints notices that start with "sag-pg: ") when there is data.
    if exists (select 1 from sag.documents) then
        raise notice 'sag-pg: giving every per-source key its source_id (about % link rows to rewrite and their indexes to rebuild)',
            (select coalesce(sum(greatest(c.reltuples, 0)), 0)::bigint from pg_class c
              where c.oid in ('sag.event_keys'::regclass, 'sag.chunk_keys'::regclass, 'sag.relation_events'::regclass,
                              'sag.key_tags'::regclass, 'sag.recall_stats'::regclass, 'sag.cluster_events'::regclass));
    end if;
    -- Every foreign key that points at a per-source table (they are made again below, composite).
    for fk in select c.conrelid::regclass as tbl, c.conname
                from pg_constraint c
               where c.contype = 'f'
                 and c.confrelid in ('sag.documents'::regclass, 'sag.chunks'::regclass, 'sag.events'::regclass,
                                     'sag.keys'::regclass, 'sag.relations'::regclass, 'sag.tags'::regclass)
    loop
        execute format('alter table %s drop constraint %I', fk.tbl, fk.conname);
    end loop;
end $$;

-- Link tables: the old table renamed, its key and indexes dropped (their names are the new table's), the new
-- table filled from it with the parent's source_id, the old one dropped.  Constraints are named as PostgreSQL
-- names them: while the old table exists it would otherwise pick other names (event_keys_count_check1).
alter table sag.event_keys rename to event_keys_old;
alter table sag.event_keys_old drop constraint event_keys_pkey;
drop index sag.event_keys_key_idx;
create table sag.event_keys (
    source_id  bigint constraint event_keys_source_id_not_null not null,
    event_id   bigint constraint event_keys_event_id_not_null not null,
    key_id     bigint constraint event_keys_key_id_not_null not null,
    count      integer constraint event_keys_count_not_null not null default 1
                       constraint event_keys_count_check check (count > 0)
);
insert into sag.event_keys (source_id, event_id, key_id, count)
select e.source_id, o.event_id, o.key_id, o.count from sag.event_keys_old o join sag.events e on e.id = o.event_id;
drop table sag.event_keys_old;

alter table sag.chunk_keys rename to chunk_keys_old;
alter table sag.chunk_keys_old drop constraint chunk_keys_pkey;
drop index sag.chunk_keys_key_idx;
create table sag.chunk_keys (
    source_id  bigint constraint chunk_keys_source_id_not_null not null,
    chunk_id   bigint constraint chunk_keys_chunk_id_not_null not null,
    key_id     bigint constraint chunk_keys_key_id_not_null not null,
    count      integer constraint chunk_keys_count_not_null not null
                       constraint chunk_keys_count_check check (count > 0)
);
comment on table sag.chunk_keys is 'count(k, c) of the chunk weight formula: how often key k occurs in chunk c''s events.';
insert into sag.chunk_keys (source_id, chunk_id, key_id, count)
select c.source_id, o.chunk_id, o.key_id, o.count from sag.chunk_keys_old o join sag.chunks c on c.id = o.chunk_id;
drop table sag.chunk_keys_old;

alter table sag.relation_events rename to relation_events_old;
alter table sag.relation_events_old drop constraint relation_events_pkey;
drop index sag.relation_events_event_idx;
create table sag.relation_events (
    source_id    bigint constraint relation_events_source_id_not_null not null,
    relation_id  bigint constraint relation_events_relation_id_not_null not null,
    event_id     bigint constraint relation_events_event_id_not_null not null
);
comment on table sag.relation_events is 'The events that state or support a relation (its evidence).';
insert into sag.relation_events (source_id, relation_id, event_id)
select r.source_id, o.relation_id, o.event_id from sag.relation_events_old o join sag.relations r on r.id = o.relation_id;
drop table sag.relation_events_old;

alter table sag.key_tags rename to key_tags_old;
alter table sag.key_tags_old drop constraint key_tags_pkey;
drop index sag.key_tags_tag_idx;
create table sag.key_tags (
    source_id  bigint constraint key_tags_source_id_not_null not null,
    key_id     bigint constraint key_tags_key_id_not_null not null,
    tag_id     bigint constraint key_tags_tag_id_not_null not null,
    relevance  real constraint key_tags_relevance_not_null not null default 1
);
insert into sag.key_tags (source_id, key_id, tag_id, relevance)
select k.source_id, o.key_id, o.tag_id, o.relevance from sag.key_tags_old o join sag.keys k on k.id = o.key_id;
drop table sag.key_tags_old;

alter table sag.recall_stats rename to recall_stats_old;
alter table sag.recall_stats_old drop constraint recall_stats_pkey;
create table sag.recall_stats (
    source_id       bigint constraint recall_stats_source_id_not_null not null,
    document_id     bigint constraint recall_stats_document_id_not_null not null,
    recall_count    bigint constraint recall_stats_recall_count_not_null not null default 0,
    total_score     double precision constraint recall_stats_total_score_not_null not null default 0,
    last_recall_at  timestamptz constraint recall_stats_last_recall_at_not_null not null default now()
) with (fillfactor = 70);
comment on table sag.recall_stats is
    'How often a document was returned by a search or recall, the sum of its scores and when last: the '
    'input of recall-based eviction.';
insert into sag.recall_stats (source_id, document_id, recall_count, total_score, last_recall_at)
select d.source_id, o.document_id, o.recall_count, o.total_score, o.last_recall_at
  from sag.recall_stats_old o join sag.documents d on d.id = o.document_id;
drop table sag.recall_stats_old;

-- Not a per-source table (a cluster belongs to a run, which may span sources), but each row names an event.
alter table sag.cluster_events rename to cluster_events_old;
alter table sag.cluster_events_old drop constraint cluster_events_pkey;
drop index sag.cluster_events_event_idx;
create table sag.cluster_events (
    cluster_id  bigint constraint cluster_events_cluster_id_not_null not null
                       constraint cluster_events_cluster_id_fkey references sag.clusters(id) on delete cascade,

    source_id   bigint constraint cluster_events_source_id_not_null not null,
    event_id    bigint constraint cluster_events_event_id_not_null not null
);
comment on table sag.cluster_events is 'Which events each cluster holds (each chosen event is in exactly one cluster of its run).';
insert into sag.cluster_events (cluster_id, source_id, event_id)
select o.cluster_id, e.source_id, o.event_id from sag.cluster_events_old o join sag.events e on e.id = o.event_id;
drop table sag.cluster_events_old;

-- Parent tables: primary key (source_id, id), a plain index on id; unique constraints with source_id.
do $$
declare
    tbl text;
begin
    if exists (select 1 from sag.documents) then
        raise notice 'sag-pg: rebuilding the primary keys of documents, chunks, events, keys, relations and tags with source_id';
    end if;
    foreach tbl in array array['documents', 'chunks', 'events', 'keys', 'relations', 'tags'] loop
        execute format('alter table sag.%I drop constraint %I', tbl, tbl || '_pkey');
        execute format('alter table sag.%I add constraint %I primary key (source_id, id)', tbl, tbl || '_pkey');
        execute format('create index %I on sag.%I (id)', tbl || '_id_idx', tbl);
    end loop;
end $$;
alter table sag.chunks drop constraint chunks_document_id_ordinal_key;
alter table sag.chunks add constraint chunks_source_id_document_id_ordinal_key unique (source_id, document_id, ordinal);
-- The primary keys serve lookups by source.
drop index sag.chunks_source_idx;
drop index sag.events_source_idx;
drop index sag.events_chunk_idx;
drop index sag.events_document_idx;
create index events_chunk_idx on sag.events (source_id, chunk_id);
create index events_document_idx on sag.events (source_id, document_id);
drop index sag.relations_head_idx;
drop index sag.relations_tail_idx;
drop index sag.relations_tail_type_idx;
create index relations_head_idx on sag.relations (source_id, head_key_id);
create index relations_tail_idx on sag.relations (source_id, tail_key_id);
create index relations_tail_type_idx on sag.relations (source_id, tail_key_id, relation_type);
drop index sag.kg_names_unique_idx;
create unique index kg_names_unique_idx on sag.kg_names (source_id, key_id, lang, md5(name));

-- Link tables' keys and indexes, built once over their rows.
do $$ begin
    if exists (select 1 from sag.documents) then
        raise notice 'sag-pg: building the link tables'' keys and indexes';
    end if;
end $$;
alter table sag.event_keys add constraint event_keys_pkey primary key (source_id, event_id, key_id);
create index event_keys_key_idx on sag.event_keys (source_id, key_id, event_id);
alter table sag.chunk_keys add constraint chunk_keys_pkey primary key (source_id, chunk_id, key_id);
create index chunk_keys_key_idx on sag.chunk_keys (source_id, key_id, chunk_id);
alter table sag.relation_events add constraint relation_events_pkey primary key (source_id, relation_id, event_id);
create index relation_events_event_idx on sag.relation_events (source_id, event_id);
alter table sag.key_tags add constraint key_tags_pkey primary key (source_id, key_id, tag_id);
create index key_tags_tag_idx on sag.key_tags (source_id, tag_id);
alter table sag.recall_stats add constraint recall_stats_pkey primary key (source_id, document_id);
alter table sag.cluster_events add constraint cluster_events_pkey primary key (cluster_id, event_id);
create index cluster_events_event_idx on sag.cluster_events (source_id, event_id);

-- Composite foreign keys (validated here: every row's source is its parent's by construction above).
do $$ begin
    if exists (select 1 from sag.documents) then
        raise notice 'sag-pg: validating the composite foreign keys';
    end if;
end $$;

alter table sag.chunks add constraint chunks_document_id_fkey
    foreign key (source_id, document_id) references sag.documents (source_id, id) on delete cascade;
alter table sag.events add constraint events_chunk_id_fkey
    foreign key (source_id, chunk_id) references sag.chunks (source_id, id) on delete cascade;
alter table sag.events add constraint events_document_id_fkey
    foreign key (source_id, document_id) references sag.documents (source_id, id) on delete cascade;
alter table sag.event_keys add constraint event_keys_event_id_fkey
    foreign key (source_id, event_id) references sag.events (source_id, id) on delete cascade;
alter table sag.event_keys add constraint event_keys_key_id_fkey
    foreign key (source_id, key_id) references sag.keys (source_id, id) on delete cascade;
alter table sag.chunk_keys add constraint chunk_keys_chunk_id_fkey
    foreign key (source_id, chunk_id) references sag.chunks (source_id, id) on delete cascade;
alter table sag.chunk_keys add constraint chunk_keys_key_id_fkey
    foreign key (source_id, key_id) references sag.keys (source_id, id) on delete cascade;
alter table sag.relations add constraint relations_head_key_id_fkey
    foreign key (source_id, head_key_id) references sag.keys (source_id, id) on delete cascade;
alter table sag.relations add constraint relations_tail_key_id_fkey
    foreign key (source_id, tail_key_id) references sag.keys (source_id, id) on delete cascade;
-- event_id is NULL for relations not extracted from an event: not checked then (MATCH SIMPLE).
alter table sag.relations add constraint relations_event_id_fkey
    foreign key (source_id, event_id) references sag.events (source_id, id) on delete cascade;
alter table sag.relation_events add constraint relation_events_relation_id_fkey
    foreign key (source_id, relation_id) references sag.relations (source_id, id) on delete cascade;
alter table sag.relation_events add constraint relation_events_event_id_fkey
    foreign key (source_id, event_id) references sag.events (source_id, id) on delete cascade;
alter table sag.key_tags add constraint key_tags_key_id_fkey
    foreign key (source_id, key_id) references sag.keys (source_id, id) on delete cascade;
alter table sag.key_tags add constraint key_tags_tag_id_fkey
    foreign key (source_id, tag_id) references sag.tags (source_id, id) on delete cascade;
alter table sag.recall_stats add constraint recall_stats_document_id_fkey
    foreign key (source_id, document_id) references sag.documents (source_id, id) on delete cascade;
alter table sag.kg_names add constraint kg_names_key_id_fkey
    foreign key (source_id, key_id) references sag.keys (source_id, id) on delete cascade;
alter table sag.cluster_events add constraint cluster_events_event_id_fkey
    foreign key (source_id, event_id) references sag.events (source_id, id) on delete cascade;

analyze sag.event_keys, sag.chunk_keys, sag.relation_events, sag.key_tags, sag.recall_stats, sag.cluster_events;

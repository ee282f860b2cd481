-- The last tables that could not be distributed by source (issue #32): the pending term statistics keep
-- their rows by (source_id, id), and later migrations that make a per-source table call
-- sag_internal._colocate(table) right after CREATE TABLE, before its foreign keys (Citus refuses a foreign key
-- from a table that is not distributed alike), which distributes it with sag.documents on a Citus coordinator
-- and does nothing on one PostgreSQL.

alter table sag.term_stats_pending drop constraint term_stats_pending_pkey;
alter table sag.term_stats_pending add constraint term_stats_pending_pkey primary key (source_id, id);
-- A deleted source takes its queued changes with it (the flush no longer scans the queue for orphans).
delete from sag.term_stats_pending p where not exists (select 1 from sag.sources s where s.id = p.source_id);
alter table sag.term_stats_pending add constraint term_stats_pending_source_id_fkey
    foreign key (source_id) references sag.sources (id) on delete cascade;

-- A shard moves to another worker (citus_rebalance_start) by logical replication, which needs each table's
-- rows identified: kg_names has no primary key (its unique index is on md5(name): names may be longer than a
-- btree entry), so the whole row identifies it.
alter table sag.kg_names replica identity full;

create or replace function sag_internal._colocate(tbl regclass)
returns boolean
language plpgsql
set search_path = pg_catalog, sag, pg_temp
as $$
begin
    if to_regclass('pg_catalog.pg_dist_partition') is null then
        return false;
    end if;
    if not exists (select 1 from pg_catalog.pg_dist_partition where logicalrelid = 'sag.documents'::regclass) then
        return false;
    end if;
    if exists (select 1 from pg_catalog.pg_dist_partition where logicalrelid = tbl) then
        return false;
    end if;
    execute format('select pg_catalog.create_distributed_table(%L, %L, colocate_with => %L)',
                   tbl::text, 'source_id', 'sag.documents');
    return true;
end;
$$;
comment on function sag_internal._colocate(regclass) is
    'Distributes a new per-source table by source_id, co-located with sag.documents, where the schema is '
    'distributed on Citus; nothing on one PostgreSQL.  Migrations call it after CREATE TABLE, before foreign keys.';

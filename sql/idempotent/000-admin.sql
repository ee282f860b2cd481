-- Administrative functions: embedder binding and statistics.  Re-applied on every upgrade.

-- Internal helpers live in their own schema (alembic revision 0012 moved them there), out of `\df sag.*`.
create schema if not exists sag_internal;

-- maintenance_work_mem is sized for each graph, up to the caller's setting: a parallel HNSW build allocates
-- a shared-memory area of the whole maintenance_work_mem up front (and the server zeroes it), so 1.5 GB for a
-- graph of a few thousand vectors costs more than building it (0.4 s an index); a graph that needs more than
-- the setting allows is built partly on disk, as pgvector's NOTICE says.  The caller's value is put back
-- before returning (a SET clause cannot be used: it would replace the caller's value on entry, too).
create or replace function sag.create_vector_indexes(dimension integer default null)
returns integer
language plpgsql
set search_path = pg_catalog, sag, pg_temp
as $$
declare
    dim integer := coalesce(dimension, (sag.bound_embedder()->>'dimension')::int);
    made integer := 0;
    spec record;
    callers text := current_setting('maintenance_work_mem');
    allowed_kb bigint := pg_size_bytes(current_setting('maintenance_work_mem')) / 1024;
    rows_ bigint;
    shards bigint;
    distributed boolean;
begin
    if dim is null then
        return 0;  -- no embedder bound yet: the columns are untyped and cannot be indexed
    end if;
    -- Two bulk loads may finish together: one builds, the other then finds the indexes there.
    perform pg_advisory_xact_lock(hashtext('sag.vector_indexes'));
    -- pgvector's HNSW indexes half-precision vectors of up to 4,000 dimensions.
    if dim > 4000 then
        raise notice 'dimension % is above pgvector''s HNSW limit of 4000 (halfvec): vector search will scan', dim;
        return 0;
    end if;
    distributed := to_regclass('pg_catalog.pg_dist_partition') is not null;
    if distributed then
        execute 'select exists (select 1 from pg_catalog.pg_dist_partition where logicalrelid = $1)'
           into distributed using 'sag.chunks'::regclass;
    end if;
    for spec in select * from (values ('chunks'), ('events'), ('keys')) t(tbl) loop
        if to_regclass(format('sag.%s_embedding_hnsw', spec.tbl)) is null then
            if distributed then
                -- On Citus each shard gets a graph of its own, built on its worker with the worker's own
                -- maintenance_work_mem unless a SET LOCAL travels there (set_config does not; a 64 MB default
                -- built a 1 M-event corpus' graphs on disk).  The shards are built side by side: the caller's
                -- allowance is shared between the shards that hold rows, each sized for the largest.
                execute format('select coalesce(max(n), 0), count(*) from (select count(*) as n from sag.%I '
                               'where embedding is not null group by '
                               'pg_catalog.get_shard_id_for_distribution_column(%L, source_id)) s',
                               spec.tbl, 'sag.' || spec.tbl) into rows_, shards;
                perform set_config('citus.propagate_set_commands', 'local', true);
                execute format('set local maintenance_work_mem = %L',
                               least(allowed_kb / greatest(shards, 1),
                                     greatest(65536, (rows_ * (2 * dim + 1024) * 1.2 / 1024)::bigint)) || 'kB');
            else
                -- 2 bytes a dimension and 1 KiB of neighbour lists and bookkeeping an element (m = 16), + 20 %.
                execute format('select count(*) from sag.%I where embedding is not null', spec.tbl) into rows_;
                perform set_config('maintenance_work_mem',
                                   least(allowed_kb, greatest(65536, (rows_ * (2 * dim + 1024) * 1.2 / 1024)::bigint))
                                   || 'kB', true);
            end if;
            execute format('create index %I on sag.%I using hnsw (embedding @extschema:vector@.halfvec_cosine_ops)',
                           spec.tbl || '_embedding_hnsw', spec.tbl);
            made := made + 1;
        end if;
    end loop;
    if distributed then
        execute format('set local maintenance_work_mem = %L', callers);
    else
        perform set_config('maintenance_work_mem', callers, true);
    end if;
    return made;
end;
$$;
comment on function sag.create_vector_indexes(integer) is
    'Creates the missing HNSW cosine indexes (halfvec_cosine_ops) on chunks, events and keys (after sag.drop_vector_indexes or a '
    'bulk load); returns how many it built.';

create or replace function sag.drop_vector_indexes()
returns void
language plpgsql
set search_path = pg_catalog, sag, pg_temp
as $$
begin
    perform pg_advisory_xact_lock(hashtext('sag.vector_indexes'));
    -- One index a statement (Citus drops one distributed object at a time), in plpgsql: a SQL-language function
    -- is sent to the workers as one prepared statement of three commands, which they refuse ("cannot insert
    -- multiple commands into a prepared statement") once the indexes exist.
    drop index if exists sag.chunks_embedding_hnsw;
    drop index if exists sag.events_embedding_hnsw;
    drop index if exists sag.keys_embedding_hnsw;
end;
$$;
comment on function sag.drop_vector_indexes() is
    'Drops the HNSW indexes so a bulk load does not pay for one graph insertion per row; rebuild them with '
    'sag.create_vector_indexes() (sag-pg does both around large ingests).';

-- Embeddings in the row: PLAIN (uncompressed) while a vector fits a page comfortably (6 KB: 3,000
-- half-precision dimensions), MAIN above.  The reasons are in sql/incremental/003-bm25-stats.sql.
create or replace function sag.set_vector_storage(dimension integer)
returns text
language plpgsql
set search_path = pg_catalog, sag, pg_temp
as $$
declare
    mode text := case when dimension <= 3000 then 'plain' else 'main' end;
begin
    execute format('alter table sag.chunks alter column embedding set storage %s', mode);
    execute format('alter table sag.events alter column embedding set storage %s', mode);
    execute format('alter table sag.keys alter column embedding set storage %s', mode);
    return mode;
end;
$$;
comment on function sag.set_vector_storage(integer) is
    'Sets the storage of the three embedding columns for vectors of this dimension: plain up to 3,000, main above.';

-- The embedding columns typed halfvec(dimension): when the first embedder is bound, and by a reembed to another
-- dimension (discard: the old vectors go).  Their storage is decided as they are made: PostgreSQL 16 takes
-- STORAGE in ADD COLUMN, and Citus propagates ADD/DROP COLUMN to its shards but refuses SET STORAGE on a
-- distributed table.  An empty (or discarded) column is replaced; a column that holds vectors to keep (typed by
-- hand), or any column on PostgreSQL 15, is altered in place and its storage set after (ALTER TYPE resets it to
-- the type's EXTENDED).  DROP COLUMN takes the keys' check on the column with it: it is put back.
drop function if exists sag_internal._type_vector_columns(integer);  -- before the discard argument
create or replace function sag_internal._type_vector_columns(dimension integer, discard boolean default false)
returns text
language plpgsql
set search_path = pg_catalog, sag, pg_temp
as $$
declare
    mode text := case when dimension <= 3000 then 'plain' else 'main' end;
    tbl text;
    filled boolean;
    retyped boolean := false;
begin
    foreach tbl in array array['chunks', 'events', 'keys'] loop
        execute format('select exists (select 1 from sag.%I where embedding is not null)', tbl) into filled;
        if (discard or not filled) and current_setting('server_version_num')::int >= 160000 then
            execute format('alter table sag.%I drop column embedding, '
                           'add column embedding @extschema:vector@.halfvec(%s) storage %s', tbl, dimension, mode);
        else
            execute format('alter table sag.%I alter column embedding type @extschema:vector@.halfvec(%s)%s',
                           tbl, dimension, case when discard then ' using null' else '' end);
            retyped := true;
        end if;
    end loop;
    if retyped then
        perform sag.set_vector_storage(dimension);
    end if;
    if not exists (select 1 from pg_constraint where conrelid = 'sag.keys'::regclass
                                                  and conname = 'keys_embedding_only_for_strings') then
        alter table sag.keys add constraint keys_embedding_only_for_strings
            check (embedding is null or value_string is not null);
    end if;
    return mode;
end;
$$;

-- An embedder's name and dimension as sag.bind_embedder and sag.begin_reembed take them (22023 otherwise).
create or replace function sag_internal._check_embedder(caller text, embedder text, dimension integer)
returns void
language plpgsql immutable
set search_path = pg_catalog, sag, pg_temp
as $$
begin
    if embedder is null or embedder = '' then
        raise exception using errcode = '22023', message = format('%s: embedder name must not be empty', caller);
    end if;
    if dimension is null or dimension < 1 or dimension > 16000 then
        raise exception using errcode = '22023',
            message = format('%s: dimension must be between 1 and 16000, got %s', caller, dimension);
    end if;
end;
$$;

create or replace function sag.bound_embedder()
returns jsonb
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
begin
    return ( select value from sag.settings where name = 'embedder');
end
$$;

create or replace function sag.bind_embedder(embedder text, dimension integer)
returns jsonb
language plpgsql
set search_path = pg_catalog, sag, pg_temp
as $$
declare
    bound jsonb;
begin
    perform sag_internal._check_embedder('sag.bind_embedder', embedder, dimension);
    -- Two first-time clients may bind at once; the first one decides, the second compares.
    perform pg_advisory_xact_lock(hashtext('sag.bind_embedder'));
    select value into bound from sag.settings where name = 'embedder';
    if bound is null then
        perform sag_internal._type_vector_columns(dimension);
        perform sag.create_vector_indexes(dimension);
        bound := jsonb_build_object('name', embedder, 'dimension', dimension, 'bound_at', now());
        insert into sag.settings (name, value) values ('embedder', bound);
        return bound;
    end if;
    if bound->>'name' <> embedder or (bound->>'dimension')::int <> dimension then
        raise exception using errcode = '22023',
            message = format('this database was created with embedder %s (dimension %s), not %s (dimension %s)',
                             bound->>'name', bound->>'dimension', embedder, dimension),
            hint = 'Open it with the same embedder (--embedder / SAG_EMBEDDER), or use another database.';
    end if;
    -- A bulk load that was killed before rebuilding its indexes leaves them missing: restore them.
    perform sag.create_vector_indexes(dimension);
    return bound;
end;
$$;
comment on function sag.bind_embedder(text, integer) is
    'Records which embedder (name, dimension) this database serves, typing the embedding columns halfvec(dimension) and building '
    'their HNSW indexes on first call; afterwards raises 22023 if called with another embedder, and (same '
    'embedder) builds any HNSW index that is missing (a bulk load killed before rebuilding them): a call by hand '
    'can take as long as that build.  Readers need not call it: sag.bound_embedder() only reads.';

comment on function sag.bound_embedder() is
    'The embedder this database was created with: {"name", "dimension", "bound_at"}, or NULL if none yet.';

create or replace function sag.table_counts()
returns table (table_name text, row_count bigint)
language plpgsql stable
set search_path = pg_catalog, sag, pg_temp
as $$
#variable_conflict use_column
begin
    return query
    select 'sources', count(*) from sag.sources
    union all select 'documents', count(*) from sag.documents
    union all select 'chunks', count(*) from sag.chunks
    union all select 'events', count(*) from sag.events
    union all select 'keys', count(*) from sag.keys
    union all select 'event_keys', count(*) from sag.event_keys;
end
$$;
comment on function sag.table_counts() is 'Exact row counts of the main sag tables.';

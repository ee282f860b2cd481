-- Bulk loads and the HNSW indexes under concurrent clients.  A bulk load drops the vector indexes, loads, and
-- builds them once at its end; nobody else builds them meanwhile (searches never build indexes), and a load
-- that died is finished by the next writer (sag.repair_vector_indexes), never by a reader.
--
-- Three advisory locks (database-wide) order everything, so no client ever deadlocks on the indexes:
--   'sag.bulk_load'       session lock, SHARED by every running bulk load from its start to its end.  While an
--                         index is missing and nobody holds it, the load that dropped the index has died.
--                         Taken EXCLUSIVE by whoever rebuilds (the last loader to finish, or the next writer).
--   'sag.vector_indexes'  transaction lock, EXCLUSIVE while indexes are dropped or built (sag.create_vector_indexes
--                         takes it), SHARED by every document write (sag.ingest_document, sag.delete_document,
--                         and the deletion of a source: sag_pg/db/sources.py) before it touches a table, even to
--                         read it (issue #36: a source deletion that counted its chunks first, then waited for
--                         this lock, deadlocked with a bulk load holding it and waiting for the tables).  A build therefore never starts while a writer holds a table it
--                         needs, and a writer never holds one table while waiting for a build on another: the
--                         deadlocks of issue #15 (CREATE INDEX on keys against a writer holding keys and waiting on
--                         chunks) cannot form.
-- Dropping takes ACCESS EXCLUSIVE on the three tables, which a running search also holds a lock on; it asks with
-- a lock_timeout of 100 ms (below deadlock_timeout) and tries again, so a search waits at most that long behind it
-- and is never the victim of a deadlock.

-- Waits (at most wait_seconds) for the shared 'sag.bulk_load' session lock; 55P03 with a clear message otherwise.
create or replace function sag_internal._join_bulk_load(wait_seconds float8)
returns void
language plpgsql
set search_path = pg_catalog, sag, pg_temp
as $$
declare
    deadline timestamptz := clock_timestamp() + make_interval(secs => wait_seconds);
begin
    while not pg_try_advisory_lock_shared(hashtext('sag.bulk_load')) loop
        if clock_timestamp() >= deadline then
            raise exception using errcode = '55P03',
                message = format('another client has been rebuilding the vector indexes for more than %s s', wait_seconds),
                hint = 'Try again when it has finished (select * from pg_stat_activity where query like ''%vector_index%'').';
        end if;
        perform pg_sleep(0.05);
    end loop;
end;
$$;

create or replace function sag.begin_bulk_load(wait_seconds float8 default 60)
returns integer
language plpgsql
set search_path = pg_catalog, sag, pg_temp
as $$
declare
    deadline timestamptz := clock_timestamp() + make_interval(secs => wait_seconds);
    callers text := current_setting('lock_timeout');
    dropped integer := 0;
begin
    if wait_seconds is null or wait_seconds < 0 then
        raise exception using errcode = '22023', message = 'sag.begin_bulk_load: wait_seconds must be >= 0';
    end if;
    perform sag_internal._join_bulk_load(wait_seconds);
    begin
    -- Writers in the middle of a document finish it first; new ones wait (shared lock) until the drop commits.
    perform pg_advisory_xact_lock(hashtext('sag.vector_indexes'));
    perform set_config('lock_timeout', '100ms', true);
    loop
        begin
            lock table sag.chunks, sag.events, sag.keys in access exclusive mode;
            exit;
        exception when lock_not_available then
            if clock_timestamp() >= deadline then
                raise exception using errcode = '55P03',
                    message = format('could not drop the vector indexes for a bulk load: searches kept the tables '
                                     'busy for %s s', wait_seconds);
            end if;
            perform pg_sleep(0.01);
        end;
    end loop;
    perform set_config('lock_timeout', callers, true);
    select count(*) into dropped from (values ('chunks'), ('events'), ('keys')) t(tbl)
     where to_regclass(format('sag.%s_embedding_hnsw', t.tbl)) is not null;
    -- One DROP an index: Citus refuses to drop several distributed objects in one command.
    drop index if exists sag.chunks_embedding_hnsw;
    drop index if exists sag.events_embedding_hnsw;
    drop index if exists sag.keys_embedding_hnsw;
    exception when others then
        -- A session lock outlives the failed transaction: leave the loads in progress.
        perform pg_advisory_unlock_shared(hashtext('sag.bulk_load'));
        raise;
    end;
    return dropped;
end;
$$;
comment on function sag.begin_bulk_load(float8) is
    'Starts a bulk load on this session: joins the loads in progress (shared session lock ''sag.bulk_load''; waits '
    'at most wait_seconds for a rebuild in progress, then raises 55P03) and drops the HNSW indexes, so rows are '
    'not inserted into the graphs one by one.  Returns how many indexes it dropped.  End with sag.finish_bulk_load() '
    'on the same session; if the session dies first, the next writer rebuilds (sag.repair_vector_indexes).';

-- Builds the missing indexes holding 'sag.bulk_load' exclusively (so no load starts dropping them meanwhile); -1
-- without building when any other session holds it (a bulk load in progress, or another rebuild).
create or replace function sag_internal._build_vector_indexes_alone()
returns integer
language plpgsql
set search_path = pg_catalog, sag, pg_temp
as $$
declare
    made integer;
begin
    if not pg_try_advisory_lock(hashtext('sag.bulk_load')) then
        return -1;
    end if;
    begin
        made := sag.create_vector_indexes();
    exception when others then
        perform pg_advisory_unlock(hashtext('sag.bulk_load'));  -- a session lock outlives the failed transaction
        raise;
    end;
    perform pg_advisory_unlock(hashtext('sag.bulk_load'));
    return made;
end;
$$;

create or replace function sag.finish_bulk_load()
returns integer
language plpgsql
set search_path = pg_catalog, sag, pg_temp
as $$
begin
    perform pg_advisory_unlock_shared(hashtext('sag.bulk_load'));
    -- Another load still running builds the indexes when it ends: building them now would only make its rows
    -- go into the graphs one at a time again.
    return sag_internal._build_vector_indexes_alone();
end;
$$;
comment on function sag.finish_bulk_load() is
    'Ends this session''s bulk load (sag.begin_bulk_load): the last load to finish builds the missing HNSW indexes '
    'and returns how many; -1 when another bulk load is still running (it will build them).';

create or replace function sag.missing_vector_indexes()
returns integer
language sql stable
set search_path = pg_catalog, sag, pg_temp
as $$
    select count(*)::int from (values ('chunks'), ('events'), ('keys')) t(tbl)
     where to_regclass(format('sag.%s_embedding_hnsw', t.tbl)) is null
       and sag.bound_embedder() is not null
$$;
comment on function sag.missing_vector_indexes() is
    'How many of the three HNSW indexes are missing (0 before an embedder is bound): a bulk load in progress, '
    'or one that died before sag.finish_bulk_load.';

create or replace function sag.repair_vector_indexes()
returns integer
language plpgsql
set search_path = pg_catalog, sag, pg_temp
as $$
begin
    if sag.missing_vector_indexes() = 0 then
        return 0;
    end if;
    -- A bulk load in progress holds the lock shared and builds the indexes itself when it ends.
    return greatest(sag_internal._build_vector_indexes_alone(), 0);
end;
$$;
comment on function sag.repair_vector_indexes() is
    'Builds the HNSW indexes a dead bulk load left missing (none while a bulk load is running: it builds them at its '
    'end); returns how many it built.  sag-pg runs it at the start of every ingest, never from a search.';

-- Issue #36: no sag function resolves a name through a schema other roles may create in (public before
-- PostgreSQL 15).  The idempotent files now pin search_path = pg_catalog, sag, pg_temp and name pgvector's and
-- pg_trgm's objects with their schema; this fixes the functions that only the released incremental files made.

-- The index expression of keys_signature_idx: left without a SET clause (PostgreSQL inlines it), so every
-- function it calls is named with its schema.  Same result for every input: the index stays valid.
create or replace function sag.key_signature(normalized text) returns text
language sql immutable parallel safe strict
return (select pg_catalog.string_agg(m[1], ' '::text order by m[1])
          from pg_catalog.regexp_matches(normalized, '([0-9]+|[^0-9]+)'::text, 'g'::text) m);

-- Trigger functions of 003 and 006 that the idempotent files do not re-create.
do $$
declare
    f record;
begin
    for f in select p.oid::regprocedure as fn
               from pg_proc p
              where p.pronamespace in ('sag'::regnamespace, 'sag_internal'::regnamespace)
                and p.prokind = 'f'
                and exists (select 1 from unnest(p.proconfig) c where c like 'search_path=%public%')
    loop
        execute format('alter function %s set search_path = pg_catalog, sag, pg_temp', f.fn);
    end loop;
end $$;

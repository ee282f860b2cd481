-- Internal functions in their own schema, sag_internal, so that `\df sag.*` shows the analysts' surface only.
-- Moved (ALTER FUNCTION ... SET SCHEMA), not re-created: triggers stay bound to their functions.  Names keep
-- their leading underscore, so the downgrade (alembic 0012) moves them back exactly.  A stale copy already in
-- sag_internal (schema sag dropped and made anew) is dropped first.
create schema if not exists sag_internal;

do $$
declare
    f record;
begin
    for f in select p.proname, pg_get_function_identity_arguments(p.oid) as args
               from pg_proc p
              where p.pronamespace = 'sag'::regnamespace and p.proname like '\_%'
    loop
        execute format('drop function if exists sag_internal.%I(%s) cascade', f.proname, f.args);
        execute format('alter function sag.%I(%s) set schema sag_internal', f.proname, f.args);
    end loop;
end $$;

-- Per-source access for SQL roles (issue #36 item 12): row-level security on every per-source table, so an
-- analyst's role sees only the sources granted to it, through psql, sag.search and every other sag function
-- (they run as their caller).  The grants are role memberships, which every node of a Citus cluster knows
-- (the policies are evaluated on the workers, where they may read no table): a role that is a member of
-- sag_<database>_restricted reads the sources whose role sag_<database>_source_<id> it is a member of; any
-- other role reads every source, as before.  sag.grant_source / sag.revoke_source manage them.  The role that
-- owns the tables (the one sag-pg and `db upgrade` connect as) and superusers are not subject to the policies.

create or replace function sag_internal._may_read(src bigint)
returns boolean
language sql stable parallel safe
set search_path = pg_catalog, pg_temp
as $$
    select not coalesce(pg_catalog.pg_has_role(current_user,
                            pg_catalog.to_regrole(pg_catalog.format('sag_%s_restricted', current_database())),
                            'member'), false)
        or coalesce(pg_catalog.pg_has_role(current_user,
                        pg_catalog.to_regrole(pg_catalog.format('sag_%s_source_%s', current_database(), src)),
                        'member'), false)
$$;
comment on function sag_internal._may_read(bigint) is
    'Whether the current role may read source src: true unless it is restricted (a member of '
    'sag_<database>_restricted) and not granted the source (a member of sag_<database>_source_<id>).';

do $$
declare
    tbl text;
begin
    -- Every table whose rows belong to a source (a source_id column).
    for tbl in select c.relname from pg_catalog.pg_class c
                 join pg_catalog.pg_attribute a on a.attrelid = c.oid and a.attname = 'source_id' and not a.attisdropped
                where c.relnamespace = 'sag'::regnamespace and c.relkind = 'r' order by 1 loop
        execute format('alter table sag.%I enable row level security', tbl);
        execute format('create policy readable_sources on sag.%I using (sag_internal._may_read(source_id))', tbl);
    end loop;
end;
$$;
alter table sag.sources enable row level security;
create policy readable_sources on sag.sources using (sag_internal._may_read(id));

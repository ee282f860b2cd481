-- Per-source access for SQL roles: the grants behind the row-level security policies of migration 0020
-- (sag_internal._may_read), managed from psql.  Re-applied on every upgrade.

-- The roles that carry the grants, as sag_internal._may_read names them: sag_<database>_restricted, and
-- sag_<database>_source_<id> for source src.
create or replace function sag_internal._access_role(src bigint default null)
returns text
language sql stable
set search_path = pg_catalog, sag, pg_temp
return format('sag_%s_%s', current_database(), coalesce('source_' || src, 'restricted'));

-- A role granted some sources reads only them through every sag table and function; a role granted none reads
-- every source.  The grants are role memberships (the roles above, made on first use: the caller needs
-- CREATEROLE), which Citus copies to every node.
create or replace function sag.grant_source(source_name text, role_name name)
returns boolean
language plpgsql
set search_path = pg_catalog, sag, pg_temp
as $$
declare
    src bigint := (select s.id from sag.sources s where s.name = source_name);
    restricted text := sag_internal._access_role();
    reader text := sag_internal._access_role(src);
    granted boolean;
begin
    if src is null then
        raise exception using errcode = 'P0002', message = format('sag.grant_source: no source named %L', source_name);
    end if;
    if to_regrole(quote_ident(role_name)) is null then
        raise exception using errcode = '42704', message = format('sag.grant_source: no role named %I', role_name);
    end if;
    if length(reader) > 63 then
        raise exception using errcode = '42622',
            message = format('sag.grant_source: the database name is too long for the role %s', reader);
    end if;
    if to_regrole(quote_ident(restricted)) is null then
        execute format('create role %I nologin', restricted);
    end if;
    if to_regrole(quote_ident(reader)) is null then
        execute format('create role %I nologin', reader);
    end if;
    granted := not pg_has_role(role_name, reader, 'member');
    execute format('grant %I, %I to %I', restricted, reader, role_name);
    return granted;
end;
$$;
comment on function sag.grant_source(text, name) is
    'Restricts a role (and its members) to the sources granted to it: after the first grant it reads only them, '
    'through psql and every sag function.  The role still needs SELECT on the tables (and USAGE on schemas sag '
    'and sag_internal) as usual; the caller needs CREATEROLE.  '
    'Example: select sag.grant_source(''finance'', ''analyst_fin'');';

create or replace function sag.revoke_source(source_name text, role_name name)
returns boolean
language plpgsql
set search_path = pg_catalog, sag, pg_temp
as $$
declare
    src bigint := (select s.id from sag.sources s where s.name = source_name);
    restricted text := sag_internal._access_role();
    reader text := sag_internal._access_role(src);
    was boolean;
begin
    if src is null or to_regrole(quote_ident(reader)) is null or to_regrole(quote_ident(role_name)) is null then
        return false;
    end if;
    was := exists (select 1 from pg_auth_members m
                    where m.roleid = to_regrole(quote_ident(reader)) and m.member = to_regrole(quote_ident(role_name)));
    if was then
        execute format('revoke %I from %I', reader, role_name);
    end if;
    -- A role left with no source reads every source again.
    if not exists (select 1 from pg_auth_members m join pg_roles r on r.oid = m.roleid
                    where m.member = to_regrole(quote_ident(role_name))
                      and starts_with(r.rolname, left(reader, -length(src::text))))
       and to_regrole(quote_ident(restricted)) is not null then
        execute format('revoke %I from %I', restricted, role_name);
    end if;
    return was;
end;
$$;
comment on function sag.revoke_source(text, name) is
    'Takes a source grant back; a role left with no grant reads every source again.';

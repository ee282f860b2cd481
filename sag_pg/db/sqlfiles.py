"""Apply the files under ``sql/``: incremental ones once (by alembic), idempotent ones on every upgrade."""

from __future__ import annotations

import hashlib
import re

import psycopg
from psycopg.types.json import Jsonb

from .._resources import idempotent_sql_files, incremental_sql
from ..errors import DatabaseError

# The idempotent files name pgvector's and pg_trgm's objects as ``@extschema:vector@.halfvec``,
# ``operator(@extschema:vector@.<=>)`` (PostgreSQL's own notation in extension scripts): replaced, when a file
# is applied, by the schema each extension lives in.  No sag function resolves a name through that schema
# (often ``public``, where other roles may create objects): its search_path is pg_catalog, sag, pg_temp.
_EXTSCHEMA = re.compile(r"@extschema:(\w+)@")
EXTENSIONS = ("vector", "pg_trgm")


def idempotent_hash() -> str:
    digest = hashlib.sha256()
    for path in idempotent_sql_files():
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def apply_incremental(conn: psycopg.Connection, filename: str) -> None:
    # No parameters: psycopg sends the file with the simple query protocol, many statements at once.
    conn.execute(incremental_sql(filename))  # type: ignore[arg-type]


def extension_schemas(conn: psycopg.Connection) -> dict[str, str]:
    """The schema of each extension sag's SQL uses (vector, pg_trgm), as a quoted identifier."""
    rows = conn.execute(
        "select e.extname, pg_catalog.quote_ident(n.nspname), n.nspname from pg_catalog.pg_extension e"
        " join pg_catalog.pg_namespace n on n.oid = e.extnamespace where e.extname = any(%s)",
        [list(EXTENSIONS)]).fetchall()
    found = {str(name): str(quoted) for name, quoted, raw in rows if "'" not in raw}
    missing = [name for name in EXTENSIONS if name not in found]
    if missing:
        raise DatabaseError(f"the extension(s) {', '.join(missing)} are not installed in this database (or live in "
                            "a schema whose name holds a quote): run `sag-pg db upgrade` as a role that may create them")
    return found


def with_extension_schemas(text: str, schemas: dict[str, str]) -> str:
    """``text`` with every ``@extschema:NAME@`` replaced by NAME's schema."""
    return _EXTSCHEMA.sub(lambda m: schemas[m.group(1)], text)


def apply_idempotent(conn: psycopg.Connection) -> str:
    schemas = extension_schemas(conn)
    for path in idempotent_sql_files():
        conn.execute(with_extension_schemas(path.read_text(encoding="utf-8"), schemas))  # type: ignore[arg-type]
    fingerprint = idempotent_hash()
    conn.execute(
        "insert into sag.settings (name, value, updated_at) values ('functions', %s, now()) "
        "on conflict (name) do update set value = excluded.value, updated_at = excluded.updated_at",
        [Jsonb({"hash": fingerprint})],
    )
    return fingerprint


def ensure_idempotent(conn: psycopg.Connection) -> bool:
    """Apply the idempotent files unless the database already has these very files; True if applied."""
    row = conn.execute("select value->>'hash' from sag.settings where name = 'functions'").fetchone()
    if row and row[0] == idempotent_hash():
        return False
    apply_idempotent(conn)
    return True


# Objects in a schema that other roles may create in, which are neither an extension's nor a superuser's nor
# the migrating role's own: a migration resolving names through that schema could run one of them.
_FOREIGN_OBJECTS = """
with schemas as (
    select n.oid, n.nspname from pg_catalog.pg_namespace n
     where n.oid = any (select e.extnamespace from pg_catalog.pg_extension e where e.extname = any (%(exts)s))
       and exists (select 1 from pg_catalog.aclexplode(coalesce(n.nspacl, pg_catalog.acldefault('n', n.nspowner))) a
                    where a.privilege_type = 'CREATE' and a.grantee <> n.nspowner
                      and (a.grantee = 0 or not (select r.rolsuper from pg_catalog.pg_roles r where r.oid = a.grantee)))
), objects as (
    select s.nspname, p.oid::pg_catalog.regprocedure::text as what, p.proowner as owner, 'pg_proc'::regclass as cls, p.oid
      from pg_catalog.pg_proc p join schemas s on s.oid = p.pronamespace
    union all
    select s.nspname, o.oid::pg_catalog.regoperator::text, o.oprowner, 'pg_operator'::regclass, o.oid
      from pg_catalog.pg_operator o join schemas s on s.oid = o.oprnamespace
)
select o.nspname, o.what, pg_catalog.pg_get_userbyid(o.owner)
  from objects o
 where not exists (select 1 from pg_catalog.pg_depend d
                    where d.classid = o.cls and d.objid = o.oid and d.deptype = 'e')
   and o.owner <> (select oid from pg_catalog.pg_roles where rolname = current_user)
   and not (select r.rolsuper from pg_catalog.pg_roles r where r.oid = o.owner)
 order by 1, 2
 limit 6
"""


def prepare_migration_session(conn: psycopg.Connection) -> None:
    """Make the extensions and pin the migration's search_path to pg_catalog and their schemas.

    The released incremental files name pgvector's types unqualified, so the migration resolves names through
    the extensions' schemas (often ``public``).  Where other roles may create objects there, a function or
    operator one of them made could shadow a built-in: the upgrade refuses to run then, naming what it found.
    """
    conn.execute("create extension if not exists vector")
    conn.execute("create extension if not exists pg_trgm")
    foreign = conn.execute(_FOREIGN_OBJECTS, {"exts": list(EXTENSIONS)}).fetchall()
    if foreign:
        listed = ", ".join(f"{what} (owner {owner})" for _, what, owner in foreign[:5])
        raise DatabaseError(
            f"schema {foreign[0][0]} holds objects of other roles that the upgrade would resolve names through: "
            f"{listed}{', ...' if len(foreign) > 5 else ''}. Drop them, or revoke CREATE on the schema from "
            "other roles, then run `sag-pg db upgrade` again")
    schemas = extension_schemas(conn)
    path = ", ".join(["pg_catalog", *dict.fromkeys(schemas.values()), "pg_temp"])
    conn.execute("select pg_catalog.set_config('search_path', %s, true)", [path])

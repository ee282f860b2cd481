"""Schema upgrades through alembic, and the check that the schema matches the code."""

from __future__ import annotations

import enum
import functools
import re
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

import psycopg

from .._resources import alembic_dir
from ..errors import SchemaVersionError
from .sqlfiles import idempotent_hash

if TYPE_CHECKING:
    from alembic.config import Config

# alembic (with sqlalchemy, ~0.25 s to import) is imported where an upgrade or a revision lookup needs it, so
# commands that only read do not pay for it.
# alembic's `context` is a module-level proxy: two upgrades in threads of one process would share it.
_ALEMBIC_IN_PROCESS = threading.Lock()


def alembic_config(dsn: str) -> Config:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(alembic_dir()))
    cfg.attributes["dsn"] = dsn
    return cfg


_REVISION_RE = re.compile(r'^(down_revision|revision)\s*=\s*(?:"([^"]*)"|\'([^\']*)\'|None)', re.MULTILINE)


@functools.cache
def _revisions() -> dict[str, str | None]:
    """Every revision of alembic/versions with the one it revises, read from the files' assignments: what
    alembic's ScriptDirectory gives, without importing alembic and sqlalchemy (a quarter second) on every
    connection's schema check."""
    found: dict[str, str | None] = {}
    for path in sorted((alembic_dir() / "versions").glob("*.py")):
        values = {m.group(1): m.group(2) or m.group(3) for m in _REVISION_RE.finditer(path.read_text("utf-8"))}
        if values.get("revision"):
            found[str(values["revision"])] = values.get("down_revision")
    return found


def head_revision() -> str:
    revisions = _revisions()
    heads = set(revisions) - {down for down in revisions.values() if down}
    if len(heads) == 1:
        return heads.pop()
    from alembic.script import ScriptDirectory  # several heads or none: let alembic say what it makes of them

    head = ScriptDirectory.from_config(alembic_config("")).get_current_head()
    assert head is not None
    return head


class SchemaState(enum.Enum):
    EMPTY = "empty"  # no sag schema yet
    CURRENT = "current"
    BEHIND = "behind"  # an older revision, or functions older than the code
    UNKNOWN = "unknown"  # a revision this code does not know (newer sag-pg?)


@dataclass(frozen=True)
class SchemaStatus:
    state: SchemaState
    revision: str | None
    head: str
    functions_current: bool


def current_revision(conn: psycopg.Connection) -> str | None:
    exists = conn.execute("select to_regclass('sag.alembic_version') is not null").fetchone()
    if not exists or not exists[0]:
        return None
    row = conn.execute("select version_num from sag.alembic_version").fetchone()
    return row[0] if row else None


def schema_status(conn: psycopg.Connection) -> SchemaStatus:
    head = head_revision()
    revision = current_revision(conn)
    if revision is None:
        return SchemaStatus(SchemaState.EMPTY, None, head, False)
    row = conn.execute("select value->>'hash' from sag.settings where name = 'functions'").fetchone()
    functions_current = bool(row and row[0] == idempotent_hash())
    if revision not in _revisions():
        state = SchemaState.UNKNOWN
    elif revision != head or not functions_current:
        state = SchemaState.BEHIND
    else:
        state = SchemaState.CURRENT
    return SchemaStatus(state, revision, head, functions_current)


def upgrade(dsn: str, *, distributed: bool | None = None) -> str:
    """Bring the database at ``dsn`` to the code's schema; safe to run concurrently and repeatedly.

    On a Citus coordinator (or with ``distributed=True``, which refuses anything else) the schema is then
    distributed by source (``sag_pg.db.distribute``); ``distributed=False`` leaves it on the coordinator."""
    # Function-only changes ship without a new revision: alembic/env.py re-applies them at head when their
    # fingerprint changed, under the upgrade lock.
    from alembic import command

    from .distribute import distribute, is_coordinator

    with _ALEMBIC_IN_PROCESS:
        command.upgrade(alembic_config(dsn), "head")
    if distributed is not False:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("set search_path = pg_catalog, pg_temp")
            if distributed or is_coordinator(conn):
                distribute(conn)
    return head_revision()


def require_current(conn: psycopg.Connection) -> SchemaStatus:
    status = schema_status(conn)
    if status.state is SchemaState.BEHIND:
        what = (
            f"schema revision {status.revision}, this sag-pg needs {status.head}"
            if status.revision != status.head
            else "SQL functions older than this sag-pg"
        )
        raise SchemaVersionError(f"the database has {what}: run `sag-pg db upgrade`")
    if status.state is SchemaState.UNKNOWN:
        raise SchemaVersionError(
            f"the database has schema revision {status.revision}, unknown to this sag-pg "
            f"(which knows up to {status.head}): upgrade sag-pg"
        )
    return status

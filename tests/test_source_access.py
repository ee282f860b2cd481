"""Per-source access for SQL roles (issue #36 item 12): a role granted some sources reads only them, through
the tables and through sag's functions in psql; a role in no grant reads everything; revoking restores it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import psycopg
import pytest
from psycopg import sql

from sag_pg import SAG


@pytest.fixture
def two_sources(sag: SAG) -> SAG:
    sag.ingest_text("Halvard Systems builds wind turbines in Bergen. Ines Okafor leads Halvard Systems.",
                    uri="halvard.md", source="finance")
    sag.ingest_text("The Orla Trust funds libraries in Cork. Ines Okafor advises the Orla Trust.",
                    uri="orla.md", source="legal")
    return sag


@pytest.fixture(autouse=True)
def _drop_roles(db_dsn: str) -> Iterator[None]:
    """Roles belong to the server, not to the test's database: the ones a test made are dropped after it."""
    yield
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        made = [r for (r,) in conn.execute("select rolname from pg_roles where starts_with(rolname, 'analyst_') "
                                           "or starts_with(rolname, %s)", [f"sag_{conn.info.dbname}_"]).fetchall()]
        for role in made:
            conn.execute(sql.SQL("drop owned by {}").format(sql.Identifier(role)))
            conn.execute(sql.SQL("drop role {}").format(sql.Identifier(role)))


def _analyst(dsn: str) -> str:
    role = f"analyst_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("create role {} nologin").format(sql.Identifier(role)))
        conn.execute(sql.SQL("grant usage on schema sag, sag_internal to {}").format(sql.Identifier(role)))
        conn.execute(sql.SQL("grant select on all tables in schema sag to {}").format(sql.Identifier(role)))
    return role


def _as(dsn: str, role: str, query: str, params: list[object] | None = None) -> list[tuple[object, ...]]:
    with psycopg.connect(dsn) as conn:
        conn.execute(sql.SQL("set role {}").format(sql.Identifier(role)))
        return conn.execute(query, params).fetchall()  # type: ignore[arg-type]


def test_a_granted_role_reads_only_its_sources(two_sources: SAG, db_dsn: str) -> None:
    role = _analyst(db_dsn)
    everything = _as(db_dsn, role, "select s.name, count(*) from sag.documents d join sag.sources s "
                                   "on s.id = d.source_id group by 1 order by 1")
    assert everything == [("finance", 1), ("legal", 1)]  # no grant yet: every source
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        assert conn.execute("select sag.grant_source('finance', %s)", [role]).fetchone() == (True,)
    assert _as(db_dsn, role, "select name from sag.sources") == [("finance",)]
    for table in ("documents", "chunks", "events", "keys", "event_keys", "relations", "term_stats",
                  "corpus_stats"):
        seen = _as(db_dsn, role, f"select distinct source_id from sag.{table}")
        assert len(seen) == 1, table
    # sag.search runs as its caller: the other source is unknown to the role, its own answers.
    assert {d for d, *_ in _as(db_dsn, role, "select document from sag.search('Who leads Halvard Systems?', "
                                             "source => 'finance')")} == {"halvard.md"}
    with pytest.raises(psycopg.errors.NoDataFound, match="legal"):
        _as(db_dsn, role, "select document from sag.search('Who advises the Orla Trust?', source => 'legal')")
    # A member of the role is restricted alike; the owner (sag-pg itself) still sees everything.
    assert two_sources.search("Who advises the Orla Trust?", source="legal")
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        assert conn.execute("select sag.revoke_source('finance', %s)", [role]).fetchone() == (True,)
    assert _as(db_dsn, role, "select name from sag.sources order by 1") == [("finance",), ("legal",)]


def test_grants_name_existing_sources_and_roles(two_sources: SAG, db_dsn: str) -> None:
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.NoDataFound, match="no source named 'nope'"):
            conn.execute("select sag.grant_source('nope', 'postgres')")
        with pytest.raises(psycopg.errors.UndefinedObject, match="no role named"):
            conn.execute("select sag.grant_source('finance', 'no_such_role_x')")


def test_every_table_of_a_source_has_the_policy(db_dsn: str) -> None:
    """A table whose rows belong to a source (a source_id column) and has no policy would show every source."""
    with psycopg.connect(db_dsn) as conn:
        missing = conn.execute("""
            select c.relname from pg_class c
              join pg_attribute a on a.attrelid = c.oid and a.attname = 'source_id' and not a.attisdropped
             where c.relnamespace = 'sag'::regnamespace and c.relkind = 'r'
               and not (c.relrowsecurity and exists (select 1 from pg_policy p where p.polrelid = c.oid
                                                                 and p.polname = 'readable_sources'))""").fetchall()
        sources = conn.execute("select relrowsecurity from pg_class where oid = 'sag.sources'::regclass").fetchone()
    assert missing == [] and sources == (True,)

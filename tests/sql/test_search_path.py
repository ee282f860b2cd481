"""No sag function runs a function another role put in schema public (issue 15, point 2).

A role that may create objects in public (the default before PostgreSQL 15, and on servers upgraded from one)
defines public.ln(float8) and public.lower(text).  Every sag function pins search_path = pg_catalog, sag,
public, pg_temp, so the built-ins win and the shadows never run, whoever calls the search.
"""

from __future__ import annotations

import os

import psycopg
import pytest
from psycopg import sql

from tests.sql.graph_builder import GraphBuilder

Q = [1.0, 0.0, 0.0]


@pytest.fixture
def shadowed(db_conn: psycopg.Connection):  # type: ignore[no-untyped-def]
    role = f"sag_shadow_{os.getpid()}"
    ident = sql.Identifier(role)
    db_conn.execute(sql.SQL("create role {} nologin").format(ident))
    db_conn.execute(sql.SQL("grant create, usage on schema public to {}").format(ident))
    db_conn.execute(sql.SQL("set role {}").format(ident))
    for signature, returns in (("ln(double precision)", "double precision"), ("lower(text)", "text")):
        db_conn.execute(f"create function public.{signature} returns {returns} language plpgsql as "
                        "$$ begin raise exception 'a shadowing function in public ran'; end $$")
    db_conn.execute("reset role")
    yield role
    db_conn.rollback()  # the role and its functions were made in the test's transaction: gone with it
    with psycopg.connect(db_conn.info.dsn, autocommit=True) as admin:
        if admin.execute("select 1 from pg_roles where rolname = %s", [role]).fetchone():
            admin.execute(sql.SQL("drop owned by {}").format(ident))
            admin.execute(sql.SQL("drop role {}").format(ident))


def test_search_never_runs_a_shadowing_function(db_conn: psycopg.Connection, shadowed: str) -> None:
    # The shadows do run for a caller whose own search_path puts public first: the fixture is sound.
    with pytest.raises(psycopg.errors.RaiseException), db_conn.transaction():
        db_conn.execute("set local search_path = public, pg_catalog")
        db_conn.execute("select ln(2.0::float8)")
    g = GraphBuilder(db_conn)
    s = g.source("one")
    doc = g.document(s, "one/a.md", title="Apple")
    c1 = g.chunk(doc, "Apple was founded by Steve Jobs", (1, 0, 0))
    c2 = g.chunk(doc, "Jobs returned in 1997", (0, 0, 1))
    jobs, apple = g.key(s, "Steve Jobs", (1, 0, 0)), g.key(s, "Apple", (4, 3, 0))
    g.links(g.event(c1, "Steve Jobs founded Apple", (1, 0, 0)), jobs, apple)
    g.links(g.event(c2, "Jobs returned to Apple", (0, 0, 1)), jobs)
    db_conn.execute("select sag.flush_term_stats()")
    # As the superuser that owns everything, with public first on the caller's own path.
    db_conn.execute("set search_path = public, pg_catalog")
    found = db_conn.execute("select document from sag.search('Who founded Apple?', 5, 'one', %s::vector)",
                            [Q]).fetchall()
    assert {row[0] for row in found} == {"one/a.md"}
    assert db_conn.execute("select sag.query_terms('Who founded Apple?')").fetchone() == (["who", "founded", "apple"],)

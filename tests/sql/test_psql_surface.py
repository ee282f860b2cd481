"""What an analyst meets in psql (issue 20, point 6): a documented surface in schema sag, internal helpers in
sag_internal, results with names, errors that name the function called and unknown sources."""

from __future__ import annotations

import psycopg
import pytest

from tests.sql.graph_builder import GraphBuilder, vec

Q = vec((1, 0, 0))


def test_schema_sag_holds_only_documented_functions(db_conn: psycopg.Connection) -> None:
    undocumented_or_internal = db_conn.execute(
        "select p.oid::regprocedure::text from pg_proc p where p.pronamespace = 'sag'::regnamespace "
        "and (p.proname like '\\_%' or obj_description(p.oid, 'pg_proc') is null) order by 1").fetchall()
    assert undocumented_or_internal == []
    internal = db_conn.execute(
        "select count(*), count(*) filter (where p.proname not like '\\_%') from pg_proc p "
        "where p.pronamespace = 'sag_internal'::regnamespace").fetchone()
    assert internal[0] > 20 and internal[1] == 0


def test_match_keys_names_its_keys(db_conn: psycopg.Connection) -> None:
    g = GraphBuilder(db_conn)
    s = g.source("one")
    k1 = g.key(s, "Ada Lovelace", (1, 0, 0))
    k2 = g.key(s, "engine", (4, 3, 0))
    rows = db_conn.execute("select key_id, name, similarity from sag.match_keys(%s::vector, %s)",
                           [Q, [s]]).fetchall()
    assert [(r[0], r[1]) for r in rows] == [(k1, "Ada Lovelace"), (k2, "engine")]


def test_an_unknown_source_id_is_an_error_not_an_empty_answer(db_conn: psycopg.Connection) -> None:
    g = GraphBuilder(db_conn)
    s = g.source("one")
    g.key(s, "k", (1, 0, 0))
    missing = s + 1000
    for call in (f"select * from sag.match_keys(%s::vector, array[{s}, {missing}]::bigint[])",
                 f"select sag.retrieve('k', %s::vector, array[{missing}]::bigint[])"):
        with pytest.raises(psycopg.errors.NoDataFound) as err:
            db_conn.execute(call, [Q])
        db_conn.rollback()
        assert f"no source with id {missing}" in str(err.value)
        assert "select id, name from sag.sources" in (err.value.diag.message_hint or "")


def test_a_bad_argument_names_the_function_called_and_no_internal_one(db_conn: psycopg.Connection) -> None:
    with pytest.raises(psycopg.errors.InvalidParameterValue) as err:
        db_conn.execute("select * from sag.search('x', top_n => 0)")
    assert str(err.value).startswith("sag.search: top_n must be from 1 to 10000, got 0")
    context = err.value.diag.context or ""
    assert "search(" in context and "_" not in context.split("function ")[1].split("(")[0]
    db_conn.rollback()
    # psql reads a number beyond integer as a bigint: the same clear refusal, not "function does not exist".
    for big in ("99999999999", "10001"):
        with pytest.raises(psycopg.errors.InvalidParameterValue, match=f"top_n must be from 1 to 10000, got {big}"):
            db_conn.execute(f"select * from sag.search('x', top_n => {big})")
        db_conn.rollback()

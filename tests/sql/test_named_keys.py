"""sag.keys_named: the keys whose normalized name a question writes out."""

from __future__ import annotations

import psycopg
import pytest

from tests.sql.graph_builder import GraphBuilder


@pytest.fixture
def graph(db_conn: psycopg.Connection) -> dict[str, int]:
    g = GraphBuilder(db_conn)
    one, two = g.source("one"), g.source("two")
    chunk = g.chunk(g.document(one, "one/a.md"), "text", (1, 0, 0))
    ids = {
        "vance": g.key(one, "Quentin Vance", (0, 0, 1)),
        "vance_person": g.key(one, "Quentin Vance", (0, 0, 1), type="person"),
        "vance_two": g.key(two, "Quentin Vance", (0, 0, 1)),
        "hub": g.key(one, "United States", (0, 1, 0)),
        "year": g.key(one, "1999", number=1999.0),
    }
    for _ in range(3):
        g.link(g.event(chunk, "e", (1, 0, 0)), ids["hub"])
    for key_id, name in db_conn.execute("select id, name from sag.keys").fetchall():
        db_conn.execute("update sag.keys set normalized = lower(replace(%s, ' ', '')) where id = %s", [name, key_id])
    return {**ids, "one": one, "two": two}


def named(conn: psycopg.Connection, names: list[str], source_ids: list[int] | None = None,
          max_key_events: int | None = None, *, hubs: bool = False) -> list[tuple[int, ...]]:
    rows = conn.execute("select ord, key_id, hub from sag.keys_named(%s, %s, %s)",
                        [names, source_ids, max_key_events]).fetchall()
    return [(r[0], r[1], r[2]) if hubs else (r[0], r[1]) for r in rows]


def test_exact_names_of_every_type_in_the_sources(db_conn: psycopg.Connection, graph: dict[str, int]) -> None:
    # Every key of that normalized name (any type), ordered by name position, then key id.
    assert named(db_conn, ["nobody", "quentinvance"], [graph["one"]]) == [
        (2, graph["vance"]), (2, graph["vance_person"])]
    assert named(db_conn, ["quentinvance"], [graph["two"]]) == [(1, graph["vance_two"])]
    assert {k for _, k in named(db_conn, ["quentinvance"])} == {graph["vance"], graph["vance_person"],
                                                                 graph["vance_two"]}
    # Exact only: a prefix or a near spelling is no match.
    assert named(db_conn, ["quentin", "quentinvanc"]) == []


def test_hubs_are_flagged_and_non_string_keys_left_out(db_conn: psycopg.Connection,
                                                       graph: dict[str, int]) -> None:
    # "United States" has 3 events: a hub when the limit is below 3 (no limit: never a hub).
    one = [graph["one"]]
    assert named(db_conn, ["unitedstates"], one, hubs=True) == [(1, graph["hub"], False)]
    assert named(db_conn, ["unitedstates"], one, max_key_events=3, hubs=True) == [(1, graph["hub"], False)]
    assert named(db_conn, ["unitedstates"], one, max_key_events=2, hubs=True) == [(1, graph["hub"], True)]
    assert named(db_conn, ["quentinvance"], one, max_key_events=2, hubs=True) == [
        (1, graph["vance"], False), (1, graph["vance_person"], False)]  # no events at all: not a hub
    assert named(db_conn, ["1999"]) == []       # a numeric key is a value, not a name
    assert named(db_conn, []) == []

"""Stage 2, the multi-hop loop (sag-algorithm §2.3): sag.expand_keys on a hand-made graph.

Query q = (1, 0, 0).  Events and their similarity to q:
    e1 (1,0,0) 1.0: A, C        e2 (4,3,0) 0.8: A, B, D      e3 (3,4,0) 0.6: B, E
    e4 (0,0,1) 0.0: C, F        e5 (4,0,3) 0.8: C, G         e6 (1,0,0) 1.0: H only
H is also in e1, e2, e3: 4 events, a hub when max_key_events = 3.  Input key-final: A = 1.0, B = 0.5 (step 1).

Hop 2, from F = {A: 1, B: 1/2}:
    W_event-key-2: e1 = A = 1; e2 = A + B = 3/2; e3 = B = 1/2
    W_e-jump = W_event-key-2 * sim: e1 = 1; e2 = 3/2 * 4/5 = 6/5; e3 = 1/2 * 3/5 = 3/10
    reverse: A = e1 + e2 = 11/5; B = e2 + e3 = 3/2; C = e1 = 1; D = e2 = 6/5; E = e3 = 3/10
    / max 11/5:  A 1, B 15/22, C 5/11 (10/22), D 6/11 (12/22), E 3/22          new: C, D, E -> step 2
Hop 3, from F = {A: 1, B: 15/22, C: 5/11, D: 6/11, E: 3/22}:
    W_event-key-2: e1 = A + C = 16/11; e2 = A + B + D = (22 + 15 + 12)/22 = 49/22; e3 = B + E = 9/11;
                   e4 = C = 5/11; e5 = C = 5/11
    W_e-jump: e1 = 16/11 = 80/55; e2 = 49/22 * 4/5 = 98/55; e3 = 9/11 * 3/5 = 27/55; e4 = 0; e5 = 5/11 * 4/5 = 20/55
    reverse: A = 80/55 + 98/55 = 178/55; B = 98/55 + 27/55 = 125/55; C = 80/55 + 0 + 20/55 = 100/55;
             D = 98/55; E = 27/55; G = 20/55 (F's only event weighs 0: F gets nothing)
    / max 178/55: A 1, B 125/178, C 100/178, D 98/178, E 27/178, G 20/178   new: G -> step 3
Accumulated (first step, largest weight): A 1 (1), B max(15/22, 125/178) = 125/178 (1),
    C max(5/11, 100/178) = 100/178 (2), D max(6/11, 98/178) = 98/178 (2), E max(3/22, 27/178) = 27/178 (2),
    G 20/178 (3).
"""

from __future__ import annotations

import psycopg
import pytest

from tests.sql.graph_builder import GraphBuilder, vec

Q = vec((1, 0, 0))

HOP2 = {"A": (1.0, 1), "B": (15 / 22, 1), "C": (5 / 11, 2), "D": (6 / 11, 2), "E": (3 / 22, 2)}
HOP3 = {"A": (1.0, 1), "B": (125 / 178, 1), "C": (100 / 178, 2), "D": (98 / 178, 2), "E": (27 / 178, 2),
        "G": (20 / 178, 3)}


@pytest.fixture
def graph(db_conn: psycopg.Connection) -> dict[str, int]:
    g = GraphBuilder(db_conn)
    s = g.source("one")
    c = g.chunk(g.document(s, "doc"), "text", (1, 0, 0))
    k = {name: g.key(s, name) for name in "ABCDEFGH"}
    e = {n: g.event(c, n, v) for n, v in [("e1", (1, 0, 0)), ("e2", (4, 3, 0)), ("e3", (3, 4, 0)),
                                         ("e4", (0, 0, 1)), ("e5", (4, 0, 3)), ("e6", (1, 0, 0))]}
    g.links(e["e1"], k["A"], k["C"], k["H"])
    g.links(e["e2"], k["A"], k["B"], k["D"], k["H"])
    g.links(e["e3"], k["B"], k["E"], k["H"])
    g.links(e["e4"], k["C"], k["F"])
    g.links(e["e5"], k["C"], k["G"])
    g.links(e["e6"], k["H"])
    k["source"] = s
    return k


def expand(conn: psycopg.Connection, keys: dict[int, tuple[float, int]], **kw: object) -> dict[int, tuple[float, int]]:
    named = "".join(f", {name} => %({name})s" for name in kw)
    rows = conn.execute(
        f"select key_id, weight, step from sag.expand_keys(%(q)s::vector, %(ids)s, %(w)s, %(s)s{named})",
        {"q": Q, "ids": list(keys), "w": [v[0] for v in keys.values()], "s": [v[1] for v in keys.values()], **kw},
    ).fetchall()
    return {r[0]: (r[1], r[2]) for r in rows}


def expected(k: dict[str, int], table: dict[str, tuple[float, int]]) -> dict[int, tuple[object, int]]:
    return {k[name]: (pytest.approx(w, abs=1e-9), step) for name, (w, step) in table.items()}


def test_two_hops(db_conn: psycopg.Connection, graph: dict[str, int]) -> None:
    k = graph
    start = {k["A"]: (1.0, 1), k["B"]: (0.5, 1)}
    assert expand(db_conn, start, max_key_events=3) == expected(k, HOP3)      # max_step 3 = hops 2 and 3
    assert expand(db_conn, start, max_key_events=3, max_step=2) == expected(k, HOP2)
    assert expand(db_conn, start, max_key_events=3, max_step=1) == expected(k, {"A": (1.0, 1), "B": (0.5, 1)})


def test_result_is_ordered_by_weight(db_conn: psycopg.Connection, graph: dict[str, int]) -> None:
    k = graph
    rows = db_conn.execute(
        "select key_id from sag.expand_keys(%s::vector, %s, %s, %s, max_key_events => 3)",
        [Q, [k["B"], k["A"]], [0.5, 1.0], [1, 1]],
    ).fetchall()
    assert [r[0] for r in rows] == [k[n] for n in "ABCDEG"]


def test_stops_when_too_few_new_keys(db_conn: psycopg.Connection, graph: dict[str, int]) -> None:
    k = graph
    start = {k["A"]: (1.0, 1), k["B"]: (0.5, 1)}
    # Hop 2 brings 3 new keys (C, D, E): fewer than 4, so hop 3 does not run.
    assert expand(db_conn, start, max_key_events=3, min_new_keys=4) == expected(k, HOP2)
    assert expand(db_conn, start, max_key_events=3, min_new_keys=3) == expected(k, HOP3)


def test_pruning_applies_at_every_hop(db_conn: psycopg.Connection, graph: dict[str, int]) -> None:
    k = graph
    start = {k["A"]: (1.0, 1), k["B"]: (0.5, 1)}
    # threshold 0.2: hop 2 keeps A 1, B 15/22, C 5/11, D 6/11 (E = 3/22 < 0.2 is pruned).
    # Hop 3 from F = {A: 1, B: 15/22, C: 5/11, D: 6/11}: e3 = B * 3/5 = 9/22 (no E):
    #   e1 = 16/11 = 80/55, e2 = 98/55, e3 = 15/22 * 3/5 = 9/22 = 22.5/55, e5 = 20/55
    #   A = 178/55; B = 98/55 + 22.5/55 = 120.5/55; C = 100/55; D = 98/55; E = 22.5/55; G = 20/55
    #   / 178/55: B 120.5/178 = 0.6770, C 100/178, D 98/178, E 22.5/178 = 0.1264 < 0.2, G 20/178 < 0.2
    # No new key at hop 3; the accumulation keeps the largest weights.
    got = expand(db_conn, start, max_key_events=3, threshold=0.2)
    assert got == expected(k, {"A": (1.0, 1), "B": (15 / 22, 1), "C": (100 / 178, 2), "D": (98 / 178, 2)})
    # top_n 2: hop 2 keeps A, B (C, D, E pruned): nothing new, stop.
    assert expand(db_conn, start, max_key_events=3, top_n=2) == expected(k, {"A": (1.0, 1), "B": (15 / 22, 1)})


def test_hubs_are_neither_expanded_nor_returned(db_conn: psycopg.Connection, graph: dict[str, int]) -> None:
    k = graph
    start = {k["A"]: (1.0, 1), k["B"]: (0.5, 1)}
    # With the default max_key_events, H (4 events) is an ordinary key.  Hop 2: H = e1 + e2 + e3 =
    # 1 + 6/5 + 3/10 = 5/2 is the maximum: H = 1, D = 6/5 / 5/2 = 12/25, A = 11/5 / 5/2 = 22/25 (but A keeps
    # its larger input weight 1).
    got = expand(db_conn, start, max_step=2)
    assert got[k["H"]] == (pytest.approx(1.0), 2)
    assert got[k["D"]] == (pytest.approx(12 / 25), 2)
    assert got[k["A"]] == (pytest.approx(1.0), 1)
    # As an input key, a hub is kept in the result but not expanded: e6 (H only) never counts.
    with_hub = expand(db_conn, {**start, k["H"]: (0.9, 1)}, max_key_events=3)
    assert with_hub == {**expected(k, HOP3), k["H"]: (pytest.approx(0.9), 1)}


def test_sources_are_respected(db_conn: psycopg.Connection, graph: dict[str, int]) -> None:
    k = graph
    start = {k["A"]: (1.0, 1), k["B"]: (0.5, 1)}
    assert expand(db_conn, start, source_ids=[k["source"]], max_key_events=3) == expected(k, HOP3)
    # Searching another source: the input keys are outside it, nothing is returned.
    other = db_conn.execute("insert into sag.sources (name) values ('two') returning id").fetchone()
    assert other is not None
    assert expand(db_conn, start, source_ids=[other[0]], max_key_events=3) == {}


def test_empty_input(db_conn: psycopg.Connection, graph: dict[str, int]) -> None:
    assert expand(db_conn, {}) == {}
    rows = db_conn.execute("select * from sag.expand_keys(%s::vector, null, null, null)", [Q]).fetchall()
    assert rows == []


@pytest.mark.parametrize(
    "args",
    [
        "null, '{1}', '{1}', '{1}'",
        "'[1,0,0]', '{1}', '{1,2}', '{1}'",
        "'[1,0,0]', '{1}', '{1}', '{0}'",
        "'[1,0,0]', '{1}', '{1}', '{1}', max_step => 0",
        "'[1,0,0]', '{1}', '{1}', '{1}', threshold => 2",
        "'[1,0,0]', '{1}', '{1}', '{1}', top_n => 0",
        "'[1,0,0]', '{1}', '{1}', '{1}', min_new_keys => -1",
        "'[1,0,0]', '{1}', '{1}', '{1}', max_key_events => 0",
    ],
)
def test_rejects_bad_parameters(db_conn: psycopg.Connection, args: str) -> None:
    GraphBuilder(db_conn)
    with pytest.raises(psycopg.errors.InvalidParameterValue):
        db_conn.execute(f"select * from sag.expand_keys({args})")

"""Stage 2, the multi-hop loop (sag-algorithm §2.3): sag.expand_keys on a hand-made graph.

Query q = (1, 0, 0).  Events and their similarity to q:
    e1 (1,0,0) 1.0: A, C        e2 (4,3,0) 0.8: A, B, D      e3 (3,4,0) 0.6: B, E
    e4 (0,0,1) 0.0: C, F        e5 (4,0,3) 0.8: C, G         e6 (1,0,0) 1.0: H only
H is also in e1, e2, e3: 4 events, a hub when max_key_events = 3.  Input key-final: A = 1.0, B = 0.5 (step 1).
Each hop's activation is pruned (W >= threshold * max W, top_n) and L1-normalized over the kept keys.

Hop 2, from F = {A: 1, B: 1/2}:
    W_event-key-2: e1 = A = 1; e2 = A + B = 3/2; e3 = B = 1/2
    W_e-jump = W_event-key-2 * sim: e1 = 1; e2 = 3/2 * 4/5 = 6/5; e3 = 1/2 * 3/5 = 3/10
    reverse: A = e1 + e2 = 2.2; B = e2 + e3 = 1.5; C = e1 = 1; D = e2 = 1.2; E = e3 = 0.3   (all >= 0.22)
    L1 / 6.2:  A 22/62, B 15/62, C 10/62, D 12/62, E 3/62          new: C, D, E -> step 2
Hop 3, from F = {A: 22, B: 15, C: 10, D: 12, E: 3} / 62 (the common factor 1/62 cancels in the L1 norm):
    W_event-key-2: e1 = A + C = 32; e2 = A + B + D = 49; e3 = B + E = 18; e4 = C = 10; e5 = C = 10
    W_e-jump: e1 = 32; e2 = 49 * 0.8 = 39.2; e3 = 18 * 0.6 = 10.8; e4 = 0; e5 = 10 * 0.8 = 8
    reverse: A = 32 + 39.2 = 71.2; B = 39.2 + 10.8 = 50; C = 32 + 0 + 8 = 40; D = 39.2; E = 10.8; G = 8
             (F's only event weighs 0: F gets nothing); all >= 7.12
    L1 / 219.2:  A 71.2/219.2, B 50/219.2, C 40/219.2, D 39.2/219.2, E 10.8/219.2, G 8/219.2   new: G -> step 3
Accumulated (first step, largest weight):
    A max(1, 22/62, 71.2/219.2) = 1 (1)          B max(0.5, 15/62, 50/219.2) = 0.5 (1)
    C max(10/62 = 0.1613, 40/219.2 = 0.1825) = 40/219.2 (2)
    D max(12/62 = 0.1935, 39.2/219.2 = 0.1788) = 12/62 (2)
    E max(3/62 = 0.0484, 10.8/219.2 = 0.0493) = 10.8/219.2 (2)          G 8/219.2 (3)
"""

from __future__ import annotations

import psycopg
import pytest

from tests.sql.graph_builder import GraphBuilder, vec

Q = vec((1, 0, 0))

HOP2 = {"A": (1.0, 1), "B": (0.5, 1), "C": (10 / 62, 2), "D": (12 / 62, 2), "E": (3 / 62, 2)}
HOP3 = {"A": (1.0, 1), "B": (0.5, 1), "C": (40 / 219.2, 2), "D": (12 / 62, 2), "E": (10.8 / 219.2, 2),
        "G": (8 / 219.2, 3)}


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
    # A 1, B 0.5, D 0.1935, C 0.1825, E 0.0493, G 0.0365
    assert [r[0] for r in rows] == [k[n] for n in "ABDCEG"]


def test_stops_when_too_few_new_keys(db_conn: psycopg.Connection, graph: dict[str, int]) -> None:
    k = graph
    start = {k["A"]: (1.0, 1), k["B"]: (0.5, 1)}
    # Hop 2 brings 3 new keys (C, D, E): fewer than 4, so hop 3 does not run.
    assert expand(db_conn, start, max_key_events=3, min_new_keys=4) == expected(k, HOP2)
    assert expand(db_conn, start, max_key_events=3, min_new_keys=3) == expected(k, HOP3)


def test_pruning_applies_at_every_hop(db_conn: psycopg.Connection, graph: dict[str, int]) -> None:
    k = graph
    start = {k["A"]: (1.0, 1), k["B"]: (0.5, 1)}
    # threshold 0.2: hop 2 keeps W >= 0.2 * 2.2 = 0.44: A 2.2, B 1.5, C 1, D 1.2 (E = 0.3 is pruned);
    #   L1 / 5.9: A 22/59, B 15/59, C 10/59, D 12/59.  New: C, D.
    # Hop 3 from F = {A: 22, B: 15, C: 10, D: 12} / 59 (no E):
    #   W_event-key-2: e1 = A + C = 32; e2 = A + B + D = 49; e3 = B = 15; e4 = C = 10; e5 = C = 10
    #   W_e-jump: e1 = 32; e2 = 39.2; e3 = 15 * 0.6 = 9; e4 = 0; e5 = 8
    #   A = 71.2; B = 48.2; C = 40; D = 39.2; E = 9; G = 8; >= 0.2 * 71.2 = 14.24 drops E and G
    #   L1 / 198.6: A 71.2/198.6, B 48.2/198.6, C 40/198.6 = 0.2014, D 39.2/198.6 = 0.1974
    # No new key at hop 3; the accumulation keeps the largest weights:
    #   C max(10/59 = 0.1695, 0.2014) = 40/198.6;  D max(12/59 = 0.2034, 0.1974) = 12/59
    got = expand(db_conn, start, max_key_events=3, threshold=0.2)
    assert got == expected(k, {"A": (1.0, 1), "B": (0.5, 1), "C": (40 / 198.6, 2), "D": (12 / 59, 2)})
    # top_n 2: hop 2 keeps A, B (2.2/3.7, 1.5/3.7, below their input weights): nothing new, stop.
    assert expand(db_conn, start, max_key_events=3, top_n=2) == expected(k, {"A": (1.0, 1), "B": (0.5, 1)})


def test_named_keys_are_floored_and_come_back_when_pruned(db_conn: psycopg.Connection,
                                                         graph: dict[str, int]) -> None:
    k = graph
    start = {k["A"]: (1.0, 1), k["B"]: (0.5, 1)}
    # As test_pruning_applies_at_every_hop with threshold 0.2 and top_n 2: only A 1 and B 0.5 remain.  The
    # question names E (pruned at hop 2), F (in no event with a weight: never activated) and B (kept).
    # floor_share 0.5 of the strongest weight 1: B keeps 0.5; E and F come back at 0.5 as step-1 keys,
    # after the others (ordered by their weight before the floor, 0).
    rows = db_conn.execute(
        "select key_id, weight, step from sag.expand_keys(%s::vector, %s, %s, %s, max_key_events => 3, "
        "top_n => 2, floor_key_ids => %s, floor_share => 0.5)",
        [Q, list(start), [1.0, 0.5], [1, 1], [k["E"], k["F"], k["B"]]]).fetchall()
    assert [(r[0], pytest.approx(r[1]), r[2]) for r in rows] == [
        (k["A"], 1.0, 1), (k["B"], 0.5, 1), (k["E"], 0.5, 1), (k["F"], 0.5, 1)]
    # A named hub is not brought back: H has 4 events, above max_key_events 3.
    rows = db_conn.execute(
        "select key_id from sag.expand_keys(%s::vector, %s, %s, %s, max_key_events => 3, top_n => 2, "
        "floor_key_ids => %s, floor_share => 0.5)", [Q, list(start), [1.0, 0.5], [1, 1], [k["H"]]]).fetchall()
    assert [r[0] for r in rows] == [k["A"], k["B"]]


def test_hubs_are_neither_expanded_nor_returned(db_conn: psycopg.Connection, graph: dict[str, int]) -> None:
    k = graph
    start = {k["A"]: (1.0, 1), k["B"]: (0.5, 1)}
    # With the default max_key_events (20), H (4 events) is an ordinary key.  Hop 2: H = e1 + e2 + e3 =
    # 1 + 6/5 + 3/10 = 2.5 is the maximum; L1 over A 2.2, B 1.5, C 1, D 1.2, E 0.3, H 2.5 (sum 8.7):
    # H = 2.5/8.7, D = 1.2/8.7; A keeps its larger input weight 1.
    got = expand(db_conn, start, max_step=2)
    assert got[k["H"]] == (pytest.approx(2.5 / 8.7), 2)
    assert got[k["D"]] == (pytest.approx(1.2 / 8.7), 2)
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


def test_event_filter(db_conn: psycopg.Connection, graph: dict[str, int]) -> None:
    k = graph
    start = {k["A"]: (1.0, 1), k["B"]: (0.5, 1)}
    # e2 not allowed.  Hop 2 from {A: 1, B: 1/2}: e1 = A = 1 (sim 1); e3 = B * 0.6 = 0.3
    #   A = 1; C = 1; B = 0.3; E = 0.3 (H is a hub) -> L1 / 2.6: A 1/2.6, C 1/2.6, B 0.3/2.6, E 0.3/2.6
    # Hop 3 from F = {A: 10, C: 10, B: 3, E: 3} / 26: e1 = A + C = 20 (sim 1); e3 = B + E = 6 * 0.6 = 3.6;
    #   e4 = C * 0 = 0; e5 = C = 10 * 0.8 = 8
    #   A = 20; C = 20 + 8 = 28; B = 3.6; E = 3.6; G = 8 -> all >= 2.8; L1 / 63.2
    #   new: G -> step 3.  Accumulated: A 1, B 0.5, C max(1/2.6 = 0.3846, 28/63.2 = 0.4430) = 28/63.2 (2),
    #   E max(0.3/2.6 = 0.1154, 3.6/63.2 = 0.0570) = 0.3/2.6 (2), G 8/63.2 (3).  D (only in e2) never appears.
    allowed = [e for (e,) in db_conn.execute(
        "select id from sag.events where content <> 'e2' order by id").fetchall()]
    assert expand(db_conn, start, max_key_events=3, event_filter=allowed) == expected(
        k, {"A": (1.0, 1), "B": (0.5, 1), "C": (28 / 63.2, 2), "E": (0.3 / 2.6, 2), "G": (8 / 63.2, 3)})
    # Nothing allowed: the input keys come back unchanged.
    assert expand(db_conn, start, max_key_events=3, event_filter=[]) == expected(k, {"A": (1.0, 1), "B": (0.5, 1)})


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

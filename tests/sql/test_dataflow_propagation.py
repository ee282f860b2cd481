"""DataFlow propagation (seed §6: BFS, depth, breadth, threshold, per-hop decay, no cycles) and the full
sag.dataflow_search on a hand-made graph.

All keys are person keys without embeddings, so per pair: relevance = 0.6 Jaccard + 0.4 (share of the left
event's names the right one holds), match_ratio = 1 when they share a name; score = 0.4 ratio + 0.6 relevance.
    e0 {a, b}   e1 {a, b, c}   e2 {a, d}   e3 {b, c, f}   e4 {c, f, g}   e5 {a, b, g}
Hop 1 from e0 (activation 1), candidates e1 e2 e3 e5:
    e1: J 2/3, 2/2 -> 0.4 + 0.4 = 0.8, score 0.88, activation 1 * 0.8 * 0.88 = 0.704
    e5: the same, 0.704;  e2: J 1/3, 1/2 -> 0.4 < 0.5;  e3: J 1/4, 1/2 -> 0.35 < 0.5
Hop 2 from e1 and e5 (unvisited e2 e3 e4):
    e1 -> e3: J 2/4, 2/3 -> 0.3 + 0.26667 = 0.56667, score 0.74, activation 0.704 * 0.8 * 0.74 = 0.416768
    e1 -> e2: J 1/4, 1/3 -> 0.28333;  e1 -> e4: J 1/5, 1/3 -> 0.25333;  e5 -> e2, e3, e4: 0.28333, 0.25333, 0.25333
Hop 3 from e3: e4: J 2/4, 2/3 -> 0.56667, score 0.74, activation 0.416768 * 0.8 * 0.74 = 0.24672666
"""

from __future__ import annotations

import math

import psycopg
import pytest

from tests.sql.graph_builder import GraphBuilder

EVENTS = {"e0": "ab", "e1": "abc", "e2": "ad", "e3": "bcf", "e4": "cfg", "e5": "abg"}
FULL = {"e0": (0, 1.0), "e1": (1, 0.704), "e5": (1, 0.704), "e3": (2, 0.416768), "e4": (3, 0.24672666)}


@pytest.fixture
def graph(db_conn: psycopg.Connection) -> dict[str, int]:
    g = GraphBuilder(db_conn)
    s = g.source("one")
    doc = g.document(s, "doc")
    ids: dict[str, int] = {"source": s}
    for name in "abcdfg":
        ids[name] = g.key(s, name, None, type="person")
    for name, keys in EVENTS.items():
        # e0 alone is aligned with the query (1, 0, 0); every event has a chunk of its own, in order.
        ids[name] = g.event(g.chunk(doc, name, (1, 0, 0)), name, (1, 0, 0) if name == "e0" else (0, 1, 0))
        g.links(ids[name], *(ids[k] for k in keys))
    return ids


def propagate(conn: psycopg.Connection, ids: dict[str, int], **kw: object) -> dict[str, tuple[int, float]]:
    named = "".join(f", {name} => %({name})s" for name in kw)
    rows = conn.execute(f"select event_id, hop, activation from sag.dataflow_propagate(%(seeds)s, %(act)s{named})",
                        {"seeds": [ids["e0"]], "act": [1.0], **kw}).fetchall()
    names = {v: k for k, v in ids.items() if k.startswith("e")}
    return {names[e]: (h, a) for e, h, a in rows}


def expected(table: dict[str, tuple[int, float]]) -> dict[str, tuple[int, object]]:
    return {name: (hop, pytest.approx(act, abs=1e-6)) for name, (hop, act) in table.items()}


def test_breadth_first_with_decay(db_conn: psycopg.Connection, graph: dict[str, int]) -> None:
    assert propagate(db_conn, graph) == expected(FULL)
    # e0 is never reached again (no cycles), each event appears once.
    assert propagate(db_conn, graph, depth=2) == expected({k: v for k, v in FULL.items() if k != "e4"})
    assert propagate(db_conn, graph, depth=0) == expected({"e0": (0, 1.0)})


def test_breadth_threshold_and_decay_limits(db_conn: psycopg.Connection, graph: dict[str, int]) -> None:
    # breadth 1: hop 1 keeps e1 (ties with e5 at 0.88: the lower id); hop 2 from e1: e3 and e5 tie at 0.74
    # (e1 -> e5: J 2/4, 2/3), e3 kept; hop 3 from e3: e4.  e5 is never kept.
    assert propagate(db_conn, graph, breadth=1) == expected({k: v for k, v in FULL.items() if k != "e5"})
    # threshold 0.6: hop 2's best relevance is 0.56667: the walk stops after hop 1.
    assert propagate(db_conn, graph, threshold=0.6) == expected({k: FULL[k] for k in ("e0", "e1", "e5")})
    # decay 0.5: e1 = 0.5 * 0.88 = 0.44; e3 = 0.44 * 0.5 * 0.74 = 0.1628; e4 = 0.1628 * 0.37 = 0.060236
    assert propagate(db_conn, graph, decay=0.5) == expected(
        {"e0": (0, 1.0), "e1": (1, 0.44), "e5": (1, 0.44), "e3": (2, 0.1628), "e4": (3, 0.060236)})
    # max_frontier 1: hop 1 keeps e1 only; e5 stays unvisited and ties with e3 from e1 (0.74): e3 (lower id).
    assert propagate(db_conn, graph, max_frontier=1) == expected({k: v for k, v in FULL.items() if k != "e5"})


def test_hub_keys_do_not_propagate(db_conn: psycopg.Connection, graph: dict[str, int]) -> None:
    # a and b have 4 events each: with max_key_events 3 e0 {a, b} reaches nothing.
    assert propagate(db_conn, graph, max_key_events=3) == expected({"e0": (0, 1.0)})


def test_dataflow_search_scores_and_trail(db_conn: psycopg.Connection, graph: dict[str, int]) -> None:
    ids = graph
    row = db_conn.execute(
        "select sag.dataflow_search(query => 'zzz', query_embedding => '[1,0,0]'::vector, "
        "entity_names => array['a', 'b'], entity_types => array['person', 'person'], top_n => 3, "
        "use_terms => false, key_match_top_k => 0)").fetchone()
    assert row is not None
    out = row[0]
    assert {e["name"] for e in out["entities"]} == {"a", "b"}
    assert all(e["origin"] == "caller" for e in out["entities"])
    # Structured list: the entity set {a, b} matched like e0 -> x: e0 1 (score 1), e1 and e5 0.88, e2 0.4 + 0.6
    # * 0.4 = 0.64, e3 0.4 + 0.6 * 0.35 = 0.61; e4 holds neither a nor b.
    assert [s["event_id"] for s in out["structured"]] == [ids[n] for n in ("e0", "e1", "e5", "e2", "e3")]
    assert [s["score"] for s in out["structured"]] == pytest.approx([1, 0.88, 0.88, 0.64, 0.61], abs=1e-6)
    # Initial events: RRF of that list and the vector list (e0 first in both), top 2 * top_n = 6.
    assert out["initial"][0]["event_id"] == ids["e0"]
    assert out["initial"][0]["rrf"] == pytest.approx(0.5 / 61 + 0.5 / 61)
    assert out["initial"][0]["activation"] == pytest.approx(1.0)
    # The four factors of e0: relevance (its activation) 1, similarity 1, time decay 1 (no time of its own:
    # ingested today), preference 0.5 (no focus).  The seed's weights by default (issue 34.3), even though no
    # calibration makes the lexical redundancy count as 1 while BM25 is fused: 0.3 + 0.3 + 0.2 + 0.1 = 0.9.
    best = out["events"][0]
    assert best["event_id"] == ids["e0"]
    assert (best["relevance"], best["similarity"], best["time_decay"], best["preference"]) == \
        pytest.approx((1, 1, 1, 0.5), abs=1e-6)
    assert out["lexical_redundancy"] == pytest.approx(1)
    assert out["score_weights"] == pytest.approx([0.3, 0.3, 0.2, 0.2])
    assert best["score"] == pytest.approx(0.9, abs=1e-6)
    assert out["hops"][0]["hop"] == 0
    assert {"entities", "structured", "vector", "initial", "hops", "events", "chunks", "timings_ms"} <= set(out)


def best_score(conn: psycopg.Connection, **kw: object) -> float:
    named = "".join(f", {name} => %({name})s" for name in kw)
    row = conn.execute("select sag.dataflow_search(query => 'zzz', query_embedding => '[1,0,0]'::vector, "
                       "entity_names => array['a', 'b'], entity_types => array['person', 'person'], top_n => 3, "
                       f"use_terms => false, key_match_top_k => 0{named})", kw).fetchone()
    assert row is not None
    return float(row[0]["events"][0]["score"])


def test_dataflow_search_vector_weight_follows_lexical_redundancy(db_conn: psycopg.Connection,
                                                                  graph: dict[str, int]) -> None:
    # e0 as above: relevance 1, similarity 1, time decay 1, preference 0.5.  A calibration saying the
    # embedder's cosine is 0.2 words: with lexical_discount the vector weight is 0.3 * (1 - 0.2) = 0.24:
    # 0.3 + 0.24 + 0.2 + 0.1 = 0.84.
    db_conn.execute("insert into sag.settings (name, value) values ('similarity_floors', %s::jsonb) "
                    "on conflict (name) do update set value = excluded.value",
                    [f'{{"{graph["source"]}": {{"chunk": 0, "event": 0, "key": 0, "lexical": 0.2}}}}'])
    assert best_score(db_conn, lexical_discount=True) == pytest.approx(0.84, abs=1e-6)
    # The seed's weights: 0.3 + 0.3 + 0.2 + 0.1 = 0.9, by default, or without BM25 fused.
    assert best_score(db_conn) == pytest.approx(0.9, abs=1e-6)
    assert best_score(db_conn, lexical_discount=True, text_weight=0.0) == pytest.approx(0.9, abs=1e-6)


def test_time_decay_from_the_events_own_time(db_conn: psycopg.Connection, graph: dict[str, int]) -> None:
    """Issue 34.3: an event's time decays from its own time where it has one: its event_time, else the latest
    year of its time keys; else its ingest time.  now_at 2020-04-10 is 100 days after 2020-01-01."""
    g = GraphBuilder.__new__(GraphBuilder)
    g.conn = db_conn
    ids = graph
    g.links(ids["e1"], g.key(ids["source"], "2019", None, type="time", number=2019),
            g.key(ids["source"], "2020", None, type="time", number=2020))  # the latest year: 2020-01-01
    db_conn.execute("update sag.events set event_time = '2020-03-01 UTC' where id = %s", [ids["e5"]])  # 40 days

    def decays(**kw: object) -> dict[str, float]:
        named = "".join(f", {name} => %({name})s" for name in kw)
        row = db_conn.execute(
            "select sag.dataflow_search(query => 'zzz', query_embedding => '[1,0,0]'::vector, entity_names => "
            "array['a', 'b'], entity_types => array['person', 'person'], top_n => 3, use_terms => false, "
            f"key_match_top_k => 0, now_at => '2020-04-10 UTC'::timestamptz{named})", kw).fetchone()
        assert row is not None
        names = {v: k for k, v in ids.items() if k.startswith("e")}
        return {names[e["event_id"]]: e["time_decay"] for e in row[0]["events"]}

    # 'event': the own time, else the ingest time (now: 1).
    found = decays(time_basis="event")
    assert found["e1"] == pytest.approx(math.exp(-1.0))   # e^(-0.01 * 100)
    assert found["e5"] == pytest.approx(math.exp(-0.4))   # e^(-0.01 * 40)
    assert found["e0"] == 1.0                             # ingested now (after now_at): 1
    assert set(decays(time_basis="ingest").values()) == {1.0}
    # 'own', the default: the undated events get the median of the dated ones' decays, (e^-1 + e^-0.4) / 2.
    own = decays()
    assert (own["e1"], own["e5"]) == pytest.approx((math.exp(-1.0), math.exp(-0.4)))
    assert own["e0"] == pytest.approx((math.exp(-1.0) + math.exp(-0.4)) / 2)


def test_time_decay_preference_score_and_rrf(db_conn: psycopg.Connection, graph: dict[str, int]) -> None:
    one = lambda sql, *args: db_conn.execute(sql, list(args)).fetchone()[0]
    # e^(-0.01 * 100): whole days, so 100.9 days count as 100; a time in the future counts as now.
    assert one("select sag.dataflow_time_decay(now() - interval '100 days 21 hours')") == pytest.approx(math.exp(-1))
    assert one("select sag.dataflow_time_decay(now() + interval '3 days')") == 1.0
    assert one("select sag.dataflow_time_decay(now() - interval '10 days', now(), 0.1)") == pytest.approx(math.exp(-1))
    # 0.3 * 0.5 + 0.3 * 0.8 + 0.2 * 1 + 0.2 * 0.5 = 0.69
    assert one("select sag.dataflow_score(0.5, 0.8, 1, 0.5)") == pytest.approx(0.69)
    assert one("select sag.dataflow_score(0.5, 0.8, 1, 0.5, array[1, 0, 0, 0]::float8[])") == pytest.approx(0.5)
    # The vector weight without the embedder's lexical part when BM25 is fused (text_weight > 0):
    # 0.3 * (1 - 0.25) = 0.225; r 1 (the hash embedder), NULL (unknown) and 1.5 (clamped to 1): 0;
    # text_weight 0: the weights as given.
    weights = lambda *args: one("select sag.dataflow_score_weights('{0.3,0.3,0.2,0.2}', %s, %s)", *args)
    assert weights(0.25, 0.5) == pytest.approx([0.3, 0.225, 0.2, 0.2])
    assert weights(1.0, 0.5) == weights(None, 0.5) == weights(1.5, 0.5) == pytest.approx([0.3, 0, 0.2, 0.2])
    assert weights(-0.5, 0.5) == weights(0.25, 0.0) == pytest.approx([0.3, 0.3, 0.2, 0.2])
    # RRF, weights 0.7 / 0.3, k 60, lists [1, 2, 3] and [3, 4]:
    #   1: 0.7/61 = 0.011475;  2: 0.7/62 = 0.011290;  3: 0.7/63 + 0.3/61 = 0.016029;  4: 0.3/62 = 0.004839
    rows = db_conn.execute("select id, score, first_rank, second_rank "
                           "from sag.dataflow_rrf(array[1, 2, 3]::bigint[], array[3, 4]::bigint[], 0.7, 0.3)").fetchall()
    assert [r[0] for r in rows] == [3, 1, 2, 4]
    assert [r[1] for r in rows] == pytest.approx([0.7 / 63 + 0.3 / 61, 0.7 / 61, 0.7 / 62, 0.3 / 62])
    assert [(r[2], r[3]) for r in rows] == [(3, 1), (1, None), (2, None), (None, 2)]
    # Preference: a topic key 战役 and a tag key 三国 on e0.
    g = GraphBuilder.__new__(GraphBuilder)
    g.conn = db_conn
    topic = g.key(graph["source"], "战役", None, type="topic")
    tag = g.key(graph["source"], "三国", None, type="tag")
    g.links(graph["e0"], topic, tag)
    pref = lambda focus: one("select sag.dataflow_preference(%s, %s)", graph["e0"], focus)
    assert (pref(["战役"]), pref(["三国"]), pref(["战役", "三国"]), pref(["x"]), pref([])) == \
        pytest.approx((0.8, 0.7, 1.0, 0.5, 0.5))


def test_chunk_recall_and_completion(db_conn: psycopg.Connection) -> None:
    g = GraphBuilder(db_conn)
    s = g.source("one")
    d, e = g.document(s, "D"), g.document(s, "E")
    dc = [g.chunk(d, f"D{i}", (1, 0, 0)) for i in range(6)]
    ec = g.chunk(e, "E0", (1, 0, 0))
    ev = {name: g.event(c, name, (1, 0, 0)) for name, c in (("D0", dc[0]), ("D2", dc[2]), ("D5", dc[5]), ("E0", ec))}
    scores = {"D0": 0.9, "D2": 0.5, "D5": 0.7, "E0": 0.8}

    def chunks(top_n: int, max_gap: int) -> list[tuple[int, float, bool]]:
        rows = db_conn.execute(
            "select chunk_id, score, completed from sag.dataflow_chunks(%s, %s, %s, %s) order by reading_order",
            [[ev[n] for n in scores], list(scores.values()), top_n, max_gap]).fetchall()
        return [(r[0], pytest.approx(r[1]), r[2]) for r in rows]

    # Recalled D0 0.9, E0 0.8, D5 0.7, D2 0.5.  D0 and D2 are one chunk apart: D1 filled in, scored
    # min(0.9, 0.5); D2 and D5 are two apart (> max_gap 1).  Document D (best 0.9) first, in reading order.
    assert chunks(4, 1) == [(dc[0], 0.9, False), (dc[1], 0.5, True), (dc[2], 0.5, False), (dc[5], 0.7, False),
                            (ec, 0.8, False)]
    assert chunks(4, 2) == [(dc[0], 0.9, False), (dc[1], 0.5, True), (dc[2], 0.5, False), (dc[3], 0.5, True),
                            (dc[4], 0.5, True), (dc[5], 0.7, False), (ec, 0.8, False)]
    assert chunks(4, 0) == [(dc[0], 0.9, False), (dc[2], 0.5, False), (dc[5], 0.7, False), (ec, 0.8, False)]
    # top_n 2: D0 and E0 only, nothing between them to fill.
    assert chunks(2, 1) == [(dc[0], 0.9, False), (ec, 0.8, False)]

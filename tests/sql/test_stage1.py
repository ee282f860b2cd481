"""Stage 1 (sag-algorithm §2.2): sag.match_keys and sag.activate_keys on hand-made graphs.

Every expected number below was worked out by hand from the formulas; the arithmetic is in the comments.
Query q = (1, 0, 0); cosines with q: (1,0,0) -> 1, (4,3,0) -> 0.8, (3,4,0) -> 0.6, (4,0,3) -> 0.8,
(0,1,0) -> 0, (7,24,0) -> 0.28.  Activations are L1-normalized: the weights of one call sum to 1.
"""

from __future__ import annotations

import psycopg
import pytest

from tests.sql.graph_builder import GraphBuilder, vec

Q = vec((1, 0, 0))


def activate(conn: psycopg.Connection, seeds: dict[int, float], **kw: object) -> list[tuple[int, float, int]]:
    named = "".join(f", {k} => %({k})s" for k in kw)
    rows = conn.execute(
        f"select key_id, weight, step from sag.activate_keys(%(q)s::vector, %(ids)s, %(w)s{named})",
        {"q": Q, "ids": list(seeds), "w": list(seeds.values()), **kw},
    ).fetchall()
    return [(r[0], r[1], r[2]) for r in rows]


def approx(rows: list[tuple[int, float, int]]) -> list[tuple[int, object, int]]:
    return [(k, pytest.approx(w, abs=1e-9), s) for k, w, s in rows]


# ---------------------------------------------------------------------------------------------------------
# match_keys


def test_match_keys_orders_by_similarity_and_filters(db_conn: psycopg.Connection) -> None:
    g = GraphBuilder(db_conn)
    s1, s2 = g.source("one"), g.source("two")
    k1 = g.key(s1, "k1", (1, 0, 0))      # similarity 1
    k2 = g.key(s1, "k2", (4, 3, 0))      # 0.8
    k3 = g.key(s1, "k3", (3, 4, 0))      # 0.6
    g.key(s1, "k4", (0, 1, 0))           # 0: below min_similarity 0.2
    g.key(s1, "k5", (-1, 0, 0))          # cosine -1, clamped to 0
    g.key(s1, "1999", number=1999)       # numeric keys have no embedding
    k7 = g.key(s2, "k7", (1, 0, 0))      # 1, but in source two

    rows = db_conn.execute("select key_id, similarity from sag.match_keys(%s::vector)", [Q]).fetchall()
    assert [(k, pytest.approx(s)) for k, s in rows] == [(k1, 1.0), (k7, 1.0), (k2, 0.8), (k3, 0.6)]

    rows = db_conn.execute("select key_id, similarity from sag.match_keys(%s::vector, %s)", [Q, [s1]]).fetchall()
    assert [(k, pytest.approx(s)) for k, s in rows] == [(k1, 1.0), (k2, 0.8), (k3, 0.6)]

    rows = db_conn.execute("select key_id from sag.match_keys(%s::vector, %s, top_k => 2)", [Q, [s1]]).fetchall()
    assert [r[0] for r in rows] == [k1, k2]
    rows = db_conn.execute("select key_id from sag.match_keys(%s::vector, %s, min_similarity => 0.7)",
                           [Q, [s1]]).fetchall()
    assert [r[0] for r in rows] == [k1, k2]
    # The default min_similarity is 0.45: k3 (0.6) stays, a key at 0.28 would not.
    g.key(s1, "k8", (7, 24, 0))          # 0.28
    rows = db_conn.execute("select key_id from sag.match_keys(%s::vector, %s)", [Q, [s1]]).fetchall()
    assert [r[0] for r in rows] == [k1, k2, k3]
    # A zero query vector has no cosine with anything: nothing matches.
    assert db_conn.execute("select count(*) from sag.match_keys('[0,0,0]'::vector)").fetchone() == (0,)


@pytest.mark.parametrize(
    "call",
    [
        "select * from sag.match_keys(null)",
        "select * from sag.match_keys('[1,0,0]', top_k => 0)",
        "select * from sag.match_keys('[1,0,0]', min_similarity => null)",
    ],
)
def test_match_keys_rejects_bad_parameters(db_conn: psycopg.Connection, call: str) -> None:
    GraphBuilder(db_conn)
    with pytest.raises(psycopg.errors.InvalidParameterValue):
        db_conn.execute(call)


def test_hnsw_settings_do_not_leak(db_conn: psycopg.Connection) -> None:
    """ef_search / iterative_scan are set inside the functions and restored when they return."""
    g = GraphBuilder(db_conn)
    g.key(g.source("one"), "k1", (1, 0, 0))
    db_conn.execute("set hnsw.ef_search = 17")
    db_conn.execute("select * from sag.match_keys(%s::vector, top_k => 300)", [Q]).fetchall()
    assert db_conn.execute("select current_setting('hnsw.ef_search')").fetchone() == ("17",)
    assert db_conn.execute("select current_setting('hnsw.iterative_scan')").fetchone() == ("off",)


def test_a_source_filter_does_not_starve_the_hnsw_search(db_conn: psycopg.Connection) -> None:
    """A source filter that removes rows keeps the iterative scan going past ef_search (40) until enough rows
    pass (hnsw.iterative_scan in sag_internal._nearest_*); without a filter, or with every source listed, the
    same nearest rows."""
    g = GraphBuilder(db_conn)
    near, far = g.source("near"), g.source("far")
    close = [g.key(near, f"n{i}", (1, 0.01 * i, 0)) for i in range(120)]   # all nearer q than any of far's
    distant = [g.key(far, f"f{i}", (0.2, 1, 0.1 * i)) for i in range(3)]

    def nearest(sources: list[int] | None) -> list[int]:
        rows = db_conn.execute("select key_id from sag_internal._nearest_keys(%s::vector, %s, 3)",
                               [Q, sources]).fetchall()
        return sorted(r[0] for r in rows)

    assert db_conn.execute("select count(*) from pg_indexes where indexname = 'keys_embedding_hnsw'").fetchone() == (1,)
    assert nearest([far]) == sorted(distant)        # 120 nearer rows filtered out, not an empty answer
    assert nearest(None) == close[:3]
    assert nearest([near, far]) == close[:3]


# ---------------------------------------------------------------------------------------------------------
# activate_keys


def stage1_graph(g: GraphBuilder) -> dict[str, int]:
    """Seeds A and B; C, D, E reached through the events; e5 only through hub H."""
    s = g.source("one")
    c = g.chunk(g.document(s, "doc"), "text", (1, 0, 0))
    k = {name: g.key(s, name) for name in "ABCDEH"}
    e1 = g.event(c, "e1", (1, 0, 0))   # e1 = 1.0
    e2 = g.event(c, "e2", (4, 3, 0))   # e1 = 0.8
    e3 = g.event(c, "e3", (3, 4, 0))   # e1 = 0.6
    e4 = g.event(c, "e4", (0, 1, 0))   # e1 = 0
    e5 = g.event(c, "e5", (1, 0, 0))   # e1 = 1.0, but holds no seed key (except hub H)
    g.links(e1, k["A"], k["C"], k["H"])
    g.links(e2, k["A"], k["B"], k["D"], k["H"])
    g.links(e3, k["B"], k["E"], k["H"])
    g.links(e4, k["B"], k["C"])
    g.links(e5, k["D"], k["E"], k["H"])   # H: 4 events
    k["source"] = s
    return k


def test_activate_keys_formulas(db_conn: psycopg.Connection) -> None:
    k = stage1_graph(GraphBuilder(db_conn))
    # Seeds k1: A = 0.5, B = 1.0.  H (4 events) is a hub for max_key_events = 3.
    # Intersection of the seed keys' events {e1, e2, e3, e4} with the query's events (all five): e1..e4.
    #   W_event-key: e1 = A = 0.5; e2 = A + B = 1.5; e3 = B = 1.0; e4 = B = 1.0
    #   W_e2 = W_event-key * e1: e1 = 0.5 * 1 = 0.5; e2 = 1.5 * 0.8 = 1.2; e3 = 1.0 * 0.6 = 0.6; e4 = 1.0 * 0 = 0
    # Reverse activation over all keys of those events:
    #   A = e1 + e2 = 1.7; B = e2 + e3 = 1.8; C = e1 + e4 = 0.5; D = e2 = 1.2; E = e3 = 0.6 (e5 is not in it)
    #   (H = e1 + e2 + e3 = 2.3 would be the maximum, but hubs never enter)
    # All >= 0.1 * 1.8; L1: / (1.7 + 1.8 + 0.5 + 1.2 + 0.6 = 5.8): B 1.8/5.8, A 1.7/5.8, D 1.2/5.8, E 0.6/5.8, C 0.5/5.8
    expected = [(k["B"], 1.8 / 5.8, 1), (k["A"], 1.7 / 5.8, 1), (k["D"], 1.2 / 5.8, 1), (k["E"], 0.6 / 5.8, 1),
                (k["C"], 0.5 / 5.8, 1)]
    got = activate(db_conn, {k["A"]: 0.5, k["B"]: 1.0}, max_key_events=3)
    assert got == approx(expected)
    assert sum(w for _, w, _ in got) == pytest.approx(1.0)
    # Pruning: W >= 0.3 * 1.8 = 0.54 drops C (0.5); the other four are normalized among themselves:
    #   / (1.8 + 1.7 + 1.2 + 0.6 = 5.3)
    assert activate(db_conn, {k["A"]: 0.5, k["B"]: 1.0}, max_key_events=3, threshold=0.3) == approx(
        [(k["B"], 1.8 / 5.3, 1), (k["A"], 1.7 / 5.3, 1), (k["D"], 1.2 / 5.3, 1), (k["E"], 0.6 / 5.3, 1)])
    # top_n 3: B, A, D, / (1.8 + 1.7 + 1.2 = 4.7)
    assert activate(db_conn, {k["A"]: 0.5, k["B"]: 1.0}, max_key_events=3, top_n=3) == approx(
        [(k["B"], 1.8 / 4.7, 1), (k["A"], 1.7 / 4.7, 1), (k["D"], 1.2 / 4.7, 1)])


def test_activate_keys_hub_seed_is_not_expanded(db_conn: psycopg.Connection) -> None:
    k = stage1_graph(GraphBuilder(db_conn))
    # H as a seed: with max_key_events = 3 it is a hub, so e5 (reachable only through H) stays out and the
    # result is exactly the one without H.
    hub = activate(db_conn, {k["A"]: 0.5, k["B"]: 1.0, k["H"]: 1.0}, max_key_events=3)
    assert hub == activate(db_conn, {k["A"]: 0.5, k["B"]: 1.0}, max_key_events=3)
    # With max_key_events = 4, H is an ordinary seed:
    #   W_event-key: e1 = A + H = 1.5; e2 = A + B + H = 2.5; e3 = B + H = 2.0; e4 = B = 1.0; e5 = H = 1.0
    #   W_e2: e1 = 1.5; e2 = 2.5 * 0.8 = 2.0; e3 = 2.0 * 0.6 = 1.2; e4 = 0; e5 = 1.0
    #   A = 1.5 + 2.0 = 3.5; B = 2.0 + 1.2 = 3.2; C = 1.5; D = 2.0 + 1.0 = 3.0; E = 1.2 + 1.0 = 2.2;
    #   H = 1.5 + 2.0 + 1.2 + 1.0 = 5.7 -> L1: / (3.5 + 3.2 + 1.5 + 3.0 + 2.2 + 5.7 = 19.1)
    expected = [(k["H"], 5.7 / 19.1, 1), (k["A"], 3.5 / 19.1, 1), (k["B"], 3.2 / 19.1, 1), (k["D"], 3.0 / 19.1, 1),
                (k["E"], 2.2 / 19.1, 1), (k["C"], 1.5 / 19.1, 1)]
    assert activate(db_conn, {k["A"]: 0.5, k["B"]: 1.0, k["H"]: 1.0}, max_key_events=4) == approx(expected)
    # The default hub limit is 20 events: H is ordinary there too.
    assert activate(db_conn, {k["A"]: 0.5, k["B"]: 1.0, k["H"]: 1.0}) == approx(expected)


def test_activate_keys_merges_duplicate_seeds_and_ignores_unknown(db_conn: psycopg.Connection) -> None:
    k = stage1_graph(GraphBuilder(db_conn))
    # A twice (largest weight kept), an unknown key id: same as {A: 0.5, B: 1.0}.
    rows = db_conn.execute(
        "select key_id, weight, step from sag.activate_keys(%s::vector, %s, %s, max_key_events => 3)",
        [Q, [k["A"], k["A"], k["B"], 999_999], [0.2, 0.5, 1.0, 1.0]],
    ).fetchall()
    assert rows == activate(db_conn, {k["A"]: 0.5, k["B"]: 1.0}, max_key_events=3)


def fallback_graph(g: GraphBuilder) -> dict[str, int]:
    s = g.source("one")
    c = g.chunk(g.document(s, "doc"), "text", (1, 0, 0))
    k = {name: g.key(s, name) for name in ("A", "C", "D", "X", "Y", "Z")}
    hi1 = g.event(c, "hi1", (1, 0, 0))    # 1.0
    hi2 = g.event(c, "hi2", (4, 0, 3))    # 0.8
    s1 = g.event(c, "s1", (3, 4, 0))      # 0.6
    s3 = g.event(c, "s3", (7, 24, 0))     # 0.28
    z = g.event(c, "z", (0, 1, 0))        # 0
    g.links(hi1, k["X"])
    g.links(hi2, k["X"], k["Y"])
    g.links(s1, k["A"], k["C"])
    g.links(s3, k["A"], k["D"])
    g.links(z, k["Z"])
    return k


def test_activate_keys_empty_intersection_scores_seed_events_exactly(db_conn: psycopg.Connection) -> None:
    k = fallback_graph(GraphBuilder(db_conn))
    # event_limit 2: the query's events are hi1 and hi2; seed A's events are s1 and s3 -> no intersection.
    # Fallback: A's events with their exact similarity: W_e2(s1) = 0.5 * 0.6 = 0.3; W_e2(s3) = 0.5 * 0.28 = 0.14
    #   A = 0.3 + 0.14 = 0.44; C = 0.3; D = 0.14 -> L1: / (0.44 + 0.3 + 0.14 = 0.88)
    expected = [(k["A"], 0.5, 1), (k["C"], 0.3 / 0.88, 1), (k["D"], 0.14 / 0.88, 1)]
    assert activate(db_conn, {k["A"]: 0.5}, event_limit=2) == approx(expected)


def test_activate_keys_without_seed_events_is_event_driven(db_conn: psycopg.Connection) -> None:
    k = fallback_graph(GraphBuilder(db_conn))
    # No seeds: the query's events hi1 (1.0) and hi2 (0.8) with W_event-key = 1:
    #   X = 1.0 + 0.8 = 1.8; Y = 0.8 -> L1: / 2.6
    expected = [(k["X"], 1.8 / 2.6, 1), (k["Y"], 0.8 / 2.6, 1)]
    assert activate(db_conn, {}, event_limit=2) == approx(expected)
    # A seed whose only event is orthogonal to the query (W_e2 = 0 everywhere) falls back the same way.
    assert activate(db_conn, {k["Z"]: 1.0}, event_limit=2) == approx(expected)
    # NULL arrays mean no seeds too.
    rows = db_conn.execute("select key_id from sag.activate_keys(%s::vector, null, null, event_limit => 2)",
                           [Q]).fetchall()
    assert [r[0] for r in rows] == [k["X"], k["Y"]]


def test_activate_keys_stays_inside_sources(db_conn: psycopg.Connection) -> None:
    g = GraphBuilder(db_conn)
    one = stage1_graph(g)
    s2 = g.source("two")
    c2 = g.chunk(g.document(s2, "doc"), "text", (1, 0, 0))
    a2, x2 = g.key(s2, "A"), g.key(s2, "X")
    e = g.event(c2, "e", (1, 0, 0))
    g.links(e, a2, x2)
    seeds = {one["A"]: 0.5, one["B"]: 1.0, a2: 1.0}
    only_one = activate(db_conn, seeds, source_ids=[one["source"]], max_key_events=3)
    # Source two's seed, events and keys play no part: the same numbers as test_activate_keys_formulas.
    assert only_one == activate(db_conn, {one["A"]: 0.5, one["B"]: 1.0}, max_key_events=3)
    only_two = activate(db_conn, seeds, source_ids=[s2])
    # e: W_e2 = 1.0 * 1.0; A and X get 1.0 each -> 0.5 each.
    assert only_two == approx([(a2, 0.5, 1), (x2, 0.5, 1)])


# ---------------------------------------------------------------------------------------------------------
# activate_keys with the query's chunks: BM25 events in e1 and pseudo-relevance feedback


def chunk_graph(g: GraphBuilder) -> dict[str, int]:
    """Three chunks; the query's chunks (as sag.query_chunks would give them) are c1 and c2.

        c1: e1 (1,0,0) cos 1: A, B      e2 (0,1,0) cos 0: B, C
        c2: e3 (3,4,0) cos 0.6: C, D
        c3: e4 (4,3,0) cos 0.8: A, E
    """
    s = g.source("one")
    doc = g.document(s, "doc")
    c1, c2, c3 = (g.chunk(doc, f"chunk {i}", (1, 0, 0)) for i in (1, 2, 3))
    k = {name: g.key(s, name) for name in "ABCDE"}
    e = {"e1": g.event(c1, "e1", (1, 0, 0)), "e2": g.event(c1, "e2", (0, 1, 0)),
         "e3": g.event(c2, "e3", (3, 4, 0)), "e4": g.event(c3, "e4", (4, 3, 0))}
    g.links(e["e1"], k["A"], k["B"])
    g.links(e["e2"], k["B"], k["C"])
    g.links(e["e3"], k["C"], k["D"])
    g.links(e["e4"], k["A"], k["E"])
    return {**k, **e, "c1": c1, "c2": c2, "c3": c3}


def test_activate_keys_with_query_chunks(db_conn: psycopg.Connection) -> None:
    k = chunk_graph(GraphBuilder(db_conn))
    # The query's chunks: c1 (similarity 0.6, text_score 1.0), c2 (0.8, 0.5); text_weight 0.5:
    #   s(c1) = 0.5 * 0.6 + 0.5 * 1.0 = 0.8;  s(c2) = 0.5 * 0.8 + 0.5 * 0.5 = 0.65
    # Feedback (1 chunk): c1, the highest s: its keys A, B, C become seeds with k1 = 0.8; given seed D = 0.5.
    # e1 events: the 1 nearest event (e1, cos 1) and the events of the BM25 chunks (text_score > 0): e2, e3.
    #   e1 of an event = 0.5 * cos + 0.5 * text_score of its chunk:
    #   e1: 0.5 * 1 + 0.5 * 1.0 = 1.0;  e2: 0.5 * 0 + 0.5 * 1.0 = 0.5 (cos computed exactly);
    #   e3: 0.5 * 0.6 + 0.5 * 0.5 = 0.55 (cos computed exactly)
    # Seed events: A: e1, e4; B: e1, e2; C: e2, e3; D: e3 -> W_event-key: e1 = 1.6, e2 = 1.6, e3 = 1.3, e4 = 0.8;
    # e4 is not among the query's events.  W_e2: e1 = 1.6 * 1.0 = 1.6; e2 = 1.6 * 0.5 = 0.8; e3 = 1.3 * 0.55 = 0.715
    # Reverse: A = 1.6; B = 1.6 + 0.8 = 2.4; C = 0.8 + 0.715 = 1.515; D = 0.715 (E: e4 not activated)
    # L1: / (1.6 + 2.4 + 1.515 + 0.715 = 6.23)
    args = {"chunk_ids": [k["c1"], k["c2"]], "chunk_similarities": [0.6, 0.8], "chunk_text_scores": [1.0, 0.5],
            "text_weight": 0.5, "event_limit": 1}
    expected = [(k["B"], 2.4 / 6.23, 1), (k["A"], 1.6 / 6.23, 1), (k["C"], 1.515 / 6.23, 1), (k["D"], 0.715 / 6.23, 1)]
    assert activate(db_conn, {k["D"]: 0.5}, **args) == approx(expected)
    # A given seed weighing more than the feedback keeps its weight: A = 0.9 instead of 0.8 changes W_event-key
    # of e1 to 0.9 + 0.8 = 1.7: A = 1.7; B = 1.7 + 0.8 = 2.5; C = 1.515; D = 0.715; / (6.43)
    assert activate(db_conn, {k["D"]: 0.5, k["A"]: 0.9}, **args) == approx(
        [(k["B"], 2.5 / 6.43, 1), (k["A"], 1.7 / 6.43, 1), (k["C"], 1.515 / 6.43, 1), (k["D"], 0.715 / 6.43, 1)])
    # No feedback: only D, whose event e3 is among the query's events: W_e2 = 0.5 * 0.55; C and D get 1/2 each.
    assert activate(db_conn, {k["D"]: 0.5}, **{**args, "feedback_chunks": 0}) == approx(
        [(k["C"], 0.5, 1), (k["D"], 0.5, 1)])
    # Without the query's chunks (the plain §2.2): e1 = {e1}, D's event e3 is not in it -> fallback, e3 scored
    # by its exact cosine: 0.5 * 0.6 = 0.3 -> C, D 1/2 each.
    assert activate(db_conn, {k["D"]: 0.5}, event_limit=1) == approx([(k["C"], 0.5, 1), (k["D"], 0.5, 1)])


def test_activate_keys_event_filter(db_conn: psycopg.Connection) -> None:
    k = chunk_graph(GraphBuilder(db_conn))
    args = {"chunk_ids": [k["c1"], k["c2"]], "chunk_similarities": [0.6, 0.8], "chunk_text_scores": [1.0, 0.5],
            "text_weight": 0.5, "event_limit": 1}
    # Every event but e1 allowed.  Seeds as in test_activate_keys_with_query_chunks: A, B, C = 0.8, D = 0.5.
    # e1 events: the nearest allowed event (e4, cos 0.8), and the BM25 chunks' allowed events e2, e3:
    #   e4: 0.5 * 0.8 + 0.5 * 0 (c3 is not a query chunk) = 0.4;  e2 = 0.5;  e3 = 0.55
    # W_event-key (allowed events only): e2 = B + C = 1.6; e3 = C + D = 1.3; e4 = A = 0.8
    # W_e2: e2 = 0.8; e3 = 0.715; e4 = 0.32
    # Reverse: B = 0.8; C = 0.8 + 0.715 = 1.515; D = 0.715; A = 0.32; E = 0.32 -> / 3.67 (A before E: key id)
    allowed = [k["e2"], k["e3"], k["e4"]]
    assert activate(db_conn, {k["D"]: 0.5}, **args, event_filter=allowed) == approx(
        [(k["C"], 1.515 / 3.67, 1), (k["B"], 0.8 / 3.67, 1), (k["D"], 0.715 / 3.67, 1), (k["A"], 0.32 / 3.67, 1),
         (k["E"], 0.32 / 3.67, 1)])
    # More than 1,000 ids (the HNSW search with a filter instead of an exact one): the same.
    big = allowed + list(range(10**6, 10**6 + 1000))
    assert activate(db_conn, {k["D"]: 0.5}, **args, event_filter=big) == activate(
        db_conn, {k["D"]: 0.5}, **args, event_filter=allowed)
    # Nothing allowed: nothing activates.  NULL: no filter.
    assert activate(db_conn, {k["D"]: 0.5}, **args, event_filter=[]) == []
    assert activate(db_conn, {k["D"]: 0.5}, **args, event_filter=None) == activate(db_conn, {k["D"]: 0.5}, **args)



@pytest.mark.parametrize(
    "args",
    [
        "null, '{1}', '{1}'",
        "'[1,0,0]', '{1,2}', '{1}'",
        "'[1,0,0]', '{1}', '{1}', event_limit => 0",
        "'[1,0,0]', '{1}', '{1}', threshold => 1.5",
        "'[1,0,0]', '{1}', '{1}', threshold => -0.1",
        "'[1,0,0]', '{1}', '{1}', top_n => 0",
        "'[1,0,0]', '{1}', '{1}', max_key_events => 0",
        "'[1,0,0]', '{1}', '{1}', chunk_ids => '{1}', chunk_similarities => '{1}', chunk_text_scores => '{}'",
        "'[1,0,0]', '{1}', '{1}', text_weight => 1.5",
        "'[1,0,0]', '{1}', '{1}', feedback_chunks => -1",
    ],
)
def test_activate_keys_rejects_bad_parameters(db_conn: psycopg.Connection, args: str) -> None:
    GraphBuilder(db_conn)
    with pytest.raises(psycopg.errors.InvalidParameterValue):
        db_conn.execute(f"select * from sag.activate_keys({args})")

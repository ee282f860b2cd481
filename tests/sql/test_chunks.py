"""Stage 3 (sag-algorithm §2.4) and the chunk baselines: sag.rank_chunks, sag.dense_chunks, sag.hybrid_chunks,
and the composed psql search (sag.search over sag.retrieve).

The rank_chunks graph (source "one"), query q = (1, 0, 0), query tokens ["apple"]:
    chunk  embedding  sim  tokens               chunk_keys (count)
    c1     (1,0,0)    1.0  apple banana (dl 2)  K1 x1
    c2     (4,3,0)    0.8  cherry       (dl 1)  K1 x3, K2 x1
    c3     (0,1,0)    0.0  apple apple cherry   K2 x2     (dl 3)
    c4     (3,4,0)    0.6  date         (dl 1)  -
key-final: K1 weight 1 step 1, K2 weight 0.5 step 2.  Source "two" holds a copy of c1 and of K1.

BM25 (N = 4, avgdl = 7/4, df(apple) = 2, idf = ln(1 + 2.5/2.5) = ln 2 = 0.693147):
    c1: K = 1.2 * (0.25 + 0.75 * 2 / 1.75) = 1.328571; 0.693147 * 1 / 2.328571 = 0.297671
    c3: K = 1.2 * (0.25 + 0.75 * 3 / 1.75) = 1.842857; 0.693147 * 2 / 3.842857 = 0.360746 (the maximum)
    text_score = bm25 / max: c1 0.297671 / 0.360746 = 0.825153; c3 1
key_score = sum W * ln(1 + count) / step:
    c1 = 1 * ln 2 / 1 = 0.693147;  c2 = 1 * ln 4 / 1 + 0.5 * ln 2 / 2 = 1.386294 + 0.173287 = 1.559581
    c3 = 0.5 * ln 3 / 2 = 0.274653
With text_weight 0.5 (most tests), s = 0.5 * sim + 0.5 * text_score:
    c1 = 0.5 + 0.412577 = 0.912577;  c2 = 0.4;  c3 = 0.5;  c4 = 0.3
weight_init = 0.5 * s + ln(1 + key_score):
    c1 = 0.456288 + ln 1.693147 (0.526589) = 0.982877
    c2 = 0.2 + ln 2.559581 (0.939844) = 1.139844
    c3 = 0.25 + ln 1.274653 (0.242674) = 0.492674
"""

from __future__ import annotations

import numpy as np
import psycopg
import pytest

from sag_pg.search.retrieve import retrieve
from tests.sql.graph_builder import GraphBuilder, vec

Q = vec((1, 0, 0))
RANK = ("select chunk_id, similarity, text_score, s, key_score, weight_init, via_keys, via_vector, via_text "
        "from sag.rank_chunks(%(q)s::vector, %(t)s, %(k)s, %(w)s, %(st)s{named})")


@pytest.fixture
def graph(db_conn: psycopg.Connection) -> dict[str, int]:
    g = GraphBuilder(db_conn)
    ids: dict[str, int] = {}
    for source in ("one", "two"):
        s = g.source(source)
        doc = g.document(s, f"{source}-doc", title=f"Doc {source}")
        k1, k2 = g.key(s, "K1"), g.key(s, "K2")
        c1 = g.chunk(doc, "apple banana", (1, 0, 0), title="First")
        g.link(g.event(c1, "c1 event", (1, 0, 0)), k1)
        if source == "two":
            ids.update(s2=s, c5=c1, k1_two=k1)
            continue
        c2 = g.chunk(doc, "cherry", (4, 3, 0))
        e2 = g.event(c2, "c2 event", (4, 3, 0))
        g.link(e2, k1, 3)
        g.link(e2, k2, 1)
        c3 = g.chunk(doc, "apple apple cherry", (0, 1, 0))
        g.link(g.event(c3, "c3 event", (0, 1, 0)), k2, 2)
        c4 = g.chunk(doc, "date", (3, 4, 0))
        ids.update(s1=s, c1=c1, c2=c2, c3=c3, c4=c4, k1=k1, k2=k2)
    return ids


def rank(conn: psycopg.Connection, g: dict[str, int], **kw: object) -> list[tuple[object, ...]]:
    """rank_chunks with key-final K1 = 1 (step 1), K2 = 0.5 (step 2); text_weight 0.5 unless given."""
    kw = {"text_weight": 0.5, **kw}
    named = "".join(f", {k} => %({k})s" for k in kw)
    args = {"q": Q, "t": ["apple"], "k": [g["k1"], g["k2"]], "w": [1.0, 0.5], "st": [1, 2], **kw}
    return [tuple(r) for r in conn.execute(RANK.format(named=named), args).fetchall()]


def a(x: float) -> object:
    return pytest.approx(x, abs=1e-6)


def test_rank_chunks_formulas(db_conn: psycopg.Connection, graph: dict[str, int]) -> None:
    g = graph
    rows = rank(db_conn, g, source_ids=[g["s1"]], vector_limit=2)
    # Candidates: via keys c1, c2, c3; via vector (top 2) c1, c2; via text c1, c3.  c4 is none of them.
    assert rows == [
        (g["c2"], a(0.8), a(0.0), a(0.4), a(1.559581), a(1.139844), True, True, False),
        (g["c1"], a(1.0), a(0.825153), a(0.912577), a(0.693147), a(0.982877), True, True, True),
        (g["c3"], a(0.0), a(1.0), a(0.5), a(0.274653), a(0.492674), True, False, True),
    ]


def test_rank_chunks_text_weight(db_conn: psycopg.Connection, graph: dict[str, int]) -> None:
    g = graph
    # The default text_weight 0.85: s = 0.15 * sim + 0.85 * text_score:
    #   c1 = 0.15 + 0.85 * 0.825153 = 0.851380 -> 0.425690 + 0.526589 = 0.952279
    #   c2 = 0.12 -> 0.06 + 0.939844 = 0.999844;  c3 = 0.85 -> 0.425 + 0.242674 = 0.667674
    rows = [tuple(r) for r in db_conn.execute(
        "select chunk_id, s, weight_init from sag.rank_chunks(%s::vector, %s, %s, %s, %s, %s, vector_limit => 2)",
        [Q, ["apple"], [g["k1"], g["k2"]], [1.0, 0.5], [1, 2], [g["s1"]]]).fetchall()]
    assert rows == [(g["c2"], a(0.12), a(0.999844)), (g["c1"], a(0.851380), a(0.952279)),
                    (g["c3"], a(0.85), a(0.667674))]
    # text_weight 0.2: s = 0.8 * sim + 0.2 * text_score:
    #   c1 = 0.8 + 0.165031 = 0.965031 -> 0.482515 + 0.526589 = 1.009104
    #   c2 = 0.64 -> 0.32 + 0.939844 = 1.259844;  c3 = 0.2 -> 0.1 + 0.242674 = 0.342674
    rows = rank(db_conn, g, source_ids=[g["s1"]], vector_limit=2, text_weight=0.2)
    assert [(r[0], r[3], r[5]) for r in rows] == [
        (g["c2"], a(0.64), a(1.259844)), (g["c1"], a(0.965031), a(1.009104)), (g["c3"], a(0.2), a(0.342674))]


def test_rank_chunks_lexical_redundancy(db_conn: psycopg.Connection, graph: dict[str, int]) -> None:
    g = graph
    # Query (1, 0, 1): cosines c1 = 1/sqrt 2 = 0.707107, c2 = 0.8/sqrt 2 = 0.565685, c3 0 (c4 0.424264, not
    # among the top 2).  Candidates c1, c2, c3 as before; the best cosine among them is c1's 0.707107.
    # sim = r * cosine + (1 - r) * cosine / 0.707107; s = 0.5 * sim + 0.5 * text_score;
    # weight_init = 0.5 * s + ln(1 + key_score) (key parts as in the module docstring).
    def ranked(r: float | None) -> list[tuple[object, ...]]:
        extra = "" if r is None else ", lexical_redundancy => %(r)s"
        rows = db_conn.execute(
            "select chunk_id, similarity, s, weight_init from sag.rank_chunks(%(q)s::vector, %(t)s, %(k)s, %(w)s, "
            "%(st)s, %(src)s, vector_limit => 2, text_weight => 0.5" + extra + ")",
            {"q": vec((1, 0, 1)), "t": ["apple"], "k": [g["k1"], g["k2"]], "w": [1.0, 0.5], "st": [1, 2],
             "src": [g["s1"]], "r": r}).fetchall()
        return [tuple(row) for row in rows]
    # r = 1 (the default): the plain cosine.  c1 s = 0.353553 + 0.412577 = 0.766130 -> 0.383065 + 0.526589;
    # c2 s = 0.282843 -> 0.141421 + 0.939844; c3 s = 0.5 -> 0.25 + 0.242674.
    expected_plain = [(g["c2"], a(0.565685), a(0.282843), a(1.081265)),
                      (g["c1"], a(0.707107), a(0.766130), a(0.909654)),
                      (g["c3"], a(0.0), a(0.5), a(0.492674))]
    assert ranked(None) == expected_plain
    assert ranked(1.0) == expected_plain
    # r = 0: sim c1 1, c2 0.8: the numbers of the module docstring (the similarity column stays the cosine).
    assert ranked(0.0) == [(g["c2"], a(0.565685), a(0.4), a(1.139844)),
                           (g["c1"], a(0.707107), a(0.912577), a(0.982877)),
                           (g["c3"], a(0.0), a(0.5), a(0.492674))]
    # r = 0.5: sim c1 = 0.353553 + 0.5 = 0.853553, c2 = 0.282843 + 0.4 = 0.682843.
    #   c1 s = 0.426777 + 0.412577 = 0.839354 -> 0.419677 + 0.526589 = 0.946266
    #   c2 s = 0.341421 -> 0.170711 + 0.939844 = 1.110555
    assert ranked(0.5) == [(g["c2"], a(0.565685), a(0.341421), a(1.110555)),
                           (g["c1"], a(0.707107), a(0.839354), a(0.946266)),
                           (g["c3"], a(0.0), a(0.5), a(0.492674))]
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="lexical_redundancy must be in"):
        ranked(1.5)


def test_rank_chunks_candidate_limits(db_conn: psycopg.Connection, graph: dict[str, int]) -> None:
    g = graph
    # key_chunk_limit 1: only the chunk with the highest key_score (c2) comes through the keys; c1 and c3
    # still come through vector/text and keep their key_score.
    rows = rank(db_conn, g, source_ids=[g["s1"]], vector_limit=2, key_chunk_limit=1)
    assert [(r[0], r[4], r[6]) for r in rows] == [
        (g["c2"], a(1.559581), True), (g["c1"], a(0.693147), False), (g["c3"], a(0.274653), False)]
    # Keys only.
    rows = rank(db_conn, g, source_ids=[g["s1"]], vector_limit=0, text_limit=0)
    assert [r[0] for r in rows] == [g["c2"], g["c1"], g["c3"]]
    assert all(r[2] == 0 for r in rows)   # no BM25 list: text_score 0
    # No keys: vector (all four chunks) and text only; c4 = 0.5 * (0.5 * 0.6) = 0.15.
    rows = [tuple(r) for r in db_conn.execute(
        "select chunk_id, weight_init, via_keys from sag.rank_chunks(%s::vector, %s, null, null, null, %s, "
        "text_weight => 0.5)", [Q, ["apple"], [g["s1"]]]).fetchall()]
    # c1 = 0.5 * 0.912577 = 0.456288; c3 = 0.25; c2 = 0.2; c4 = 0.15
    assert rows == [(g["c1"], a(0.456288), False), (g["c3"], a(0.25), False), (g["c2"], a(0.2), False),
                    (g["c4"], a(0.15), False)]


def test_rank_chunks_stays_inside_sources(db_conn: psycopg.Connection, graph: dict[str, int]) -> None:
    g = graph
    # Source two's key K1 passed in key-final is ignored when searching source one, and its chunk c5
    # (a copy of c1) is never returned.
    rows = [tuple(r) for r in db_conn.execute(
        "select chunk_id, key_score from sag.rank_chunks(%s::vector, %s, %s, %s, %s, %s, vector_limit => 2, "
        "text_weight => 0.5)",
        [Q, ["apple"], [g["k1"], g["k2"], g["k1_two"]], [1.0, 0.5, 1.0], [1, 2, 1], [g["s1"]]]).fetchall()]
    assert rows == [(g["c2"], a(1.559581)), (g["c1"], a(0.693147)), (g["c3"], a(0.274653))]
    rows = db_conn.execute(
        "select chunk_id from sag.rank_chunks(%s::vector, %s, %s, %s, %s, %s)",
        [Q, ["apple"], [g["k1"], g["k2"], g["k1_two"]], [1.0, 0.5, 1.0], [1, 2, 1], [g["s2"]]]).fetchall()
    assert [r[0] for r in rows] == [g["c5"]]


def test_rank_chunks_with_given_query_chunks(db_conn: psycopg.Connection, graph: dict[str, int]) -> None:
    g = graph
    # The query's chunks given (as sag.query_chunks returns them): only c4 (similarity 0.6, text_score 0,
    # found by the vector search).  No search happens: c1 and c3 come through the keys only, with their exact
    # similarity and text_score 0.  text_weight 0.5:
    #   c2: s = 0.5 * 0.8 = 0.4 -> 0.2 + 0.939844 = 1.139844
    #   c1: s = 0.5 * 1.0 = 0.5 -> 0.25 + 0.526589 = 0.776589
    #   c3: s = 0 -> 0.242674;  c4: s = 0.5 * 0.6 = 0.3 -> 0.15
    rows = rank(db_conn, g, source_ids=[g["s1"]], chunk_ids=[g["c4"]], chunk_similarities=[0.6],
                chunk_text_scores=[0.0], chunk_via_vector=[True])
    assert [(r[0], r[1], r[2], r[5], r[6], r[7], r[8]) for r in rows] == [
        (g["c2"], a(0.8), a(0.0), a(1.139844), True, False, False),
        (g["c1"], a(1.0), a(0.0), a(0.776589), True, False, False),
        (g["c3"], a(0.0), a(0.0), a(0.242674), True, False, False),
        (g["c4"], a(0.6), a(0.0), a(0.15), False, True, False),
    ]
    # A given text_score > 0 means the chunk came through BM25.
    rows = rank(db_conn, g, source_ids=[g["s1"]], chunk_ids=[g["c4"]], chunk_similarities=[0.6],
                chunk_text_scores=[0.5])
    assert [(r[0], r[7], r[8]) for r in rows if r[0] == g["c4"]] == [(g["c4"], False, True)]


def test_rank_chunks_chunk_filter(db_conn: psycopg.Connection, graph: dict[str, int]) -> None:
    g = graph
    # Only c1 and c3 allowed: c2 (keys and vector) is gone, the others keep the numbers of
    # test_rank_chunks_formulas (BM25 statistics are those of the whole source).
    rows = rank(db_conn, g, source_ids=[g["s1"]], vector_limit=2, chunk_filter=[g["c1"], g["c3"]])
    assert rows == [
        (g["c1"], a(1.0), a(0.825153), a(0.912577), a(0.693147), a(0.982877), True, True, True),
        (g["c3"], a(0.0), a(1.0), a(0.5), a(0.274653), a(0.492674), True, True, True),
    ]
    assert rank(db_conn, g, source_ids=[g["s1"]], chunk_filter=[]) == []


def test_query_chunks(db_conn: psycopg.Connection, graph: dict[str, int]) -> None:
    g = graph
    call = ("select chunk_id, similarity, text_score, s, via_vector, via_text "
            "from sag.query_chunks(%(q)s::vector, %(t)s, %(s)s{named})")

    def qc(**kw: object) -> list[tuple[object, ...]]:
        kw = {"vector_limit": 2, **kw}
        named = "".join(f", {k} => %({k})s" for k in kw)
        return [tuple(r) for r in db_conn.execute(call.format(named=named),
                                                  {"q": Q, "t": ["apple"], "s": [g["s1"]], **kw}).fetchall()]

    # Dense top 2: c1 (1.0), c2 (0.8); BM25: c3 (text_score 1), c1 (0.825153).  c3's similarity is computed.
    # text_weight 0.5: c1 = 0.912577; c3 = 0.5; c2 = 0.4
    assert qc(text_weight=0.5) == [
        (g["c1"], a(1.0), a(0.825153), a(0.912577), True, True),
        (g["c3"], a(0.0), a(1.0), a(0.5), False, True),
        (g["c2"], a(0.8), a(0.0), a(0.4), True, False),
    ]
    # Default text_weight 0.85: c1 = 0.15 + 0.701380 = 0.851380; c3 = 0.85; c2 = 0.12
    assert [(r[0], r[3]) for r in qc()] == [(g["c1"], a(0.851380)), (g["c3"], a(0.85)), (g["c2"], a(0.12))]
    # Only c2 and c3 allowed: dense top 2 = c2 (0.8), c3 (0.0); BM25 = c3 alone, so its text_score is 1.
    assert qc(text_weight=0.5, chunk_filter=[g["c2"], g["c3"]]) == [
        (g["c3"], a(0.0), a(1.0), a(0.5), True, True),
        (g["c2"], a(0.8), a(0.0), a(0.4), True, False),
    ]
    assert qc(vector_limit=0, text_limit=0) == []
    with pytest.raises(psycopg.errors.InvalidParameterValue):
        qc(text_weight=2.0)


@pytest.mark.parametrize(
    "args",
    [
        "null, '{}', '{}', '{}', '{}'",
        "'[1,0,0]', '{}', '{1}', '{1}', '{}'",
        "'[1,0,0]', '{}', '{1}', '{1}', '{0}'",
        "'[1,0,0]', '{}', '{}', '{}', '{}', vector_limit => -1",
        "'[1,0,0]', '{}', '{}', '{}', '{}', text_limit => -1",
        "'[1,0,0]', '{}', '{}', '{}', '{}', key_chunk_limit => -1",
        "'[1,0,0]', '{}', '{}', '{}', '{}', text_weight => 1.5",
        "'[1,0,0]', '{}', '{}', '{}', '{}', chunk_ids => '{1}', chunk_similarities => '{}', chunk_text_scores => '{1}'",
    ],
)
def test_rank_chunks_rejects_bad_parameters(db_conn: psycopg.Connection, args: str) -> None:
    GraphBuilder(db_conn)
    with pytest.raises(psycopg.errors.InvalidParameterValue):
        db_conn.execute(f"select * from sag.rank_chunks({args})")


def test_dense_chunks(db_conn: psycopg.Connection, graph: dict[str, int]) -> None:
    g = graph
    rows = db_conn.execute("select chunk_id, similarity from sag.dense_chunks(%s::vector, %s)", [Q, [g["s1"]]]).fetchall()
    assert [(r[0], a(r[1])) for r in rows] == [(g["c1"], 1.0), (g["c2"], 0.8), (g["c4"], 0.6), (g["c3"], 0.0)]
    rows = db_conn.execute("select chunk_id from sag.dense_chunks(%s::vector, top_k => 2)", [Q]).fetchall()
    assert [r[0] for r in rows] == [g["c1"], g["c5"]]   # both at similarity 1: by chunk id
    # Chunks without an embedding or with a zero one are never returned.
    db_conn.execute("update sag.chunks set embedding = '[0,0,0]' where id = %s", [g["c2"]])
    db_conn.execute("update sag.chunks set embedding = null where id = %s", [g["c4"]])
    rows = db_conn.execute("select chunk_id from sag.dense_chunks(%s::vector, %s)", [Q, [g["s1"]]]).fetchall()
    assert [r[0] for r in rows] == [g["c1"], g["c3"]]
    # chunk_filter: an exact search over the allowed chunks (zero and missing embeddings still left out).
    rows = db_conn.execute("select chunk_id, similarity from sag.dense_chunks(%s::vector, chunk_filter => %s)",
                           [Q, [g["c2"], g["c3"], g["c4"], g["c5"]]]).fetchall()
    assert [(r[0], a(r[1])) for r in rows] == [(g["c5"], 1.0), (g["c3"], 0.0)]
    assert db_conn.execute("select count(*) from sag.dense_chunks(%s::vector, chunk_filter => '{}')",
                           [Q]).fetchone() == (0,)
    # A filter of more than 1,000 ids goes through the HNSW index instead (filter applied to its rows): the
    # same answer.
    big = [g["c2"], g["c3"], g["c4"], g["c5"]] + list(range(10**6, 10**6 + 1000))
    rows = db_conn.execute("select chunk_id from sag.dense_chunks(%s::vector, chunk_filter => %s)", [Q, big]).fetchall()
    assert [r[0] for r in rows] == [g["c5"], g["c3"]]
    with pytest.raises(psycopg.errors.InvalidParameterValue):
        db_conn.execute("select * from sag.dense_chunks(%s::vector, top_k => 0)", [Q])


def test_hybrid_chunks_is_reciprocal_rank_fusion(db_conn: psycopg.Connection, graph: dict[str, int]) -> None:
    g = graph
    # Dense ranks: c1 1, c2 2, c4 3, c3 4.  BM25 ranks (apple): c3 1, c1 2.  rrf_k = 60:
    #   c1 = 1/61 + 1/62 = 0.032522;  c3 = 1/64 + 1/61 = 0.032018;  c2 = 1/62 = 0.016129;  c4 = 1/63 = 0.015873
    rows = db_conn.execute("select chunk_id, score from sag.hybrid_chunks(%s::vector, %s, %s, top_k => 4)",
                           [Q, ["apple"], [g["s1"]]]).fetchall()
    assert [(r[0], r[1]) for r in rows] == [(g["c1"], a(1 / 61 + 1 / 62)), (g["c3"], a(1 / 64 + 1 / 61)),
                                            (g["c2"], a(1 / 62)), (g["c4"], a(1 / 63))]
    # top_k 2, rrf_k 0: the lists are dense c1, c2 and BM25 c3, c1: c1 = 1/1 + 1/2 = 1.5; c3 = 1/1 = 1;
    # c2 = 1/2 = 0.5 -> the top 2.
    rows = db_conn.execute("select chunk_id, score from sag.hybrid_chunks(%s::vector, %s, %s, top_k => 2, rrf_k => 0)",
                           [Q, ["apple"], [g["s1"]]]).fetchall()
    assert [(r[0], r[1]) for r in rows] == [(g["c1"], a(1.5)), (g["c3"], a(1.0))]
    # chunk_filter goes to both lists: c2, c4 allowed: dense c2 1, c4 2; BM25 (apple) none:
    #   c2 = 1/61; c4 = 1/62
    rows = db_conn.execute("select chunk_id, score from sag.hybrid_chunks(%s::vector, %s, %s, chunk_filter => %s)",
                           [Q, ["apple"], [g["s1"]], [g["c2"], g["c4"]]]).fetchall()
    assert [(r[0], r[1]) for r in rows] == [(g["c2"], a(1 / 61)), (g["c4"], a(1 / 62))]
    with pytest.raises(psycopg.errors.InvalidParameterValue), db_conn.transaction():
        db_conn.execute("select * from sag.hybrid_chunks(%s::vector, '{}', rrf_k => -1)", [Q])


# ---------------------------------------------------------------------------------------------------------
# The composed search


def search_graph(g: GraphBuilder, source: str) -> dict[str, int]:
    s = g.source(source)
    doc = g.document(s, f"{source}/apple.md", title="Apple")
    c1 = g.chunk(doc, "Apple was founded by Steve Jobs", (1, 0, 0))
    c2 = g.chunk(doc, "Jobs returned in 1997", (0, 0, 1))
    jobs, apple = g.key(s, "Steve Jobs", (1, 0, 0)), g.key(s, "Apple", (4, 3, 0))
    e1 = g.event(c1, "Steve Jobs founded Apple", (1, 0, 0))
    g.links(e1, jobs, apple)
    g.links(g.event(c2, "Jobs returned to Apple", (0, 0, 1)), jobs)
    return {"source": s, "c1": c1, "c2": c2}


def test_search_by_vector_composes_the_stages(db_conn: psycopg.Connection) -> None:
    g = GraphBuilder(db_conn)
    one = search_graph(g, "one")
    two = search_graph(g, "two")
    query = "who founded apple"
    got = db_conn.execute("select * from sag.search(%s, source => 'one', query_embedding => %s::vector)", [query, Q]).fetchall()
    manual = db_conn.execute(
        """
        with seeds as (select array_agg(key_id) ids, array_agg(similarity) w from sag.match_keys(%(q)s::vector, %(s)s)),
        qc as (select array_agg(chunk_id) ids, array_agg(similarity) sim, array_agg(text_score) ts,
                      array_agg(via_vector) vv
                 from sag.query_chunks(%(q)s::vector, %(t)s, %(s)s)),
        top_text as (select array_agg(q.chunk_id order by q.text_score desc, q.chunk_id) ids
                       from (select * from sag.query_chunks(%(q)s::vector, %(t)s, %(s)s) where text_score > 0
                              order by text_score desc, chunk_id limit 3) q),
        -- The coverage is the lexical share of s (text_weight); what it leaves is the keys' (key_weight).
        cov as (select sag.question_coverage(%(t)s, top_text.ids, %(s)s) c from top_text),
        act as (select array_agg(a.key_id) ids, array_agg(a.weight) w, array_agg(a.step) st
                  from seeds, qc, cov, sag.activate_keys(%(q)s::vector, seeds.ids, seeds.w, %(s)s, chunk_ids => qc.ids,
                                                         chunk_similarities => qc.sim, chunk_text_scores => qc.ts,
                                                         text_weight => cov.c) a),
        fin as (select array_agg(e.key_id) ids, array_agg(e.weight) w, array_agg(e.step) st
                  from act, sag.expand_keys(%(q)s::vector, act.ids, act.w, act.st, %(s)s) e)
        select r.chunk_id, r.weight_init
          from fin, qc, cov, sag.rank_chunks(%(q)s::vector, %(t)s, fin.ids, fin.w, fin.st, %(s)s, chunk_ids => qc.ids,
                                             chunk_similarities => qc.sim, chunk_text_scores => qc.ts,
                                             chunk_via_vector => qc.vv, text_weight => cov.c,
                                             key_weight => least(1, 2 * (1 - cov.c))) r
        """,
        {"q": Q, "s": [one["source"]], "t": ["who", "founded", "apple"]},
    ).fetchall()
    # The final order spreads over documents (sag.spread_documents): c2 is the second chunk of apple.md, so
    # it counts half its weight_init.
    assert len(manual) == 2
    assert [(r[1], r[4]) for r in got] == [(manual[0][0], a(manual[0][1])), (manual[1][0], a(manual[1][1] / 2))]
    # c2 (orthogonal to the query) is reached through the key "Steve Jobs".
    assert got[0][:4] == ("one/apple.md", one["c1"], "Apple", "Apple was founded by Steve Jobs")
    assert got[1][1] == one["c2"]
    # All sources: both copies; top_n.
    every = db_conn.execute("select chunk_id from sag.search(%s, top_n => 3, source => null, query_embedding => %s::vector)",
                            [query, Q]).fetchall()
    assert len(every) == 3 and {r[0] for r in every} <= {one["c1"], one["c2"], two["c1"], two["c2"]}
    with pytest.raises(psycopg.errors.NoDataFound, match="no source named 'three'"), db_conn.transaction():
        db_conn.execute("select * from sag.search('q', source => 'three', query_embedding => %s::vector)", [Q])
    with pytest.raises(psycopg.errors.InvalidParameterValue), db_conn.transaction():
        db_conn.execute("select * from sag.search('q', top_n => 0, query_embedding => %s::vector)", [Q])


def test_search_needs_the_hash_embedder(db_conn: psycopg.Connection) -> None:
    GraphBuilder(db_conn)   # bound to "test"
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="embedder is test") as err:
        db_conn.execute("select * from sag.search('who founded apple')")
    assert "query_embedding" in (err.value.diag.message_hint or "")


def test_search_with_the_hash_embedder(db_conn: psycopg.Connection) -> None:
    g = GraphBuilder(db_conn, embedder="hash-v1:64", dimension=64)
    s = g.source("fruit")
    doc = g.document(s, "fruit.md", title="Fruit")
    texts = ["apple pie with cinnamon", "banana bread recipe", "cherry jam and sugar"]
    chunks = []
    for text in texts:
        c = g.chunk(doc, text, None)
        db_conn.execute("update sag.chunks set embedding = sag.embed_hash(content, 64) where id = %s", [c])
        e = g.event(c, text, None)
        db_conn.execute("update sag.events set embedding = sag.embed_hash(content, 64) where id = %s", [e])
        k = g.key(s, text.split()[0])
        db_conn.execute("update sag.keys set embedding = sag.embed_hash(name, 64) where id = %s", [k])
        g.link(e, k)
        chunks.append(c)
    got = db_conn.execute("select chunk_id, score from sag.search('apple pie', 2, 'fruit')").fetchall()
    same = db_conn.execute(
        "select chunk_id, score from sag.search('apple pie', 2, 'fruit', sag.embed_hash('apple pie', 64))"
    ).fetchall()
    assert got == same
    assert got[0][0] == chunks[0]


def test_search_keeps_the_direct_match_among_the_first_three(db_conn: psycopg.Connection) -> None:
    g = GraphBuilder(db_conn)
    s = g.source("news")
    # Four retellings of a story: each holds the story's three keys, which the question's vector seeds.
    story = [g.key(s, name, (1, 0, 0)) for name in ("Zorbex", "Quillan", "Marvot")]
    told = []
    for i in range(4):
        c = g.chunk(g.document(s, f"story{i}.md"), f"zorbex quillan marvot report{i}", (0.6, 0.8, 0))
        g.links(g.event(c, f"Zorbex met Quillan at Marvot {i}", (0.6, 0.8, 0)), *story)
        told.append(c)
    # The passage that answers: the question's direction and words, none of the story's keys.
    answer = g.chunk(g.document(s, "answer.md"), "zorbex opening date", (1, 0, 0))
    # Two question words no chunk holds keep the coverage low (0.37), so the keys count in full (key_weight 1):
    # a retelling's weight_init is about 0.5 * 0.39 + ln(1 + ln 2) = 0.72, the answer's 0.5 * 1 + 0 = 0.5.
    query = "zorbex opening date qwertz asdfgh"
    result = db_conn.execute("select sag.retrieve(%s, %s::vector, array[%s]::bigint[])", [query, Q, s]).fetchone()[0]
    assert result["direct_matches"] == [answer]      # the hash-like default: one witness (r = 1)
    by_weight = [c["chunk_id"] for c in result["chunks"]]
    assert by_weight.index(answer) == 4               # fifth by weight_init ...
    got = [r[0] for r in db_conn.execute(
        "select chunk_id from sag.search(%s, source => 'news', query_embedding => %s::vector)", [query, Q]).fetchall()]
    # ... pinned to third (places 1-2 stay the graph's, sag.spread_documents), then second: it holds "opening
    # date", which no retelling does (sag.cover_question; place 1 stays).
    order = [r[0] for r in db_conn.execute(
        "select chunk_id from sag.spread_documents(%s, %s, %s)",
        [by_weight, [c["weight_init"] for c in result["chunks"]], [answer]]).fetchall()]
    assert order[2] == answer and order[:2] == by_weight[:2]
    assert got[0] == by_weight[0] and got[1] == answer and set(got[2:]) == set(told) - {got[0]}
    # Python: the same order without PageRank, and the answer flagged as the direct match.
    hits = retrieve(db_conn, query, np.array([1, 0, 0], dtype=np.float32), source_ids=[s], use_pagerank=False).chunks
    assert [h.chunk_id for h in hits] == got
    assert [h.direct_match for h in hits] == [c == answer for c in got]


def test_a_named_entitys_page_leads_to_the_page_about_what_it_names(db_conn: psycopg.Connection) -> None:
    g = GraphBuilder(db_conn)
    s = g.source("wiki")
    zorvan, quillet = g.key(s, "Zorvan"), g.key(s, "Quillet")
    # The question's best passage by s shares its words and direction and holds no key: no bridge from it.
    noise = g.chunk(g.document(s, "noise.md", "Noise"), "when was it founded founded", (1, 0, 0))
    g.event(noise, "when was it founded", (1, 0, 0))
    # The page about the entity the question names; it names the company ...
    about_zorvan = g.chunk(g.document(s, "zorvan.md", "Zorvan"), "zorvan built the quillet works", (0.6, 0.8, 0))
    g.links(g.event(about_zorvan, "Zorvan built the Quillet works", (0.6, 0.8, 0)), zorvan, quillet)
    # ... whose own page holds the answer, with none of the question's words.
    about_quillet = g.chunk(g.document(s, "quillet.md", "Quillet"), "quillet opened 1901", (0, 0.6, 0.8))
    g.links(g.event(about_quillet, "Quillet opened in 1901", (0, 0.6, 0.8)), quillet)
    result = db_conn.execute("select sag.retrieve(%s, %s::vector, array[%s]::bigint[])",
                             ["When was the works of Zorvan founded?", Q, s]).fetchone()[0]
    assert result["named_keys"] == [zorvan]
    # The entity chain first (issue #33 item 2): the named entity's page, the page it leads to, then the rest.
    assert result["direct_matches"] == [about_zorvan, about_quillet, noise]
    # Without a page about the company, nothing is followed from Zorvan's page.
    db_conn.execute("update sag.documents set title = 'Opening years' where id = (select document_id from "
                    "sag.chunks where id = %s)", [about_quillet])
    result = db_conn.execute("select sag.retrieve(%s, %s::vector, array[%s]::bigint[])",
                             ["When was the works of Zorvan founded?", Q, s]).fetchone()[0]
    assert result["direct_matches"] == [about_zorvan, noise]

"""sag.bm25_chunks: hand-computed scores, agreement with bm25s (method="lucene"), sources, chunk filter.

Speed is measured by benchmarks/tune_retrieval.py (--bm25-synthetic, and the bm25 rows of its table).
"""

from __future__ import annotations

import numpy as np
import psycopg
import pytest

from tests.integrity import violations
from tests.sql.graph_builder import GraphBuilder


def bm25(conn: psycopg.Connection, tokens: list[str], **kw: object) -> list[tuple[int, float]]:
    named = "".join(f", {k} => %({k})s" for k in kw)
    rows = conn.execute(f"select chunk_id, score from sag.bm25_chunks(%(t)s{named})", {"t": tokens, **kw}).fetchall()
    return [(r[0], r[1]) for r in rows]


@pytest.fixture
def small(db_conn: psycopg.Connection) -> dict[str, int]:
    g = GraphBuilder(db_conn)
    s = g.source("one")
    doc = g.document(s, "doc")
    return {
        "source": s,
        "d1": g.chunk(doc, "apple banana apple", None),    # dl 3
        "d2": g.chunk(doc, "banana cherry", None),         # dl 2
        "d3": g.chunk(doc, "cherry date fig", None),       # dl 3
    }


def test_hand_computed_scores(db_conn: psycopg.Connection, small: dict[str, int]) -> None:
    d = small
    # N = 3, avgdl = (3 + 2 + 3) / 3 = 8/3; K(dl) = 1.2 * (1 - 0.75 + 0.75 * dl / avgdl):
    #   K(3) = 1.2 * (0.25 + 0.84375) = 1.3125;  K(2) = 1.2 * (0.25 + 0.5625) = 0.975
    # idf(apple) = ln(1 + (3 - 1 + 0.5) / (1 + 0.5)) = ln(8/3) = 0.980829
    # idf(cherry) = ln(1 + (3 - 2 + 0.5) / (2 + 0.5)) = ln(1.6) = 0.470004
    # d1: apple tf 2: 0.980829 * 2 / (2 + 1.3125) = 0.592199
    # d2: cherry tf 1: 0.470004 / (1 + 0.975) = 0.237977
    # d3: cherry tf 1: 0.470004 / (1 + 1.3125) = 0.203245
    assert bm25(db_conn, ["apple", "cherry", "kiwi"]) == [
        (d["d1"], pytest.approx(0.592199, abs=1e-6)),
        (d["d2"], pytest.approx(0.237977, abs=1e-6)),
        (d["d3"], pytest.approx(0.203245, abs=1e-6)),
    ]
    assert bm25(db_conn, ["apple", "cherry"], top_k=2) == [
        (d["d1"], pytest.approx(0.592199, abs=1e-6)),
        (d["d2"], pytest.approx(0.237977, abs=1e-6)),
    ]
    # A repeated query token counts twice (as in bm25s and Lucene).
    assert bm25(db_conn, ["cherry", "cherry"]) == [
        (d["d2"], pytest.approx(2 * 0.237977, abs=1e-6)),
        (d["d3"], pytest.approx(2 * 0.203245, abs=1e-6)),
    ]
    # b = 0: no length normalization, K = k1 = 1.2; k1 = 0: tf saturates at once (score = idf).
    assert bm25(db_conn, ["cherry"], b=0.0) == [
        (d["d2"], pytest.approx(0.470004 / 2.2, abs=1e-6)),
        (d["d3"], pytest.approx(0.470004 / 2.2, abs=1e-6)),   # tie: by chunk id
    ]
    assert bm25(db_conn, ["apple"], k1=0.0) == [(d["d1"], pytest.approx(0.980829, abs=1e-6))]


def test_no_match_and_empty_queries(db_conn: psycopg.Connection, small: dict[str, int]) -> None:
    assert bm25(db_conn, ["kiwi"]) == []
    assert bm25(db_conn, []) == []
    assert db_conn.execute("select count(*) from sag.bm25_chunks(null)").fetchone() == (0,)
    # Punctuation-only and odd tokens are harmless (quotes and backslashes are escaped).
    assert bm25(db_conn, ["'", "\\", "o'neil", "a\\b", ""]) == []


def test_statistics_are_per_source(db_conn: psycopg.Connection, small: dict[str, int]) -> None:
    d = small
    g = GraphBuilder(db_conn)
    s2 = g.source("two")
    d4 = g.chunk(g.document(s2, "doc2"), "apple", None)
    # Source one alone: the numbers of test_hand_computed_scores.
    assert bm25(db_conn, ["apple", "cherry"], source_ids=[d["source"]]) == [
        (d["d1"], pytest.approx(0.592199, abs=1e-6)),
        (d["d2"], pytest.approx(0.237977, abs=1e-6)),
        (d["d3"], pytest.approx(0.203245, abs=1e-6)),
    ]
    # Source two alone: N = 1, df(apple) = 1, dl = avgdl = 1: ln(1 + 0.5/1.5) * 1 / (1 + 1.2) = 0.287682 / 2.2
    assert bm25(db_conn, ["apple", "cherry"], source_ids=[s2]) == [(d4, pytest.approx(0.130765, abs=1e-6))]
    # Both: N = 4, avgdl = 9/4, df(apple) = 2: idf = ln(1 + 2.5/2.5) = ln 2
    #   d4: ln 2 * 1 / (1 + 1.2 * (0.25 + 0.75 * 1 / 2.25)) = 0.693147 / 1.7 = 0.407734
    both = dict(bm25(db_conn, ["apple"]))
    assert both[d4] == pytest.approx(0.407734, abs=1e-6)
    assert set(both) == {d["d1"], d4}


def test_chunk_filter(db_conn: psycopg.Connection, small: dict[str, int]) -> None:
    d = small
    # Only d2 and d3 allowed: the scores of test_hand_computed_scores (N, avgdl and df stay those of the
    # source), d1 is never returned.
    assert bm25(db_conn, ["apple", "cherry"], chunk_filter=[d["d2"], d["d3"]]) == [
        (d["d2"], pytest.approx(0.237977, abs=1e-6)),
        (d["d3"], pytest.approx(0.203245, abs=1e-6)),
    ]
    # top_k is counted among the allowed chunks: the best allowed one, not the best overall (d1).
    assert bm25(db_conn, ["apple", "cherry"], top_k=1, chunk_filter=[d["d2"], d["d3"]]) == [
        (d["d2"], pytest.approx(0.237977, abs=1e-6))]
    assert bm25(db_conn, ["apple", "cherry"], chunk_filter=[]) == []
    assert bm25(db_conn, ["apple"], chunk_filter=None) == bm25(db_conn, ["apple"])


def test_tf_is_capped_at_255(db_conn: psycopg.Connection) -> None:
    g = GraphBuilder(db_conn)
    c = g.chunk(g.document(g.source("one"), "doc"), " ".join(["x"] * 300), None)
    # N = 1, df = 1: idf = ln(1 + 0.5/1.5) = 0.287682; dl = avgdl = 300: K = 1.2.
    # to_tsvector keeps 255 positions of a lexeme: tf = 255, 0.287682 * 255 / 256.2 = 0.286335
    # (tf = 300 would give 0.286536).
    assert bm25(db_conn, ["x"]) == [(c, pytest.approx(0.286335, abs=1e-6))]


CORPUS = [
    "the cat sat on the mat",
    "the dog chased the cat around the garden",
    "a quick brown fox jumps over the lazy dog",
    "cats and dogs are common household pets",
    "the garden was full of red roses and white lilies",
    "roses are red violets are blue",
    "the fox hunted at night in the forest",
    "a forest of tall pine trees covered the hills",
    "pine cones fell on the forest floor",
    "the river flowed through the forest to the sea",
    "sea turtles lay eggs on sandy beaches",
    "the beach was crowded with tourists in summer",
    "summer rain fell on the dry hills",
    "the hills turned green after the rain",
    "green tea is popular in japan and china",
    "china built the great wall over centuries",
    "the wall of the garden was covered in ivy",
    "ivy and roses climbed the old stone wall",
    "the old man walked his dog by the river every morning",
    "morning coffee and green tea",
    "coffee beans are roasted before brewing",
    "the cat slept all morning in the sun",
    "sun and rain make the garden grow",
    "a lazy afternoon by the sea with a book",
    "the book about foxes and forests won a prize",
    "tourists photographed the great wall of china",
    "the prize was a trip to japan",
    "japan is an island nation in the pacific",
    "pacific sea turtles migrate across the ocean",
    "the ocean the sea the river the rain",
]
QUERIES = [
    ["the", "cat", "in", "the", "garden"],
    ["fox", "forest", "night"],
    ["green", "tea", "japan", "china"],
    ["sea", "turtles", "ocean", "beach"],
    ["the", "old", "wall", "roses", "ivy"],
    ["rain", "hills", "summer", "the"],
    ["morning", "coffee", "dog", "river", "unknownword"],
    ["the", "the", "sea"],
]


def test_agrees_with_bm25s(db_conn: psycopg.Connection) -> None:
    bm25s = pytest.importorskip("bm25s")
    g = GraphBuilder(db_conn)
    doc = g.document(g.source("one"), "corpus")
    ids = [g.chunk(doc, text, None) for text in CORPUS]
    tokenized = [text.split() for text in CORPUS]
    retriever = bm25s.BM25(method="lucene", k1=1.2, b=0.75)
    retriever.index(tokenized, show_progress=False)
    for query in QUERIES:
        expected = np.asarray(retriever.get_scores(query), dtype=np.float64)
        got = dict(bm25(db_conn, query, top_k=50))
        # Every chunk's score, matched or not (bm25s computes in float32).
        for i, chunk_id in enumerate(ids):
            assert got.get(chunk_id, 0.0) == pytest.approx(expected[i], rel=1e-5, abs=1e-6), (query, CORPUS[i])
        # The top 10 in order (ties broken by chunk id on our side, so compare the scores' order).
        top10 = bm25(db_conn, query, top_k=10)
        order = sorted(range(len(ids)), key=lambda i: (-expected[i], i))[:10]
        assert [s for _, s in top10] == pytest.approx([expected[i] for i in order if expected[i] > 0], rel=1e-5)
        assert [c for c, _ in top10] == [ids[i] for i in order if expected[i] > 0]


# ------------------------------------------------------------------- statistics kept by the triggers

def _stats_violations(conn: psycopg.Connection) -> dict[str, int]:
    return {k: v for k, v in violations(conn).items() if k.startswith("BM25")}


def _queued(conn: psycopg.Connection) -> int:
    return conn.execute("select count(*) from sag.term_stats_pending").fetchone()[0]  # type: ignore[index]


def test_statistics_stay_exact_through_every_kind_of_write(db_conn: psycopg.Connection) -> None:
    bm25s = pytest.importorskip("bm25s")
    g = GraphBuilder(db_conn)
    one, two = g.source("one"), g.source("two")
    docs = [g.document(one, f"corpus/{i}") for i in range(len(CORPUS))]
    ids = [g.chunk(doc, text, None) for doc, text in zip(docs, CORPUS, strict=True)]
    other = g.chunk(g.document(two, "other"), "the sea the sea rain", None)
    assert _queued(db_conn) == len(CORPUS) + 1 and _stats_violations(db_conn) == {}

    def check(texts: dict[int, str]) -> None:
        """BM25 over source one equals bm25s over `texts`, flushed or not, and the statistics are exact."""
        retriever = bm25s.BM25(method="lucene", k1=1.2, b=0.75)
        order = sorted(texts)
        retriever.index([texts[i].split() for i in order], show_progress=False)
        for query in QUERIES:
            expected = np.asarray(retriever.get_scores(query), dtype=np.float64)
            got = dict(bm25(db_conn, query, top_k=50, source_ids=[one]))
            for i, chunk_id in enumerate(order):
                assert got.get(chunk_id, 0.0) == pytest.approx(expected[i], rel=1e-5, abs=1e-6), query
        assert _stats_violations(db_conn) == {}

    texts = dict(zip(ids, CORPUS))
    check(texts)
    assert db_conn.execute("select sag.flush_term_stats()").fetchone() == (len(CORPUS) + 1,)
    assert _queued(db_conn) == 0
    check(texts)
    # Deleted by sag.delete_document: still exact, before and after the next flush.
    assert db_conn.execute("select sag.delete_document((select source_id from sag.documents where id = %s), %s)", [docs[0], docs[0]]).fetchone() == (True,)
    del texts[ids[0]]
    check(texts)
    db_conn.execute("select sag.flush_term_stats()")
    check(texts)
    # Rewritten by an UPDATE (no trigger sees it): exact again after sag.rebuild_term_stats.
    db_conn.execute("update sag.chunks set tokens = 'rain rain sea', token_count = 3 where id = %s", [ids[1]])
    texts[ids[1]] = "rain rain sea"
    assert _stats_violations(db_conn) != {}
    db_conn.execute("select sag.rebuild_term_stats()")
    check(texts)
    assert db_conn.execute("select count(*) from sag.term_stats where df <= 0").fetchone() == (0,)
    # A deleted source takes its statistics along; what it queued is dropped at the flush.
    db_conn.execute("delete from sag.sources where id = %s", [two])
    assert _stats_violations(db_conn) == {}
    db_conn.execute("select sag.flush_term_stats()")
    assert db_conn.execute("select count(*) from sag.term_stats where source_id = %s", [two]).fetchone() == (0,)
    check(texts)
    assert other not in dict(bm25(db_conn, ["sea"]))
    # TRUNCATE: rebuild_term_stats recounts.
    db_conn.execute("truncate sag.chunks cascade")
    assert _stats_violations(db_conn) != {}
    db_conn.execute("select sag.rebuild_term_stats()")
    assert _stats_violations(db_conn) == {} and bm25(db_conn, ["sea"]) == []


def test_posting_budget_takes_candidates_from_the_rarest_terms(db_conn: psycopg.Connection) -> None:
    g = GraphBuilder(db_conn)
    doc = g.document(g.source("one"), "doc")
    rare = [g.chunk(doc, f"zeta the filler{i}", None) for i in range(2)]
    middle = [g.chunk(doc, f"omega the filler{i}", None) for i in range(3)]
    common = [g.chunk(doc, f"the the word{i}", None) for i in range(40)]
    query = ["zeta", "omega", "the"]
    exact = dict(bm25(db_conn, query, top_k=50))
    assert set(exact) == set(rare + middle + common)
    # 2 postings: only zeta's chunks come in, scored on every term exactly as without a budget.
    assert bm25(db_conn, query, top_k=50, max_postings=2) == sorted(
        [(c, pytest.approx(exact[c], rel=1e-9)) for c in rare], key=lambda x: -x[1].expected)
    # 5: zeta and omega (2 + 3), not the 45 chunks of "the".
    assert {c for c, _ in bm25(db_conn, query, top_k=50, max_postings=5)} == set(rare + middle)
    # The first term is always taken, even over the budget.
    assert {c for c, _ in bm25(db_conn, ["the"], top_k=50, max_postings=1)} == set(rare + middle + common)
    # A budget covering everything is exact.
    assert dict(bm25(db_conn, query, top_k=50, max_postings=1000)) == pytest.approx(exact)
    with pytest.raises(psycopg.errors.InvalidParameterValue):
        bm25(db_conn, query, max_postings=0)


def test_skip_common_takes_no_candidates_from_terms_in_half_the_chunks(db_conn: psycopg.Connection) -> None:
    g = GraphBuilder(db_conn)
    doc = g.document(g.source("one"), "doc")
    rare = [g.chunk(doc, f"zeta the filler{i}", None) for i in range(2)]
    # "the" is in 7 of 8 chunks, "omega" in exactly half: both weigh ln((N - df + 0.5) / (df + 0.5)) <= 0 in
    # Robertson-Sparck Jones terms, so neither brings chunks in.
    half = [g.chunk(doc, f"omega the word{i}", None) for i in range(4)]
    common = [g.chunk(doc, f"the the other{i}", None) for i in range(1)]
    g.chunk(doc, "nothing here", None)
    query = ["omega", "zeta", "the"]
    exact = dict(bm25(db_conn, query, top_k=50))
    assert set(exact) == set(rare + half + common)
    # Only zeta's chunks come in, scored on every term exactly as without the cut.
    assert bm25(db_conn, query, top_k=50, skip_common=True) == sorted(
        [(c, pytest.approx(exact[c], rel=1e-9)) for c in rare], key=lambda x: -x[1].expected)
    # Common terms alone: the first one is still taken, so the question is answered.
    assert {c for c, _ in bm25(db_conn, ["omega", "the"], top_k=50, skip_common=True)} == set(half)
    # Under half the chunks it is evidence: with one more chunk, omega (4 of 9) brings its chunks in again.
    g.chunk(doc, "nothing there", None)
    assert {c for c, _ in bm25(db_conn, query, top_k=50, skip_common=True)} == set(rare + half)


@pytest.mark.parametrize("kw", [{"top_k": 0}, {"k1": -1.0}, {"b": 1.5}, {"b": -0.1}])
def test_rejects_bad_parameters(db_conn: psycopg.Connection, kw: dict[str, object]) -> None:
    GraphBuilder(db_conn)
    with pytest.raises(psycopg.errors.InvalidParameterValue):
        bm25(db_conn, ["x"], **kw)

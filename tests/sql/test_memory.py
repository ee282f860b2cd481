"""Memory scoring, recall and eviction SQL (sql/idempotent/053-055) against values worked out by hand."""

from __future__ import annotations

import math

import psycopg
import pytest

from tests.integrity import violations
from tests.sql.graph_builder import GraphBuilder


def _one(conn: psycopg.Connection, sql: str, args: list[object] | None = None) -> object:
    row = conn.execute(sql, args or []).fetchone()  # type: ignore[arg-type]
    assert row is not None
    return row[0]


def test_text_overlap_dice_over_bigrams(db_conn: psycopg.Connection) -> None:
    assert sorted(_one(db_conn, "select sag.text_bigrams('Graph db')")) == ["ap", "db", "gr", "ph", "ra"]  # type: ignore[arg-type]
    assert sorted(_one(db_conn, "select sag.text_bigrams('a B')")) == ["a", "b"]  # type: ignore[arg-type]
    # night {ni ig gh ht}, nacht {na ac ch ht}: 2 * 1 / (4 + 4)
    assert _one(db_conn, "select sag.text_overlap('night', 'Nacht')") == pytest.approx(0.25)
    # 知识图谱 {知识 识图 图谱}, 图谱数据库 {图谱 谱数 数据 据库}: 2 * 1 / (3 + 4)
    assert _one(db_conn, "select sag.text_overlap('知识图谱', '图谱数据库')") == pytest.approx(2 / 7)
    assert _one(db_conn, "select sag.text_overlap('', '')") == 0
    # (3 * Dice(title) + 2 * Dice(summary) + Dice(body)) / 6 = (3 * 0.25 + 0 + 1) / 6
    assert _one(db_conn, "select sag.memory_overlap('night', 'nacht', '', 'night')") == pytest.approx(1.75 / 6)


def test_temporal_reference_and_hybrid(db_conn: psycopg.Connection) -> None:
    assert _one(db_conn, "select sag.temporal_weight(now() - interval '60 days', now(), '30 days')") == pytest.approx(0.25)
    assert _one(db_conn, "select sag.temporal_weight(now() + interval '1 day', now())") == 1
    assert _one(db_conn, "select sag.reference_weight(3)") == pytest.approx(0.75)
    assert _one(db_conn, "select sag.reference_weight(0)") == 0
    # 0.5 * 0.4 + 0.2 * 0.5 + 0.1 * 0.25 + 0.2 * 0.75 = 0.2 + 0.1 + 0.025 + 0.15
    assert _one(db_conn, "select sag.memory_score('hybrid', 0.4, 0.5, 0.25, 0.75)") == pytest.approx(0.475)
    for strategy, expected in [("text_overlap", 0.4), ("graph_distance", 0.5), ("temporal", 0.25),
                               ("reference_count", 0.75)]:
        assert _one(db_conn, "select sag.memory_score(%s, 0.4, 0.5, 0.25, 0.75)", [strategy]) == pytest.approx(expected)
    assert _one(db_conn, "select sag.memory_score('hybrid', 1, 1, 1, 1, array[1, 0, 0, 0])") == 1
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="unknown scoring strategy"):
        db_conn.execute("select sag.memory_score('magic', 0, 0, 0, 0)")


def test_keywords_drop_stop_words_and_single_characters(db_conn: psycopg.Connection) -> None:
    assert _one(db_conn, "select sag.extract_keywords('Who founded the Apple company? A B apple')") == \
        ["founded", "apple", "company"]


def _corpus(conn: psycopg.Connection) -> dict[str, int]:
    """d1 "Apple history": apple was founded by steve jobs (keys Apple, Steve Jobs);
    d2 "Pixar": pixar films (keys Steve Jobs, Pixar).  Co-occurrence: Apple-Steve Jobs 0.5, Steve Jobs-Pixar 0.5."""
    g = GraphBuilder(conn)
    src = g.source("s")
    apple, jobs, pixar = g.key(src, "Apple"), g.key(src, "Steve Jobs"), g.key(src, "Pixar")
    d1, d2 = g.document(src, "d1", "Apple history"), g.document(src, "d2", "Pixar")
    g.links(g.event(g.chunk(d1, "apple was founded by steve jobs", None), "founding", None), apple, jobs)
    g.links(g.event(g.chunk(d2, "pixar films", None), "films", None), jobs, pixar)
    return {"d1": d1, "d2": d2}


def _recall(conn: psycopg.Connection, **kw: object) -> list[tuple[object, ...]]:
    args = "".join(f", {name} => %s" for name in kw)
    return [tuple(pytest.approx(v, abs=1e-5) if isinstance(v, float) else v for v in row) for row in conn.execute(
        f"select uri, score, overlap, graph, temporal, reference, via_content, via_graph from sag.recall('apple'{args})",
        list(kw.values())).fetchall()]


def test_two_channel_recall_scores_and_records(db_conn: psycopg.Connection) -> None:
    _corpus(db_conn)
    # d1 overlap: query {ap pp pl le}; title "Apple history" 10 bigrams -> 8/14; summary '' -> 0; body (20
    # bigrams) -> 8/24: (3 * 8/14 + 1/3) / 6 = 0.341270.  graph: Apple is named (1).  temporal: changed now (1).
    # d2: no overlap; graph: Steve Jobs at 1 hop, 0.5 / 1 = 0.5 (Pixar: 0.25 / 2).  Nothing recalled yet.
    # hybrid d1 = 0.5 * 0.341270 + 0.2 + 0.1 = 0.470635; d2 = 0.2 * 0.5 + 0.1 = 0.2.
    o1 = (3 * 8 / 14 + 1 / 3) / 6
    first = [("d1", 0.5 * o1 + 0.3, o1, 1.0, 1.0, 0.0, True, True), ("d2", 0.2, 0.0, 0.5, 1.0, 0.0, False, True)]
    assert _recall(db_conn) == first
    # Both were recorded once: reference n / (n + 1) = 0.5 adds 0.2 * 0.5 = 0.1 to each.
    assert _recall(db_conn, record=False) == [(u, s + 0.1, o, g, t, 0.5, c, gr) for u, s, o, g, t, _, c, gr in first]
    assert db_conn.execute("select d.uri, r.recall_count, r.total_score from sag.recall_stats r "
                           "join sag.documents d on d.id = r.document_id order by 1").fetchall() == \
        [("d1", 1, pytest.approx(0.5 * o1 + 0.3)), ("d2", 1, pytest.approx(0.2))]
    assert [r[0] for r in _recall(db_conn, channels="knowledge", record=False)] == ["d1"]
    assert [r[0] for r in _recall(db_conn, channels="graph", strategy="graph_distance", record=False)] == ["d1", "d2"]
    assert [r[0] for r in _recall(db_conn, min_score=0.4, record=False)] == ["d1"]
    assert [r[0] for r in _recall(db_conn, top_n=1, record=False)] == ["d1"]
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="channels"):
        db_conn.execute("select * from sag.recall('apple', channels => 'all')")


def test_record_chunk_recall_counts_a_document_once(db_conn: psycopg.Connection) -> None:
    g = GraphBuilder(db_conn)
    d = g.document(g.source("s"), "d")
    c1, c2 = g.chunk(d, "one", None), g.chunk(d, "two", None)
    assert _one(db_conn, "select sag.record_chunk_recall(%s, array[0.2, 0.7])", [[c1, c2]]) == 1
    assert db_conn.execute("select recall_count, total_score from sag.recall_stats").fetchone() == (1, pytest.approx(0.7))
    # A batch of two searches: the first returned both chunks (best 0.4), the second one (0.3): 1 + 2 recalls,
    # 0.7 + 0.4 + 0.3 = 1.4 in all.
    assert _one(db_conn, "select sag.record_chunk_recall(%s, array[0.1, 0.4, 0.3], array[0, 0, 1])",
                [[c1, c2, c1]]) == 1
    assert db_conn.execute("select recall_count, total_score from sag.recall_stats").fetchone() == (3, pytest.approx(1.4))


def _aged(conn: psycopg.Connection) -> dict[str, int]:
    """d1 changed 10 days ago, never recalled; d2 changed 100 days ago, recalled 3 times for 1.8 in all,
    last 30 days ago; d3 changed 1 day ago, never recalled.  Each has a chunk and an event with its own key."""
    g = GraphBuilder(conn)
    src = g.source("s")
    ids: dict[str, int] = {}
    for uri, days in [("d1", 10), ("d2", 100), ("d3", 1)]:
        ids[uri] = g.document(src, uri)
        g.links(g.event(g.chunk(ids[uri], f"text of {uri}", None), uri, None), g.key(src, uri), g.key(src, "shared " + uri))
        conn.execute("update sag.documents set updated_at = now() - make_interval(days => %s) where id = %s", [days, ids[uri]])
    conn.execute("insert into sag.recall_stats (source_id, document_id, recall_count, total_score, last_recall_at) "
                 "values (%s, %s, 3, 1.8, now() - interval '30 days')", [src, ids["d2"]])

    conn.execute("select sag.flush_term_stats()")
    return ids


def _candidates(conn: psycopg.Connection, policy: str, **kw: object) -> list[tuple[str, str, float]]:
    args = "".join(f", {name} => %s" for name in kw)
    return [(u, r, pytest.approx(v, abs=1e-6)) for u, r, v in conn.execute(
        f"select uri, reason, value from sag.eviction_candidates(%s{args})", [policy, *kw.values()]).fetchall()]


def test_eviction_policies(db_conn: psycopg.Connection) -> None:
    _aged(db_conn)
    # Recall values (0.3 ln(1 + n) + 0.5 avg + 0.2 * 0.5 ^ (age / 30 days)):
    v1 = 0.2 * 0.5 ** (10 / 30)                              # 0.158740
    v2 = 0.3 * math.log(4) + 0.5 * 0.6 + 0.2 * 0.5           # 0.815888
    assert _candidates(db_conn, "none") == []
    # Last activity: d1 10 days, d2 30 days (its last recall), d3 1 day.
    assert _candidates(db_conn, "ttl", ttl="20 days") == [("d2", "ttl", v2)]
    assert _candidates(db_conn, "ttl", ttl="50 days") == []
    # Capacity keeps the 2 most recently changed (d3, d1).
    assert _candidates(db_conn, "capacity", max_items=2) == [("d2", "capacity", v2)]
    # Recall-based keeps the 2 most valuable: d2 0.8159, d3 0.2 * 0.5 ^ (1/30) = 0.1954; d1 0.1587 goes.
    assert _candidates(db_conn, "recall_based", max_items=2) == [("d1", "recall_based", v1)]
    # Hybrid: ttl takes d2, then capacity 1 over d1, d3 keeps d3.
    assert _candidates(db_conn, "hybrid", ttl="20 days", max_items=1) == [("d1", "capacity", v1), ("d2", "ttl", v2)]
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="max_items"), db_conn.transaction():
        db_conn.execute("select * from sag.eviction_candidates('capacity')")


@pytest.mark.parametrize(("policy", "args", "left"), [
    ("ttl", {"ttl": "20 days"}, ["d1", "d3"]),
    ("capacity", {"max_items": 1}, ["d3"]),
    ("recall_based", {"max_items": 1}, ["d2"]),
    ("hybrid", {"ttl": "20 days", "max_items": 1}, ["d3"]),
])
def test_evict_deletes_like_delete_and_keeps_integrity(db_conn: psycopg.Connection, policy: str,
                                                      args: dict[str, object], left: list[str]) -> None:
    _aged(db_conn)
    named = "".join(f", {name} => %s" for name in args)
    dry = db_conn.execute(f"select uri from sag.evict(%s{named})", [policy, *args.values()]).fetchall()
    assert db_conn.execute("select count(*) from sag.documents").fetchone() == (3,)   # a dry run by default
    gone = db_conn.execute(f"select uri from sag.evict(%s{named}, dry_run => false)", [policy, *args.values()]).fetchall()
    assert gone == dry
    assert [u for (u,) in db_conn.execute("select uri from sag.documents order by uri").fetchall()] == left
    # Keys, co-occurrence relations and the BM25 statistics went with the documents.
    assert sorted(n for (n,) in db_conn.execute("select name from sag.keys").fetchall()) == \
        sorted([u for u in left] + [f"shared {u}" for u in left])
    assert db_conn.execute("select count(*) from sag.relations").fetchone() == (len(left),)
    assert {k: v for k, v in violations(db_conn).items() if v} == {}

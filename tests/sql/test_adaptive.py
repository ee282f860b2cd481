"""What the retrieval derives from the data (sql/idempotent/021, 030, 031): calibration, key weight, coverage.

Expected numbers worked out by hand.
"""

from __future__ import annotations

import math

import psycopg
import pytest

from tests.sql.graph_builder import GraphBuilder


def a(x: float) -> object:
    return pytest.approx(x, abs=1e-9)


def test_key_weight_is_specificity_times_type(db_conn: psycopg.Connection) -> None:
    def weight(key_type: str, events: int, corpus: int | None, types: str | None = None) -> float:
        row = db_conn.execute("select sag_internal._key_weight(%s, %s, %s, %s::jsonb)", [key_type, events, corpus, types])
        return float(row.fetchone()[0])

    # A key of one event in 100: ln(1 + 100) / ln(1 + 100) = 1; in every event: ln 2 / ln 101.
    assert weight("person", 1, 100) == a(1.0)
    assert weight("person", 100, 100) == a(math.log(2) / math.log(101))
    # Default type weights (dataflow-activation): topic 0.8, time and tag 0.6, action 0.5, others 1.
    assert weight("topic", 100, 100) == a(0.8 * math.log(2) / math.log(101))
    assert weight("action", 1, 100) == a(0.5) and weight("time", 1, 100) == a(0.6)
    assert weight("anything", 1, 100) == a(1.0)
    # The source's own weights win; no corpus size (no calibration): no specificity.
    assert weight("topic", 100, 100, '{"topic": 0.25}') == a(0.25 * math.log(2) / math.log(101))
    assert weight("person", 50, None) == a(1.0)


def test_question_coverage(db_conn: psycopg.Connection) -> None:
    g = GraphBuilder(db_conn)
    s = g.source("one")
    doc = g.document(s, "one/a.md")
    c1 = g.chunk(doc, "alpha beta", (1, 0, 0))
    c2 = g.chunk(doc, "alpha gamma", (0, 1, 0))
    g.chunk(doc, "delta", (0, 0, 1))
    db_conn.execute("select sag.flush_term_stats()")
    # N = 3; idf = ln(1 + (N - df + 0.5) / (df + 0.5)): alpha (df 2) ln 1.6, beta (df 1) ln(1 + 2.5/1.5),
    # zeta (no chunk holds it) ln(1 + 3.5/0.5) = ln 8.
    alpha, beta, zeta = math.log(1.6), math.log(1 + 2.5 / 1.5), math.log(8)
    total = alpha + beta + zeta

    def coverage(tokens: list[str], chunks: list[int]) -> float:
        return float(db_conn.execute("select sag.question_coverage(%s, %s, %s)", [tokens, chunks, [s]]).fetchone()[0])

    assert coverage(["alpha", "beta", "zeta"], [c1, c2]) == a((alpha + beta) / total)   # c1 holds alpha and beta
    assert coverage(["alpha", "beta", "zeta"], [c2]) == a(alpha / total)
    assert coverage(["alpha", "alpha", "beta"], [c1]) == a(1.0)                          # distinct terms
    assert coverage(["alpha"], []) == 0 and coverage([], [c1]) == 0


def test_calibration_per_source(db_conn: psycopg.Connection) -> None:
    g = GraphBuilder(db_conn)
    big, small = g.source("big"), g.source("small")
    chunk = g.chunk(g.document(big, "big/a.md"), "text", (1, 0, 0))
    for _ in range(3):
        g.event(chunk, "e", (1, 0, 0))
    # 200 keys with 1..200 events: the 99th percentile (percentile_disc) is 198.  The small source's keys have
    # one event each: its limit is the floor, 20.
    db_conn.execute("insert into sag.keys (source_id, type, name, normalized, value_string, event_count) "
                    "select %s, 'topic', 'k' || i, 'k' || i, 'k' || i, i from generate_series(1, 200) i", [big])
    db_conn.execute("insert into sag.keys (source_id, type, name, normalized, value_string, event_count) "
                    "select %s, 'topic', 's' || i, 's' || i, 's' || i, 1 from generate_series(1, 50) i", [small])
    # No calibration yet: no corpus size, the old limit.
    assert db_conn.execute("select * from sag.calibration()").fetchone() == (None, 20)
    stored = db_conn.execute("select sag.calibrate()").fetchone()[0]
    assert stored == {str(big): {"events": 3, "hub_events": 198}, str(small): {"events": 0, "hub_events": 20}}
    assert db_conn.execute("select * from sag.calibration(%s)", [[big]]).fetchone() == (3, 198)
    assert db_conn.execute("select * from sag.calibration(%s)", [[small]]).fetchone() == (0, 20)
    assert db_conn.execute("select * from sag.calibration()").fetchone() == (3, 198)   # all: the largest limit

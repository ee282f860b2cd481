"""Memory recall, its statistics and eviction (sql/idempotent/053-055): one typed function per SQL function."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import psycopg

from .graph import sql_errors

__all__ = ["Eviction", "Recalled", "evict", "extract_keywords", "memory_score", "memory_stats", "recall",
           "record_chunk_recall", "record_recall", "text_overlap"]


@dataclass(frozen=True)
class Recalled:
    """A recalled document with its score and the score's breakdown (seed §2 ScoreBreakdown)."""

    document_id: int
    uri: str
    title: str
    score: float
    overlap: float
    graph: float
    temporal: float
    reference: float
    via_content: bool
    via_graph: bool

    def to_dict(self) -> dict[str, Any]:
        return {"uri": self.uri, "title": self.title, "score": self.score,
                "breakdown": {"overlap": self.overlap, "graph": self.graph, "temporal": self.temporal,
                              "reference": self.reference},
                "via_content": self.via_content, "via_graph": self.via_graph}


@dataclass(frozen=True)
class Eviction:
    document_id: int
    source_id: int
    uri: str
    reason: str
    value: float


def _ids(source_ids: Sequence[int] | None) -> list[int] | None:
    return list(source_ids) if source_ids is not None else None


def extract_keywords(conn: psycopg.Connection, query: str, source_ids: Sequence[int] | None = None) -> list[str]:
    """``sag.extract_keywords``."""
    row = conn.execute("select sag.extract_keywords(query => %s, source_ids => %s)", [query, _ids(source_ids)]).fetchone()
    return list(row[0]) if row else []


def text_overlap(conn: psycopg.Connection, query: str, content: str) -> float:
    """``sag.text_overlap``: Dice over character bigrams."""
    row = conn.execute("select sag.text_overlap(query => %s, content => %s)", [query, content]).fetchone()
    return float(row[0]) if row else 0.0


def memory_score(conn: psycopg.Connection, strategy: str, overlap: float, graph: float, temporal: float,
                 reference: float, weights: Sequence[float] = (0.5, 0.2, 0.1, 0.2)) -> float:
    """``sag.memory_score``."""
    with sql_errors():
        row = conn.execute("select sag.memory_score(strategy => %s, overlap => %s, graph => %s, temporal => %s, "
                           "reference => %s, weights => %s::float8[])",
                           [strategy, overlap, graph, temporal, reference, list(weights)]).fetchone()
    return float(row[0]) if row else 0.0


def recall(conn: psycopg.Connection, query: str, *, source_ids: Sequence[int] | None = None,
           channels: str = "hybrid", strategy: str = "hybrid", min_score: float = 0.0, top_n: int = 10,
           depth: int = 2, weights: Sequence[float] = (0.5, 0.2, 0.1, 0.2), half_life: timedelta = timedelta(days=30),
           record: bool = True) -> list[Recalled]:
    """``sag.recall``: the two-channel retriever (records the results' recall statistics unless ``record`` is off)."""
    with sql_errors():
        rows = conn.execute(
            "select document_id, uri, title, score, overlap, graph, temporal, reference, via_content, via_graph "
            "from sag.recall(query => %s, source_ids => %s, channels => %s, strategy => %s, min_score => %s, "
            "top_n => %s, depth => %s, weights => %s::float8[], half_life => %s, record => %s)",
            [query, _ids(source_ids), channels, strategy, min_score, top_n, depth, list(weights), half_life,
             record]).fetchall()
    return [Recalled(int(r[0]), r[1], r[2], *(float(x) for x in r[3:8]), bool(r[8]), bool(r[9])) for r in rows]


def record_recall(conn: psycopg.Connection, document_ids: Sequence[int], scores: Sequence[float],
                  searches: Sequence[int] | None = None) -> int:
    """``sag.record_recall``."""
    row = conn.execute("select sag.record_recall(document_ids => %s, scores => %s::float8[], searches => %s::int[])",
                       [list(document_ids), list(scores), list(searches) if searches is not None else None]).fetchone()
    return int(row[0]) if row else 0


def record_chunk_recall(conn: psycopg.Connection, chunk_ids: Sequence[int], scores: Sequence[float],
                        searches: Sequence[int] | None = None) -> int:
    """``sag.record_chunk_recall``, committed without waiting for the disk: a statistic lost in an OS crash
    is not worth an fsync (synchronous_commit off for this transaction only)."""
    row = conn.execute("select set_config('synchronous_commit', 'off', true), "
                       "sag.record_chunk_recall(chunk_ids => %s, scores => %s::float8[], searches => %s::int[])",
                       [list(chunk_ids), list(scores), list(searches) if searches is not None else None]).fetchone()
    return int(row[1]) if row else 0


def memory_stats(conn: psycopg.Connection, source_ids: Sequence[int] | None = None,
                 limit: int = 10) -> list[dict[str, Any]]:
    """``sag.memory_stats``: the most recalled documents."""
    rows = conn.execute("select uri, recall_count, average_score, last_recall_at, value "
                        "from sag.memory_stats(source_ids => %s, lim => %s)", [_ids(source_ids), limit]).fetchall()
    return [{"uri": u, "recall_count": int(n), "average_score": float(a or 0), "last_recall_at": t.isoformat(),
             "value": float(v)} for u, n, a, t, v in rows]


def evict(conn: psycopg.Connection, policy: str, *, source_ids: Sequence[int] | None = None,
          ttl: timedelta | None = None, max_items: int | None = None, weights: Sequence[float] = (0.3, 0.5, 0.2),
          half_life: timedelta = timedelta(days=30), dry_run: bool = True) -> list[Eviction]:
    """``sag.evict``: the documents the policy evicts; deleted (as ``delete`` does) unless ``dry_run``."""
    with sql_errors():
        rows = conn.execute(
            "select document_id, source_id, uri, reason, value from sag.evict(policy => %s, source_ids => %s, "
            "ttl => %s, max_items => %s, weights => %s::float8[], half_life => %s, dry_run => %s)",
            [policy, _ids(source_ids), ttl, max_items, list(weights), half_life, dry_run]).fetchall()
    return [Eviction(int(d), int(s), u, r, float(v)) for d, s, u, r, v in rows]

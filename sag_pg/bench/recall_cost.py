"""`sag-pg memory bench`: what the knowledge-graph memory costs and finds on a benchmark folder.

One fresh database: the ingest (co-occurrence relations are made by sag.store_document as every document
is stored), the relation figures, then every question through ``SAG.search`` with the recall
statistics recorded and without, interleaved question by question (A B, B A, ...) so drift on a shared
machine falls on both alike; p50 / p95 of each.  Optionally the ingest again without the co-occurrence
relations (sag.cooccurrence = off), for their cost.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg import sql

from ..client import SAG
from ..config import Settings
from ..db import migrate
from ..db.connection import resolve_dsn
from .database import temporary_database
from .dataset import Dataset
from .metrics import percentile

__all__ = ["measure_recall_cost"]

SOURCE = "default"


def _relation_figures(dsn: str) -> dict[str, Any]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "select count(*), coalesce(sum(evidence_count), 0), count(*) filter (where evidence_count >= 2), "
            "(select count(*) from sag.keys), (select count(*) from sag.events) "
            "from sag.relations where origin = 'cooccurrence'").fetchone()
        assert row is not None
        top = conn.execute(
            "select h.name, t.name, r.evidence_count, r.weight from sag.relations r "
            "join sag.keys h on h.id = r.head_key_id join sag.keys t on t.id = r.tail_key_id "
            "order by r.evidence_count desc, r.id limit 5").fetchall()
    return {"relations": int(row[0]), "evidence": int(row[1]), "relations_with_2plus_events": int(row[2]),
            "keys": int(row[3]), "events": int(row[4]),
            "strongest": [{"head": h, "tail": t, "events": int(n), "weight": round(float(w), 3)} for h, t, n, w in top]}


def _recording_alone(sag: SAG, questions: list[str], top_n: int) -> dict[str, float]:
    """What SAG.search adds after the search (queueing its chunks), and the background writer's statement
    per search when it writes one search at a time (its worst case)."""
    sag.record_recalls = False
    results = [sag.search(q, source=SOURCE, top_n=top_n) for q in questions]
    queued, written = [], []
    for result in results:
        started = time.perf_counter()
        sag.memory.note_search(result)
        queued.append((time.perf_counter() - started) * 1000.0)
        started = time.perf_counter()
        sag.memory.flush()
        written.append((time.perf_counter() - started) * 1000.0)
    return {"queue_p50": round(percentile(queued, 50), 4), "write_p50": round(percentile(written, 50), 3),
            "write_p95": round(percentile(written, 95), 3)}


def _recall_latency(sag: SAG, questions: list[str], top_n: int) -> dict[str, float]:
    """SAG.recall (both channels, hybrid scoring, not recorded) per question."""
    times = []
    for q in questions:
        started = time.perf_counter()
        sag.recall(q, source=SOURCE, top_n=top_n, record=False)
        times.append((time.perf_counter() - started) * 1000.0)
    return {"p50": round(percentile(times, 50), 2), "p95": round(percentile(times, 95), 2)}


def _ingest(sag: SAG, dataset: Dataset) -> float:
    report = sag.ingest_files([dataset.corpus], source=SOURCE)
    return report.seconds


def measure_recall_cost(settings: Settings, dataset: Dataset, *, rounds: int = 3, top_n: int = 10,
                        compare_ingest: bool = False,
                        progress: Callable[[str], None] = lambda _: None) -> dict[str, Any]:
    result: dict[str, Any] = {"dataset": dataset.name, "questions": len(dataset.questions), "rounds": rounds}
    with temporary_database(resolve_dsn(settings), dataset.name) as dsn:
        migrate.upgrade(dsn)
        with SAG(settings=settings.with_(database_url=dsn)) as sag:
            progress("ingest")
            result["ingest_seconds"] = round(_ingest(sag, dataset), 2)
            result["cooccurrence"] = _relation_figures(dsn)
            questions = [q.question for q in dataset.questions]
            for q in questions[:3]:  # warm-up: plans, caches, the kept connection
                sag.search(q, source=SOURCE, top_n=top_n)
            times: dict[bool, list[float]] = {True: [], False: []}
            paired: list[float] = []
            for r in range(rounds):
                progress(f"search round {r + 1}/{rounds}")
                for i, q in enumerate(questions):
                    order = (True, False) if (i + r) % 2 == 0 else (False, True)
                    pair: dict[bool, float] = {}
                    for record in order:
                        sag.record_recalls = record
                        started = time.perf_counter()
                        sag.search(q, source=SOURCE, top_n=top_n)
                        pair[record] = (time.perf_counter() - started) * 1000.0
                        times[record].append(pair[record])
                    paired.append(pair[True] - pair[False])
            result["paired_difference_ms_p50"] = round(percentile(paired, 50), 3)
            result["recording_alone_ms"] = _recording_alone(sag, questions, top_n)
            result["recall_ms"] = _recall_latency(sag, questions, top_n)
            result["search_ms"] = {
                ("with_recall_stats" if record else "without_recall_stats"):
                    {"p50": round(percentile(t, 50), 2), "p95": round(percentile(t, 95), 2), "n": len(t)}
                for record, t in times.items()}
            with_p50 = result["search_ms"]["with_recall_stats"]["p50"]
            without_p50 = result["search_ms"]["without_recall_stats"]["p50"]
            result["p50_change_percent"] = round(100.0 * (with_p50 - without_p50) / without_p50, 2)
    if compare_ingest:
        with temporary_database(resolve_dsn(settings), dataset.name + "_nocooc") as dsn:
            migrate.upgrade(dsn)
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute(sql.SQL("alter database {} set sag.cooccurrence = off").format(
                    sql.Identifier(conn.info.dbname)))
            with SAG(settings=settings.with_(database_url=dsn)) as sag:
                progress("ingest without the co-occurrence relations")
                result["ingest_seconds_without_cooccurrence"] = round(_ingest(sag, dataset), 2)
    return result

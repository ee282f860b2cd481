"""Issue #15 point 1: a bulk load, two ingests of overlapping corpora and a search loop at the same time.

What must hold: no deadlock anywhere (the database's own counter), every search answers within its timeout and
none builds an index, every document is stored, and the keys are those of the same ingests run one after another.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import threading
import time
from pathlib import Path

import psycopg
import pytest

from sag_pg import SAG, Settings
from sag_pg.search.engine import SEARCH_TIMEOUT_MS

from .concurrency_corpus import cli_env, ingest_cmd, write_corpus
from .integrity import violations

BULK_DOCS = 300
SHARED_A = (0, 120)  # the two normal ingests overlap on documents 60-119 (same uris, same keys)
SHARED_B = (60, 180)


def _deadlocks(dsn: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("select pg_stat_clear_snapshot()")
        row = conn.execute("select deadlocks from pg_stat_database where datname = current_database()").fetchone()
    return int(row[0]) if row else 0


def _keys(dsn: str, source: str) -> set[tuple[str, str, int]]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute("select k.type, k.normalized, k.event_count from sag.keys k join sag.sources s "
                            "on s.id = k.source_id where s.name = %s", [source]).fetchall()
    return {(t, n, c) for t, n, c in rows}


def _start(dsn: str, home: Path, corpus: Path, source: str, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(ingest_cmd("--source", source, *extra, str(corpus)), env=cli_env(dsn, home),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(proc: subprocess.Popen[str], timeout: float) -> dict[str, object]:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err
    return json.loads(out)


def _ingest_all(dsn: str, home: Path, corpora: dict[str, Path], prefix: str, *, together: bool) -> list[dict]:
    """The bulk load and the two overlapping ingests, one after another or all at once."""
    runs = [(corpora["bulk"], f"{prefix}-load", "--bulk"), (corpora["a"], f"{prefix}-shared"),
            (corpora["b"], f"{prefix}-shared")]
    if not together:
        return [_finish(_start(dsn, home, *run), 120) for run in runs]
    procs = [_start(dsn, home, *run) for run in runs]
    return [_finish(proc, 120) for proc in procs]


@pytest.mark.slow  # about 45 s on a quiet machine: two runs of three ingests
def test_bulk_load_two_ingests_and_searches_together(db_dsn: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    corpora = {"bulk": write_corpus(tmp_path / "bulk.jsonl", 0, BULK_DOCS, prefix="bulk"),
               "a": write_corpus(tmp_path / "a.jsonl", *SHARED_A), "b": write_corpus(tmp_path / "b.jsonl", *SHARED_B)}
    settings = Settings(database_url=db_dsn, home=home)
    with SAG(settings=settings) as sag:
        sag.ingest_files([write_corpus(tmp_path / "other.jsonl", 0, 20, prefix="other")], source="other")

    serial = _ingest_all(db_dsn, home, corpora, "serial", together=False)
    before = _deadlocks(db_dsn)

    latencies: list[float] = []
    errors: list[str] = []
    stop = threading.Event()

    def search_loop() -> None:
        while not stop.is_set():
            started = time.perf_counter()
            try:
                with SAG(settings=settings) as client:  # a new client each time, as a CLI search is
                    client.search("Where did Ada Lovelace meet Alan Turing?", source="other", top_n=3)
            except Exception as exc:  # noqa: BLE001 - every failure is a finding, reported below
                errors.append(f"{type(exc).__name__}: {exc}")
            latencies.append(time.perf_counter() - started)

    searcher = threading.Thread(target=search_loop, daemon=True)
    started = time.perf_counter()
    searcher.start()
    try:
        together = _ingest_all(db_dsn, home, corpora, "together", together=True)
    finally:
        stop.set()
        searcher.join(timeout=60)
    elapsed = time.perf_counter() - started
    time.sleep(0.6)  # backends report their statistics when idle (at most every 500 ms)
    deadlocks = _deadlocks(db_dsn) - before

    print(f"\nconcurrent run {elapsed:.1f} s: {len(latencies)} searches, p50 {statistics.median(latencies) * 1000:.0f} ms,"
          f" max {max(latencies) * 1000:.0f} ms; deadlocks {deadlocks}; bulk index build "
          f"{together[0]['timings'].get('index', 0):.2f} s")
    assert deadlocks == 0
    assert errors == []
    assert latencies and max(latencies) < SEARCH_TIMEOUT_MS / 1000
    assert [r["failed"] for r in together] == [0, 0, 0]
    assert together[0]["documents"] == BULK_DOCS
    # The overlap is stored once: by whichever ingest came first (the other skips it or replaces it, same text).
    with psycopg.connect(db_dsn) as conn:
        counts = dict(conn.execute("select s.name, count(d.id) from sag.sources s join sag.documents d "
                                   "on d.source_id = s.id group by s.name").fetchall())
        indexes = conn.execute("select count(*) from pg_indexes where schemaname = 'sag' "
                               "and indexname like '%embedding_hnsw'").fetchone()
    assert counts["together-shared"] == counts["serial-shared"] == 180
    assert indexes == (3,)  # the bulk load rebuilt what it dropped
    assert _keys(db_dsn, "together-shared") == _keys(db_dsn, "serial-shared")
    assert {(t, n) for t, n, _ in _keys(db_dsn, "together-load")} == {(t, n) for t, n, _ in _keys(db_dsn, "serial-load")}
    assert serial[0]["documents"] == BULK_DOCS
    with psycopg.connect(db_dsn) as conn:
        assert violations(conn) == {}

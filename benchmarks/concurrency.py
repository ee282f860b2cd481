"""Concurrent clients around a bulk load (issue #15 point 1 and 5), with figures.

    .venv/bin/python benchmarks/concurrency.py                 # 1,200-passage bulk load, as in the issue
    .venv/bin/python benchmarks/concurrency.py --bulk-docs 1890

In a fresh database (``sag_bench_concurrency_<pid>`` on the configured server): a source ``other`` is ingested
first; then ``sag-pg ingest --bulk`` of MuSiQue passages, two ``sag-pg ingest`` of overlapping HotpotQA slices
(the same source; smaller than what is stored, so not bulk loads themselves) and a loop of searches on ``other`` (a new client each, in this process) run together.
Printed: wall time, the searches' count and p50/p95/max latency, search errors, deadlocks (pg_stat_database),
the ingests' failures, the bulk load's index build.  Then a bulk load is killed (kill -9) after 300 documents:
printed are the missing indexes after the kill and after a search, and the time the next writer (a one-document
ingest) takes to rebuild them.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import psycopg

from sag_pg import SAG, Settings
from sag_pg.bench.database import temporary_database
from sag_pg.db import ingest as store
from sag_pg.db.connection import resolve_dsn

BENCH = Path("/work/shared/bench")
QUERIES = ["Who founded the company?", "Where was the album recorded?", "When did the war end?",
           "Which river flows through the city?"]


def _slice(source: Path, target: Path, start: int, stop: int) -> Path:
    with source.open() as lines, target.open("w") as out:
        out.writelines(itertools.islice(lines, start, stop))
    return target


def _ingest(dsn: str, corpus: Path, source: str, *extra: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SAG_")}
    return subprocess.Popen([sys.executable, "-m", "sag_pg", "ingest", "--quiet", "--json", "--source", source,
                             *extra, str(corpus)], env=dict(env, SAG_DATABASE_URL=dsn),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _one(conn: psycopg.Connection, query: str) -> object:
    row = conn.execute(query).fetchone()
    return row[0] if row else None


def _missing_indexes(dsn: str) -> int:
    with psycopg.connect(dsn) as conn:
        return store.missing_vector_indexes(conn)


def together(dsn: str, work: Path, bulk_docs: int) -> None:
    settings = Settings(database_url=dsn)
    with SAG(settings=settings) as sag:
        sag.ingest_files([_slice(BENCH / "hotpotqa-train100/corpus.jsonl", work / "other.jsonl", 600, 994)],
                         source="other")
    bulk = _slice(BENCH / "musique-train100/corpus.jsonl", work / "bulk.jsonl", 0, bulk_docs)
    first = _slice(BENCH / "hotpotqa-train100/corpus.jsonl", work / "a.jsonl", 0, 300)
    second = _slice(BENCH / "hotpotqa-train100/corpus.jsonl", work / "b.jsonl", 150, 450)
    with psycopg.connect(dsn, autocommit=True) as conn:
        deadlocks_before = int(_one(conn, "select deadlocks from pg_stat_database "  # type: ignore[arg-type]
                                          "where datname = current_database()"))
    latencies: list[float] = []
    errors: list[str] = []
    stop = threading.Event()

    def searches() -> None:
        for query in itertools.cycle(QUERIES):
            if stop.is_set():
                return
            started = time.perf_counter()
            try:
                with SAG(settings=settings) as client:
                    client.search(query, source="other", top_n=5)
            except Exception as exc:  # noqa: BLE001 - counted and printed
                errors.append(f"{type(exc).__name__}: {exc}")
            latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    searcher = threading.Thread(target=searches, daemon=True)
    searcher.start()
    procs = [_ingest(dsn, bulk, "load", "--bulk"), _ingest(dsn, first, "shared"), _ingest(dsn, second, "shared")]
    results = [proc.communicate() for proc in procs]
    stop.set()
    searcher.join()
    wall = time.perf_counter() - started
    time.sleep(1)
    with psycopg.connect(dsn, autocommit=True) as conn:
        deadlocks = int(_one(conn, "select deadlocks from pg_stat_database "  # type: ignore[arg-type]
                                   "where datname = current_database()")) - deadlocks_before
    reports = [json.loads(out) if proc.returncode == 0 else {"error": err.strip()[-300:]}
               for proc, (out, err) in zip(procs, results, strict=True)]
    ms = sorted(x * 1000 for x in latencies)
    print(f"together: {wall:.1f} s wall; bulk {bulk_docs} docs + 2 x 300 overlapping docs (not bulk: fewer than the 394 stored) + search loop")
    print(f"  searches: {len(ms)}, p50 {statistics.median(ms):.0f} ms, p95 {ms[int(0.95 * (len(ms) - 1))]:.0f} ms, "
          f"max {ms[-1]:.0f} ms, errors {len(errors)} {errors[:2]}")
    print(f"  deadlocks: {deadlocks}")
    for name, report in zip(("bulk", "ingest a", "ingest b"), reports, strict=True):
        if "error" in report:
            print(f"  {name}: FAILED {report['error']}")
        else:
            print(f"  {name}: {report['documents']} stored, {report['skipped']} skipped, {report['failed']} failed, "
                  f"{report['seconds']:.1f} s, index build {report['timings'].get('index', 0):.2f} s")


def killed_bulk_load(dsn: str, work: Path, bulk_docs: int) -> None:
    corpus = _slice(BENCH / "musique-train100/corpus.jsonl", work / "bulk2.jsonl", 0, bulk_docs)
    proc = _ingest(dsn, corpus, "load2", "--bulk")
    with psycopg.connect(dsn, autocommit=True) as conn:
        while proc.poll() is None and int(_one(conn, "select count(*) from sag.documents d join sag.sources s "  # type: ignore[arg-type]
                                                      "on s.id = d.source_id where s.name = 'load2'")) < 300:
            time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    print(f"killed bulk load: {_missing_indexes(dsn)} indexes missing after kill -9")
    with SAG(settings=Settings(database_url=dsn)) as sag:
        sag.search(QUERIES[0], source="other")
    print(f"  after a search: {_missing_indexes(dsn)} missing (searches never build)")
    started = time.perf_counter()
    with SAG(settings=Settings(database_url=dsn)) as sag:
        report = sag.ingest_text("The next writer rebuilds the indexes.", uri="next-writer", source="other")
    print(f"  next writer (a one-document ingest): {time.perf_counter() - started:.2f} s, of which index rebuild "
          f"{report.timings.get('index', 0):.2f} s; {_missing_indexes(dsn)} missing after it")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bulk-docs", type=int, default=1200)
    args = parser.parse_args()
    work = Path(f"/tmp/sag-bench-concurrency-{os.getpid()}")
    work.mkdir(exist_ok=True)
    with temporary_database(resolve_dsn(Settings.from_env()), "concurrency") as dsn:
        together(dsn, work, args.bulk_docs)
        killed_bulk_load(dsn, work, args.bulk_docs)


if __name__ == "__main__":
    main()

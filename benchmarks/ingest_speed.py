"""Ingestion speed with the offline defaults, and where the time goes.

    .venv/bin/python benchmarks/ingest_speed.py                                   # MuSiQue corpus, 3 runs
    .venv/bin/python benchmarks/ingest_speed.py /work/shared/bench/hotpotqa-train100/corpus.jsonl --runs 5

Each run ingests the file into a fresh database (``sag_bench_ingest_<pid>`` on the configured server, as
``sag-pg bench`` does) exactly as ``sag-pg ingest FILE`` would, then re-ingests it unchanged.  Printed per run:
wall seconds of the load and of the re-ingest, the ingest report's stage timings (Python stages run in
the preparation worker, overlapped with storage; ``store`` is the main process waiting on
``sag.ingest_document``, ``index`` the HNSW builds of a bulk load), and PostgreSQL's own time per SQL
function (``track_functions``: total ms and self ms, i.e. without the functions it calls).  The median run
is summarised last.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import psycopg

from sag_pg import SAG, Settings
from sag_pg.bench.database import temporary_database
from sag_pg.db.connection import resolve_dsn
from sag_pg.ingest.readers import read_inputs

DEFAULT_CORPUS = Path("/work/shared/bench/musique-train100/corpus.jsonl")


def one_run(server_dsn: str, corpus: Path) -> dict[str, object]:
    with temporary_database(server_dsn, "ingest") as dsn:
        with psycopg.connect(dsn, autocommit=True) as conn:
            dbname = conn.info.dbname
            conn.execute(psycopg.sql.SQL("alter database {} set track_functions = 'all'").format(
                psycopg.sql.Identifier(dbname)))
        sag = SAG(settings=Settings(database_url=dsn))
        started = time.perf_counter()
        report = sag.ingest(read_inputs([corpus]))
        load = time.perf_counter() - started
        started = time.perf_counter()
        again = sag.ingest(read_inputs([corpus]))
        reingest = time.perf_counter() - started
        sag.close()
        time.sleep(1.2)  # backends report function statistics at most once a second
        with psycopg.connect(dsn, autocommit=True) as conn:
            functions = conn.execute(
                "select funcname, calls, total_time, self_time from pg_stat_user_functions "
                "where schemaname in ('sag', 'sag_internal') order by total_time desc limit 10").fetchall()
    return {"load": load, "reingest": reingest, "documents": report.documents, "skipped": again.skipped,
            "failed": report.failed, "timings": report.timings, "functions": functions}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="?", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    server = resolve_dsn(Settings())
    runs = []
    for i in range(args.runs):
        run = one_run(server, args.corpus)
        runs.append(run)
        timings = " ".join(f"{k} {v:.2f}" for k, v in run["timings"].items())  # type: ignore[attr-defined]
        print(f"run {i + 1}: {run['documents']} documents in {run['load']:.2f} s "
              f"({run['documents'] / run['load']:.0f}/s), failed {run['failed']}; "  # type: ignore[operator]
              f"re-ingest {run['reingest']:.2f} s ({run['skipped']} skipped)\n  stages s: {timings}")
        print("  server ms (total/self): " + ", ".join(
            f"{name} {calls}x {total:.0f}/{own:.0f}" for name, calls, total, own in run["functions"]))  # type: ignore[attr-defined]
    loads = sorted(r["load"] for r in runs)  # type: ignore[misc]
    print(f"median of {len(runs)}: {statistics.median(loads):.2f} s (min {loads[0]:.2f}, max {loads[-1]:.2f}); "
          f"re-ingest median {statistics.median(r['reingest'] for r in runs):.2f} s")  # type: ignore[misc]


if __name__ == "__main__":
    main()

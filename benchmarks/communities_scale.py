"""GraphRAG community reports at scale: build the hierarchy and its reports on an existing database, then
rebuild it (every report reused) and time local search contexts.

    sag-pg bench-scale --events 10000,100000 --keep --json       # synthetic corpora, kept: sag_bench_<n>_<pid>
    .venv/bin/python benchmarks/communities_scale.py --dsn "host=... dbname=sag_bench_10000_123" --source default

Prints, per phase, the seconds of ``build_communities`` (offline: extractive reports; ``--llm`` uses SAG_LLM),
the communities and reports per level, the peak RSS of this process (``ru_maxrss``: the database server's
memory is not included), the incremental rebuild's time, and p50/p95 of ``sag.local_context`` over
``--queries`` questions made of the names of random keys.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import time

from sag_pg import SAG, Settings
from sag_pg.cluster import EventSelection
from sag_pg.graphrag import BuildParams
from sag_pg.graphrag.browse import list_reports


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu_seconds() -> float:
    """CPU time of this process (user + system): on a shared machine, wall time also counts the waits."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dsn", required=True)
    parser.add_argument("--source", default="default")
    parser.add_argument("--max-levels", type=int, default=3)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--llm", action="store_true", help="LLM reports (SAG_LLM) instead of extractive ones")
    parser.add_argument("--no-rebuild", action="store_true", help="skip the incremental rebuild")
    args = parser.parse_args()

    sag = SAG(settings=Settings.from_env(database_url=args.dsn))
    params = BuildParams(max_levels=args.max_levels)
    before = peak_mb()
    started, cpu = time.perf_counter(), cpu_seconds()
    built = sag.build_communities(EventSelection(source=args.source), params, offline=not args.llm)
    seconds = time.perf_counter() - started
    out = {"events": built.event_count, "build_seconds": round(seconds, 2),
           "build_cpu_seconds": round(cpu_seconds() - cpu, 2),
           "phases": {k: round(v, 2) for k, v in built.timings.items()}, "levels": built.levels,
           "reports_written": built.reports_written, "peak_rss_mb": round(peak_mb()), "rss_before_mb": round(before)}
    print(json.dumps({"first_build": out}), flush=True)  # before the rebuild, which takes as long again
    if args.no_rebuild:
        return
    started, cpu = time.perf_counter(), cpu_seconds()
    again = sag.build_communities(EventSelection(source=args.source), params, offline=not args.llm)
    out["rebuild_seconds"] = round(time.perf_counter() - started, 2)
    out["rebuild_cpu_seconds"] = round(cpu_seconds() - cpu, 2)
    out["rebuild_reused"], out["rebuild_written"] = again.reports_reused, again.reports_written
    out["rebuild_phases"] = {k: round(v, 2) for k, v in again.timings.items()}

    names = [r["title"].split(" · ")[0] for r in list_reports(sag.db, args.source, None)]
    rng = random.Random(7)
    latencies = []
    for _ in range(args.queries):
        question = f"What happened with {rng.choice(names)} and {rng.choice(names)}?"
        t0 = time.perf_counter()
        sag.local_context(question, source=args.source)
        latencies.append((time.perf_counter() - t0) * 1000)
    latencies.sort()
    out["local_context_ms"] = {"p50": round(latencies[len(latencies) // 2], 1),
                               "p95": round(latencies[min(len(latencies) - 1, int(len(latencies) * 0.95))], 1)}
    out["peak_rss_mb_after_all"] = round(peak_mb())
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()

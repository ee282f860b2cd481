"""One node against a Citus cluster on the same data (issue #32): ingest rate, one-source search latency and
bytes per event per node, with figures.

    export SAG_CITUS_DATABASE_URL="$(sag-pg db cluster url)"      # a running cluster (sag-pg db cluster start)
    .venv/bin/python benchmarks/citus_search.py                    # MuSiQue and HotpotQA, 50 questions each
    .venv/bin/python benchmarks/citus_search.py --sets musique-train100 --queries 20 --json

The development sets in ../shared/bench go into one source each, by the same calls, into the cluster's ``sag``
database (its sag schemas are dropped first: a bench cluster, not one in use) and into a fresh database
``sag_bench_citus_<pid>`` on the configured one-node server.  Then each set's questions are asked of its
source on both, one after the other (warm-up first), and the p50/p95 of each and their ratio are printed.  On
one machine the cluster's workers share its cores with the coordinator and the one-node server: the ratios say
what distribution costs, not what a cluster of machines gains.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import psycopg

from sag_pg import SAG, Settings
from sag_pg.bench.database import temporary_database
from sag_pg.db import migrate
from sag_pg.db.citus_status import distribution_status
from sag_pg.db.connection import resolve_dsn

BENCH = Path(__file__).resolve().parents[2] / "shared" / "bench"


def _reset(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("set client_min_messages = warning")
        conn.execute("drop schema if exists sag cascade")
        conn.execute("drop schema if exists sag_internal cascade")


def _load(url: str, home: Path, sets: list[str]) -> tuple[SAG, dict[str, float]]:
    sag = SAG(settings=Settings(database_url=url, home=home))
    sag.record_recalls = False
    rates = {}
    for name in sets:
        started = time.perf_counter()
        report = sag.ingest_files([BENCH / name / "corpus.jsonl"], source=name)
        seconds = time.perf_counter() - started
        if report.failed:
            raise SystemExit(f"Error: {name}: {report.failed} documents failed: {report.errors[:3]}")
        with psycopg.connect(url) as conn:
            row = conn.execute("select count(*) from sag.chunks c join sag.sources s on s.id = c.source_id "
                               "where s.name = %s", [name]).fetchone()
        rates[name] = (row[0] if row else 0) / seconds
    return sag, rates


def _questions(name: str, n: int) -> list[str]:
    with open(BENCH / name / "queries.jsonl", encoding="utf-8") as f:
        return [json.loads(line)["question"] for line in f if line.strip()][:n]


def _time(sag: SAG, questions: list[str], source: str, warmup: int = 5) -> list[float]:
    for q in questions[:warmup]:
        sag.search(q, source=source)
    out = []
    for q in questions:
        started = time.perf_counter()
        sag.search(q, source=source)
        out.append((time.perf_counter() - started) * 1000.0)
    return out


def _p(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100)[q - 1] if len(values) > 1 else values[0]


def _bytes_per_event(url: str, citus: bool) -> dict[str, Any]:
    with psycopg.connect(url, autocommit=True) as conn:
        events = conn.execute("select count(*) from sag.events").fetchone()[0]  # type: ignore[index]
        if not citus:
            size = conn.execute("select pg_database_size(current_database())").fetchone()[0]  # type: ignore[index]
            return {"events": events, "nodes": {"one node": size / max(events, 1)}}
        status = distribution_status(conn) or {"nodes": []}
    return {"events": events,
            "nodes": {f"{n['name']}:{n['port']} ({'coordinator' if n['group'] == 0 else 'worker'})":
                      n["bytes"] / max(events, 1) for n in status["nodes"]}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--citus-url", default=os.environ.get("SAG_CITUS_DATABASE_URL"))
    parser.add_argument("--sets", default="musique-train100,hotpotqa-train100")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if not args.citus_url:
        print("Error: --citus-url (or SAG_CITUS_DATABASE_URL) names the cluster's coordinator", file=sys.stderr)
        return 2
    sets = [s for s in args.sets.split(",") if s]
    home = Path(os.environ.get("TMPDIR", "/tmp")) / f"sag-bench-citus-{os.getpid()}"
    _reset(args.citus_url)
    migrate.upgrade(args.citus_url)
    out: dict[str, Any] = {"load_average": os.getloadavg()}
    with temporary_database(resolve_dsn(Settings()), f"citus_{os.getpid()}") as one_url:
        citus_sag, citus_rates = _load(args.citus_url, home / "citus", sets)
        one_sag, one_rates = _load(one_url, home / "one", sets)
        out["ingest_passages_per_s"] = {"citus": citus_rates, "one": one_rates}
        out["search_ms"] = {}
        for name in sets:
            qs = _questions(name, args.queries)
            one = _time(one_sag, qs, name)
            cit = _time(citus_sag, qs, name)
            out["search_ms"][name] = {
                "one_p50": _p(one, 50), "one_p95": _p(one, 95), "citus_p50": _p(cit, 50), "citus_p95": _p(cit, 95),
                "p50_ratio": _p(cit, 50) / _p(one, 50), "queries": len(qs)}
        out["bytes_per_event"] = {"citus": _bytes_per_event(args.citus_url, True),
                                  "one": _bytes_per_event(one_url, False)}
        citus_sag.close()
        one_sag.close()
    out["load_average_after"] = os.getloadavg()
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"load average before {out['load_average'][0]:.1f}, after {out['load_average_after'][0]:.1f}")
    for name in sets:
        print(f"{name}: ingest {citus_rates[name]:.1f} passages/s on Citus, {one_rates[name]:.1f} on one node")
        s = out["search_ms"][name]
        print(f"  one-source search p50/p95: Citus {s['citus_p50']:.1f}/{s['citus_p95']:.1f} ms, one node "
              f"{s['one_p50']:.1f}/{s['one_p95']:.1f} ms: p50 ratio {s['p50_ratio']:.2f}")
    for system, figures in out["bytes_per_event"].items():
        for node, b in figures["nodes"].items():
            print(f"  {system} {node}: {b:.0f} bytes per event ({figures['events']} events)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

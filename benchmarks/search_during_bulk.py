"""Search latency while a bulk load runs (issue #36 item 10), with figures.

    .venv/bin/python benchmarks/search_during_bulk.py                  # 1,200 MuSiQue passages, as in the issue
    .venv/bin/python benchmarks/search_during_bulk.py --bulk-docs 600 --searches-before 20

In a fresh database (``sag_bench_bulksearch_<pid>`` on the configured server): 394 HotpotQA passages are stored in
a source ``other``; then ``sag-pg ingest --bulk`` of ``--bulk-docs`` MuSiQue passages runs in a subprocess while
this process searches ``other`` in a loop (one client, as a server would keep it; ``--new-client`` for a new
client a search; ``--cli`` for a ``sag-pg search`` process a search, as the issue's probe ran them).  Printed: the searches' count and p50/p95/max latency before the load (the same loop, alone)
and during it, by phase of the load (dropping the indexes, loading, building them), the slowest searches with
the lock or wait event they spent most of their time on (sampled from pg_stat_activity every 20 ms), the
load's own time and index build, and the load average.
"""

from __future__ import annotations

import argparse
import collections
import itertools
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import psycopg

from sag_pg import SAG, Settings
from sag_pg.bench.database import temporary_database
from sag_pg.db.connection import resolve_dsn

BENCH = Path("/work/shared/bench")
QUERIES = ["Who founded the company?", "Where was the album recorded?", "When did the war end?",
           "Which river flows through the city?", "Who directed the film?", "What is the capital of the country?"]


def _slice(source: Path, target: Path, start: int, stop: int) -> Path:
    with source.open() as lines, target.open("w") as out:
        out.writelines(itertools.islice(lines, start, stop))
    return target


def _figures(ms: list[float]) -> str:
    if not ms:
        return "none"
    ms = sorted(ms)
    return (f"{len(ms)} searches, p50 {statistics.median(ms):.0f} ms, p95 {ms[int(0.95 * (len(ms) - 1))]:.0f} ms, "
            f"max {ms[-1]:.0f} ms")


class Sampler(threading.Thread):
    """Every 20 ms: the wait event of the searching backend and the bulk load's phase (indexes missing or not,
    CREATE INDEX running)."""

    def __init__(self, dsn: str) -> None:
        super().__init__(daemon=True)
        self.dsn, self.stop, self.search_pid = dsn, threading.Event(), 0
        self.samples: list[tuple[float, int, str, str]] = []  # (time, search pid, its wait, phase)

    def run(self) -> None:
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            while not self.stop.is_set():
                row = conn.execute(
                    """select (select coalesce(wait_event_type || ':' || wait_event, state)
                                 from pg_stat_activity where pid = %s),
                              (select count(*) from pg_stat_activity
                                where pid <> pg_backend_pid() and state = 'active'
                                  and (query ilike '%%create_vector_indexes%%' or query ilike '%%finish_bulk_load%%')),
                              (select count(*) from pg_stat_activity
                                where pid <> pg_backend_pid() and state = 'active'
                                  and query ilike '%%begin_bulk_load%%'),
                              sag.missing_vector_indexes()""", [self.search_pid]).fetchone()
                assert row is not None
                wait, building, dropping, missing = row
                phase = ("building" if building else "dropping" if dropping else
                         "loading" if missing else "indexed")
                self.samples.append((time.perf_counter(), self.search_pid, wait or "-", phase))
                time.sleep(0.02)


def run(dsn: str, work: Path, bulk_docs: int, searches_before: int, new_client: bool,
        search_source: str | None, cli: bool) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SAG_")}
    settings = Settings(database_url=dsn)
    with SAG(settings=settings) as sag:
        sag.ingest_files([_slice(BENCH / "hotpotqa-train100/corpus.jsonl", work / "other.jsonl", 600, 994)],
                         source="other")
    bulk = _slice(BENCH / "musique-train100/corpus.jsonl", work / "bulk.jsonl", 0, bulk_docs)
    client = SAG(settings=settings)
    client.record_recalls = False  # searches only read here
    sampler = Sampler(dsn)

    def one(query: str) -> tuple[float, float]:
        nonlocal client
        if new_client:
            client.close()
            client = SAG(settings=settings)
            client.record_recalls = False
        if cli:  # `sag-pg search` in a new process, as a user at a shell runs it
            started = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "sag_pg", "search", query, "--top-n", "5", "--json",
                                   *(["--source", search_source] if search_source else ["--all-sources"])],
                                  env=dict(env, SAG_DATABASE_URL=dsn), capture_output=True, text=True, check=False)
            if done.returncode:
                raise RuntimeError(done.stderr.strip()[-300:])
            return started, time.perf_counter()
        with client.db.session(autocommit=True) as conn:
            sampler.search_pid = conn.info.backend_pid  # the kept connection the search will use
        started = time.perf_counter()
        client.search(query, source=search_source, top_n=5)
        return started, time.perf_counter()

    if search_source == "load":  # the source exists (and holds a few passages) before the load
        with SAG(settings=settings) as sag:
            sag.ingest_files([_slice(BENCH / "musique-train100/corpus.jsonl", work / "first.jsonl", 1880, 1890)],
                             source="load")
    print(f"searching {search_source or 'every source'}"
          f"{' with `sag-pg search` (a process a search)' if cli else ' with a new client a search' if new_client else ' with one client'}")
    before = [one(q) for q in itertools.islice(itertools.cycle(QUERIES), searches_before)]
    sampler.start()
    load_started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "sag_pg", "ingest", "--quiet", "--json", "--bulk", "--source",
                             "load", str(bulk)], env=dict(env, SAG_DATABASE_URL=dsn), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    during: list[tuple[float, float]] = []
    errors: list[str] = []
    for query in itertools.cycle(QUERIES):
        if proc.poll() is not None:
            break
        try:
            during.append(one(query))
        except Exception as exc:  # noqa: BLE001 - counted and printed
            errors.append(f"{type(exc).__name__}: {exc}")
    out, err = proc.communicate()
    load_s = time.perf_counter() - load_started
    sampler.stop.set()
    sampler.join()
    client.close()

    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} cpus")
    print(f"before the load: {_figures([(b - a) * 1000 for a, b in before])}")
    print(f"during the load: {_figures([(b - a) * 1000 for a, b in during])}; errors {len(errors)} {errors[:2]}")
    by_phase: dict[str, list[float]] = collections.defaultdict(list)
    slow: list[tuple[float, str, str]] = []
    for a, b in during:
        seen = [(wait, phase) for t, _, wait, phase in sampler.samples if a <= t <= b]
        phases = collections.Counter(p for _, p in seen)
        waits = collections.Counter(w for w, _ in seen)
        phase = phases.most_common(1)[0][0] if phases else "?"
        by_phase[phase].append((b - a) * 1000)
        slow.append(((b - a) * 1000, phase, ", ".join(f"{w} x{n}" for w, n in waits.most_common(3))))
    for phase in ("dropping", "loading", "building", "indexed", "?"):
        if by_phase.get(phase):
            print(f"  {phase:<9} {_figures(by_phase[phase])}")
    print("  slowest: " + "; ".join(f"{ms:.0f} ms ({phase}: {waits})" for ms, phase, waits in
                                    sorted(slow, reverse=True)[:5]))
    if proc.returncode == 0:
        report = json.loads(out)
        print(f"bulk load: {report['documents']} documents in {report['seconds']:.1f} s ({load_s:.1f} s with start-up), "
              f"index build {report['timings'].get('index', 0):.2f} s")
    else:
        print(f"bulk load FAILED: {err.strip()[-400:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bulk-docs", type=int, default=1200)
    parser.add_argument("--searches-before", type=int, default=12)
    parser.add_argument("--new-client", action="store_true", help="a new SAG client (and connection) a search")
    parser.add_argument("--cli", action="store_true", help="each search a `sag-pg search` process")
    parser.add_argument("--search-source", default="other",
                        help="the source searched: other (stored before the load), load (the one being loaded) "
                             "or all")
    args = parser.parse_args()
    work = Path(f"/tmp/sag-bench-bulksearch-{os.getpid()}")
    work.mkdir(exist_ok=True)
    with temporary_database(resolve_dsn(Settings.from_env()), "bulksearch") as dsn:
        run(dsn, work, args.bulk_docs, args.searches_before, args.new_client,
            None if args.search_source == "all" else args.search_source, args.cli)


if __name__ == "__main__":
    main()

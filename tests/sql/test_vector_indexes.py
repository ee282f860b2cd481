"""sag.create_vector_indexes: the HNSW builds get the memory their graphs need, never more than the caller's
maintenance_work_mem, and the caller's setting is back when the function returns."""

from __future__ import annotations

import psycopg

from tests.sql.graph_builder import GraphBuilder


def _keys(conn: psycopg.Connection, n: int, dim: int) -> None:
    GraphBuilder(conn, dimension=dim)
    source = conn.execute("insert into sag.sources (name) values ('s') returning id").fetchone()[0]  # type: ignore[index]
    conn.execute(
        "insert into sag.keys (source_id, type, name, normalized, value_string, embedding)"
        " select %s, 'topic', 'k' || i, 'k' || i, 'k' || i,"
        "        (select array_agg(sin(i * 7 + d))::vector from generate_series(1, %s) d)"
        "   from generate_series(1, %s) i", [source, dim, n])


def _build(conn: psycopg.Connection) -> list[str]:
    notices: list[str] = []
    conn.add_notice_handler(lambda d: notices.append(d.message_primary or ""))
    conn.execute("select sag.drop_vector_indexes()")
    made = conn.execute("select sag.create_vector_indexes()").fetchone()
    assert made == (3,)
    return notices


def test_a_small_cap_is_respected_and_restored(db_conn: psycopg.Connection) -> None:
    # 3,000 keys of 64 dimensions need ~4.4 MB of graph: more than a 1 MB cap allows, so pgvector says so.
    _keys(db_conn, 3000, 64)
    db_conn.execute("set maintenance_work_mem = '1MB'")
    notices = _build(db_conn)
    assert any("no longer fits into maintenance_work_mem" in n for n in notices), notices
    assert db_conn.execute("show maintenance_work_mem").fetchone() == ("1MB",)


def test_a_graph_that_fits_is_built_in_memory_and_the_setting_restored(db_conn: psycopg.Connection) -> None:
    _keys(db_conn, 3000, 64)
    db_conn.execute("set maintenance_work_mem = '2GB'")
    notices = _build(db_conn)
    assert not any("maintenance_work_mem" in n for n in notices), notices
    assert db_conn.execute("show maintenance_work_mem").fetchone() == ("2GB",)
    assert db_conn.execute("select count(*) from pg_indexes where schemaname = 'sag' and indexdef like '%hnsw%'"
                           ).fetchone() == (3,)

"""sag.resolve_keys across types: a name given several types ends with the same key, of the same type, whatever
order the documents came in (issue #15: concurrent ingests gave keys of other types than a serial run)."""

from __future__ import annotations

import psycopg
import pytest


def _resolve(conn: psycopg.Connection, source: int, keys: list[tuple[str, str]]) -> list[int]:
    rows = conn.execute(
        "select key_id from sag.resolve_keys(%s, %s, %s, %s, %s, %s, %s, %s::vector[])",
        [source, [t for t, _ in keys], [n for _, n in keys], [n for _, n in keys], [n for _, n in keys],
         [None] * len(keys), [None] * len(keys), ["[1,0,0]"] * len(keys)],
    ).fetchall()
    return [r[0] for r in rows]


def _keys(conn: psycopg.Connection, source: int) -> list[tuple[str, str]]:
    return conn.execute("select type, normalized from sag.keys where source_id = %s order by normalized, type",
                        [source]).fetchall()


@pytest.mark.parametrize("order", [
    [[("topic", "cambridge")], [("location", "cambridge")], [("person", "cambridge")]],
    [[("person", "cambridge")], [("location", "cambridge")], [("topic", "cambridge")]],
    [[("location", "cambridge")], [("topic", "cambridge")], [("person", "cambridge")]],
    [[("topic", "cambridge"), ("person", "cambridge"), ("location", "cambridge")]],  # all in one document
])
def test_the_first_type_alphabetically_whatever_the_order(db_conn: psycopg.Connection,
                                                          order: list[list[tuple[str, str]]]) -> None:
    db_conn.execute("select sag.bind_embedder('test', 3)")
    source = db_conn.execute("select sag.ensure_source('s')").fetchone()[0]
    ids = {key_id for document in order for key_id in _resolve(db_conn, source, document)}
    assert len(ids) == 1  # one key for the name
    # 'location' < 'person' < 'topic': location, however many documents named it otherwise first.
    assert _keys(db_conn, source) == [("location", "cambridge")]


def test_without_across_types_each_type_keeps_its_key(db_conn: psycopg.Connection) -> None:
    db_conn.execute("select sag.bind_embedder('test', 3)")
    source = db_conn.execute("select sag.ensure_source('s')").fetchone()[0]
    db_conn.execute(
        "select sag.resolve_keys(%s, %s, %s, %s, %s, %s, %s, %s::vector[], across_types => false)",
        [source, ["topic", "location"], ["cambridge"] * 2, ["cambridge"] * 2, ["cambridge"] * 2, [None] * 2,
         [None] * 2, ["[1,0,0]"] * 2])
    assert _keys(db_conn, source) == [("location", "cambridge"), ("topic", "cambridge")]


def _advisory_locks(conn: psycopg.Connection) -> list[tuple[str, int]]:
    return conn.execute("select mode, count(*)::int from pg_locks where locktype = 'advisory' "
                        "and pid = pg_backend_pid() group by mode order by mode").fetchall()


def test_a_document_locks_its_meanings_or_with_many_keys_its_source(db_conn: psycopg.Connection) -> None:
    db_conn.execute("select sag.bind_embedder('test', 3)")
    source = db_conn.execute("select sag.ensure_source('s')").fetchone()[0]
    db_conn.commit()
    # 'cambridge' under three types is one meaning: its normalized value and its signature, 2 locks, plus the
    # source's lock shared.
    _resolve(db_conn, source, [("topic", "cambridge"), ("location", "cambridge"), ("person", "cambridge")])
    assert _advisory_locks(db_conn) == [("ExclusiveLock", 2), ("ShareLock", 1)]
    db_conn.rollback()
    # 40 names are 80 meanings, more than the 64 a document may lock one by one: the whole source instead.
    _resolve(db_conn, source, [("topic", f"name{i}") for i in range(40)])
    assert _advisory_locks(db_conn) == [("ExclusiveLock", 1)]
    db_conn.rollback()

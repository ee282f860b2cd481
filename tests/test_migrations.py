"""Migrations: alembic applies exactly the declared SQL files, idempotently and safely in parallel."""

from __future__ import annotations

import subprocess
import sys
import threading

import psycopg
import pytest

from sag_pg._resources import idempotent_sql_files, sql_dir
from sag_pg.db import migrate, sqlfiles
from sag_pg.db.connection import Database
from sag_pg.errors import EmbedderMismatchError, SchemaVersionError

from .schema_snapshot import snapshot


def _apply_files_by_hand(dsn: str) -> None:
    with psycopg.connect(dsn) as conn:
        for path in sorted((sql_dir() / "incremental").glob("*.sql")):
            conn.execute(path.read_text())
        schemas = sqlfiles.extension_schemas(conn)  # @extschema:vector@ -> the extension's schema
        for path in idempotent_sql_files():
            conn.execute(sqlfiles.with_extension_schemas(path.read_text(), schemas))


def test_upgrade_on_empty_database_equals_declared_schema(empty_db_dsn: str, db_dsn: str) -> None:
    migrate.upgrade(empty_db_dsn)
    with psycopg.connect(empty_db_dsn) as a:
        by_alembic = snapshot(a)
    # db_dsn is a migrated copy; build a third database from the raw files for the comparison.
    with psycopg.connect(db_dsn) as conn:
        conn.execute("drop schema sag cascade")
        conn.commit()
    _apply_files_by_hand(db_dsn)
    with psycopg.connect(db_dsn) as b:
        by_hand = snapshot(b)
    assert by_alembic["columns"] and by_alembic["functions"]
    assert by_alembic == by_hand


def test_upgrade_twice_is_a_no_op(empty_db_dsn: str) -> None:
    migrate.upgrade(empty_db_dsn)
    with psycopg.connect(empty_db_dsn) as conn:
        first = snapshot(conn)
        conn.execute("insert into sag.sources (name) values ('kept')")
        conn.commit()
    migrate.upgrade(empty_db_dsn)
    with psycopg.connect(empty_db_dsn) as conn:
        assert snapshot(conn) == first
        assert conn.execute("select count(*) from sag.sources where name = 'kept'").fetchone() == (1,)
        assert migrate.schema_status(conn).state is migrate.SchemaState.CURRENT


def test_concurrent_upgrades_leave_one_correct_schema(empty_db_dsn: str, db_conn: psycopg.Connection) -> None:
    # Separate processes, as two `sag-pg` commands would be.
    code = "import sys; from sag_pg.db import migrate; migrate.upgrade(sys.argv[1])"
    procs = [subprocess.Popen([sys.executable, "-c", code, empty_db_dsn], stderr=subprocess.PIPE, text=True)
             for _ in range(3)]
    outcomes = [(p.wait(timeout=120), p.communicate()[1]) for p in procs]
    assert [rc for rc, _ in outcomes] == [0, 0, 0], outcomes
    with psycopg.connect(empty_db_dsn) as conn:
        assert snapshot(conn) == snapshot(db_conn)
        assert conn.execute("select count(*) from sag.alembic_version").fetchone() == (1,)


def test_older_schema_is_a_clear_error_naming_the_command(db_dsn: str) -> None:
    with psycopg.connect(db_dsn) as conn:
        conn.execute("update sag.settings set value = '{\"hash\": \"old\"}' where name = 'functions'")
        conn.commit()
    with pytest.raises(SchemaVersionError, match="sag-pg db upgrade"):
        Database(db_dsn)
    migrate.upgrade(db_dsn)
    Database(db_dsn)  # current again


def test_unknown_revision_is_refused(db_dsn: str) -> None:
    with psycopg.connect(db_dsn) as conn:
        conn.execute("update sag.alembic_version set version_num = '9999'")
        conn.commit()
    with pytest.raises(SchemaVersionError, match="9999"):
        Database(db_dsn)


def test_empty_database_is_created_on_first_use(empty_db_dsn: str, capsys: pytest.CaptureFixture[str]) -> None:
    Database(empty_db_dsn)
    assert "creating the schema" in capsys.readouterr().err
    with psycopg.connect(empty_db_dsn) as conn:
        assert migrate.schema_status(conn).state is migrate.SchemaState.CURRENT


def test_embedder_is_bound_once_and_mismatch_is_an_error(db_dsn: str) -> None:
    db = Database(db_dsn)
    db.bind_embedder("hash-v1:8", 8)
    db.bind_embedder("hash-v1:8", 8)  # same again: fine
    with pytest.raises(EmbedderMismatchError, match="hash-v1:8"):
        db.bind_embedder("openai:other:8", 8)
    with pytest.raises(EmbedderMismatchError, match="dimension 8"):
        db.bind_embedder("hash-v1:8", 16)
    with psycopg.connect(db_dsn) as conn:
        typed = conn.execute(
            "select format_type(atttypid, atttypmod) from pg_attribute "
            "where attrelid = 'sag.chunks'::regclass and attname = 'embedding'").fetchone()
        assert typed == ("halfvec(8)",)
        hnsw = conn.execute("select count(*) from pg_indexes where schemaname = 'sag' and indexdef like '%hnsw%'").fetchone()
        assert hnsw == (3,)


_EMBEDDING_COLUMNS = """
select c.relname::text, format_type(a.atttypid, a.atttypmod), a.attstorage::text
  from pg_attribute a join pg_class c on c.oid = a.attrelid
 where c.relnamespace = 'sag'::regnamespace and c.relname in ('chunks', 'events', 'keys') and a.attname = 'embedding'
 order by 1"""
_HNSW = "select indexname::text, indexdef from pg_indexes where schemaname = 'sag' and indexdef like '%hnsw%' order by 1"


def test_0004_turns_a_bound_database_to_halfvec_and_back(empty_db_dsn: str,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    # A database bound and filled under revision 0003: vector(8) columns, PLAIN, vector_cosine_ops indexes.
    from alembic import command
    command.upgrade(migrate.alembic_config(empty_db_dsn), "0003")
    value = [0.1, -0.2, 0.3, 0.0004, 0.5, -0.6, 0.7, 0.8]
    with psycopg.connect(empty_db_dsn) as conn:
        for table in ("chunks", "events", "keys"):
            conn.execute(f"alter table sag.{table} alter column embedding type vector(8)")
            conn.execute(f"alter table sag.{table} alter column embedding set storage plain")
            conn.execute(f"create index {table}_embedding_hnsw on sag.{table} using hnsw (embedding vector_cosine_ops)")
        conn.execute("""insert into sag.settings (name, value)
                        values ('embedder', '{"name": "hash-v1:8", "dimension": 8}')""")
        conn.execute("insert into sag.sources (id, name) overriding system value values (1, 's')")
        conn.execute("""insert into sag.keys (source_id, type, name, normalized, value_string, embedding)
                        values (1, 'topic', 'Kept', 'kept', 'Kept', %s::vector)""", [str(value)])
        conn.commit()

    capsys.readouterr()
    migrate.upgrade(empty_db_dsn)
    # The long step is announced (sag-pg db upgrade shows it); no other server notice is.
    err = capsys.readouterr().err
    assert "sag-pg: storing about" in err and "halfvec(8)" in err and "skipping" not in err
    with psycopg.connect(empty_db_dsn) as conn:
        assert conn.execute(_EMBEDDING_COLUMNS).fetchall() == [
            ("chunks", "halfvec(8)", "p"), ("events", "halfvec(8)", "p"), ("keys", "halfvec(8)", "p")]
        indexes = conn.execute(_HNSW).fetchall()
        assert [name for name, _ in indexes] == ["chunks_embedding_hnsw", "events_embedding_hnsw", "keys_embedding_hnsw"]
        assert all("halfvec_cosine_ops" in definition for _, definition in indexes), indexes
        row = conn.execute("select embedding::real[] from sag.keys where name = 'Kept'").fetchone()
        assert row is not None
        assert row[0] == pytest.approx(value, rel=1e-3)
        assert migrate.schema_status(conn).state is migrate.SchemaState.CURRENT
        # The index serves a query passed as a plain vector (cast implicitly).
        conn.execute("set enable_seqscan = off")
        plan = conn.execute("explain select id from sag.keys order by embedding <=> %s::vector limit 1",
                            [str(value)]).fetchall()
        assert any("keys_embedding_hnsw" in line for (line,) in plan), plan

    command.downgrade(migrate.alembic_config(empty_db_dsn), "0003")
    with psycopg.connect(empty_db_dsn) as conn:
        assert conn.execute(_EMBEDDING_COLUMNS).fetchall() == [
            ("chunks", "vector(8)", "p"), ("events", "vector(8)", "p"), ("keys", "vector(8)", "p")]
        assert conn.execute(_HNSW).fetchall() == []
        row = conn.execute("select embedding::real[] from sag.keys where name = 'Kept'").fetchone()
        assert row is not None and row[0] == pytest.approx(value, rel=1e-3)


def test_upgrades_from_threads_of_one_process_are_serialised(empty_db_dsn: str) -> None:
    errors: list[BaseException] = []

    def run() -> None:
        try:
            migrate.upgrade(empty_db_dsn)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_0006_downgrade_takes_the_graph_and_its_functions(empty_db_dsn: str) -> None:
    from alembic import command

    migrate.upgrade(empty_db_dsn)
    with psycopg.connect(empty_db_dsn) as conn:
        assert conn.execute("select count(*) from pg_proc where pronamespace = 'sag'::regnamespace "
                            "and proname in ('get_related', 'memory_overlap', 'recall')").fetchone() == (3,)
        assert conn.execute("select count(*) from pg_proc where pronamespace = 'sag_internal'::regnamespace "
                            "and proname in ('_overlap', '_cooccur_links')").fetchone() == (2,)
    command.downgrade(migrate.alembic_config(empty_db_dsn), "0004")
    with psycopg.connect(empty_db_dsn) as conn:
        assert conn.execute("select count(*) from pg_proc where pronamespace = 'sag'::regnamespace "
                            "and proname in ('get_related', 'memory_overlap', '_overlap', 'recall', '_cooccur_links')"
                            ).fetchone() == (0,)
        # 0012's downgrade moved the internal functions back into sag and dropped their schema.
        assert conn.execute("select to_regnamespace('sag_internal')").fetchone() == (None,)
        assert conn.execute("select to_regclass('sag.relations'), to_regclass('sag.recall_stats')").fetchone() == \
            (None, None)
        assert conn.execute("select count(*) from pg_attribute where attrelid = 'sag.keys'::regclass "
                            "and attname in ('pinned', 'description')").fetchone() == (0,)

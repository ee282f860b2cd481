"""Issue #37 item 9 / #36 item 8: `db status` reports HNSW indexes an interrupted bulk load left missing, and
says how to rebuild them; `db repair` rebuilds them."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
from click.testing import CliRunner

from sag_pg.cli import cli
from sag_pg.db import ingest as store

from .concurrency_corpus import write_corpus


def _indexes(dsn: str) -> set[str]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute("select indexname from pg_indexes where schemaname = 'sag' "
                            "and indexname like '%embedding_hnsw'").fetchall()
    return {r[0] for r in rows}


def test_status_names_missing_indexes_and_repair_builds_them(db_dsn: str, tmp_path: Path) -> None:
    env = {"SAG_DATABASE_URL": db_dsn, "SAG_HOME": str(tmp_path / "home"), "SAG_LLM": "", "SAG_EMBEDDER": ""}
    loaded = CliRunner().invoke(cli, ["ingest", str(write_corpus(tmp_path / "c.jsonl", 0, 6))], env=env)
    assert loaded.exit_code == 0, loaded.output
    shown = CliRunner().invoke(cli, ["db", "status"], env=env)
    assert "indexes" not in shown.output and json.loads(
        CliRunner().invoke(cli, ["db", "status", "--json"], env=env).output)["missing_vector_indexes"] == []

    with psycopg.connect(db_dsn, autocommit=True) as conn:  # a bulk load whose client died (its lock is gone)
        assert store.begin_bulk_load(conn, wait_seconds=5) == 3
    shown = CliRunner().invoke(cli, ["db", "status"], env=env)
    assert shown.exit_code == 0, shown.output
    line = next(x for x in shown.output.splitlines() if x.startswith("indexes"))
    assert "3 of 3 HNSW vector indexes missing" in line and "sag-pg db repair" in line, line
    assert json.loads(CliRunner().invoke(cli, ["db", "status", "--json"], env=env).output)[
        "missing_vector_indexes"] == ["chunks_embedding_hnsw", "events_embedding_hnsw", "keys_embedding_hnsw"]

    repaired = CliRunner().invoke(cli, ["db", "repair"], env=env)
    assert repaired.exit_code == 0, repaired.output
    assert "built 3" in repaired.output
    assert _indexes(db_dsn) == {"chunks_embedding_hnsw", "events_embedding_hnsw", "keys_embedding_hnsw"}
    assert "indexes" not in CliRunner().invoke(cli, ["db", "status"], env=env).output

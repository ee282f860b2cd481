"""Issue #37 item 6: switching embedders is not a dead end.  `sag-pg db reembed` (or `source S --reembed`)
re-embeds the chunks, events and keys with the configured embedder, batched, resumable, with progress; the
mismatch message names it."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import psycopg
import pytest
from click.testing import CliRunner

from sag_pg import SAG, Settings
from sag_pg.cli import cli
from sag_pg.db import reembed as reembedding
from sag_pg.db.connection import Database
from sag_pg.embedders import HashEmbedder
from sag_pg.ingest.extractors import RulesExtractor

from .cli_support import run_cli
from .test_search import DOCS

HNSW = {"chunks_embedding_hnsw", "events_embedding_hnsw", "keys_embedding_hnsw"}


def _env(dsn: str, home: Path, embedder: str = "") -> dict[str, str]:
    return {"SAG_DATABASE_URL": dsn, "SAG_HOME": str(home), "SAG_LLM": "", "SAG_EMBEDDER": embedder}


def _ingest(dsn: str, home: Path, embedder: str = "hash", source: str = "default") -> None:
    with SAG(settings=Settings(database_url=dsn, home=home, embedder=embedder)) as sag:
        for uri, text in DOCS.items():
            sag.ingest_text(text, uri=uri, source=source)


def _vectors(dsn: str) -> dict[tuple[str, ...], list[float]]:
    """Every stored vector by what it belongs to (ids differ between databases)."""
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "select 'chunk', d.uri, c.ordinal::text, c.embedding::text from sag.chunks c"
            " join sag.documents d on d.source_id = c.source_id and d.id = c.document_id"
            " union all select 'event', d.uri, e.ordinal::text, e.embedding::text from sag.events e"
            " join sag.documents d on d.source_id = e.source_id and d.id = e.document_id"
            " union all select 'key', k.type, k.normalized, k.embedding::text from sag.keys k"
            " where k.value_string is not null").fetchall()
    return {(kind, a, b): [float(x) for x in vec.strip("[]").split(",")] if vec else [] for kind, a, b, vec in rows}


def _indexes(dsn: str) -> set[str]:
    with psycopg.connect(dsn) as conn:
        return {r[0] for r in conn.execute("select indexname from pg_indexes where schemaname = 'sag' "
                                           "and indexname like '%embedding_hnsw'")}


def test_another_embedder_is_refused_with_the_way_forward_which_gives_a_fresh_database_s_vectors(
        db_dsn: str, empty_db_dsn: str, tmp_path: Path) -> None:
    _ingest(db_dsn, tmp_path)  # made with the default hash embedder (512 dimensions)
    refused = CliRunner().invoke(cli, ["search", "Who wrote the first compiler?"], env=_env(db_dsn, tmp_path, "hash:64"))
    assert refused.exit_code == 1
    assert "sag-pg db reembed" in str(refused.exception), refused.exception

    done = CliRunner().invoke(cli, ["db", "reembed", "--batch", "3"], env=_env(db_dsn, tmp_path, "hash:64"))
    assert done.exit_code == 0, done.output
    assert "re-embedding" in done.stderr and "chunks 3/" in done.stderr  # progress, batch by batch, on stderr
    assert done.stdout.startswith("re-embedded 4 chunks,")

    _ingest(empty_db_dsn, tmp_path, embedder="hash:64")  # what the same documents give when made with hash:64
    assert _vectors(db_dsn) == _vectors(empty_db_dsn)
    assert _indexes(db_dsn) == HNSW
    with psycopg.connect(db_dsn) as conn:  # the keys' check survives the new column
        assert conn.execute("select count(*) from pg_constraint where conrelid = 'sag.keys'::regclass"
                            " and conname = 'keys_embedding_only_for_strings'").fetchone() == (1,)
    status = CliRunner().invoke(cli, ["db", "status", "--json"], env=_env(db_dsn, tmp_path, "hash:64"))
    assert '"dimension": 64' in status.output and '"reembed": null' in status.output
    found = CliRunner().invoke(cli, ["search", "Who wrote the first compiler?", "--json"],
                               env=_env(db_dsn, tmp_path, "hash:64"))
    assert found.exit_code == 0 and '"hopper"' in found.output
    old = CliRunner().invoke(cli, ["search", "compiler"], env=_env(db_dsn, tmp_path, "hash"))
    assert old.exit_code == 1 and "hash-v1:64" in str(old.exception)  # the old one is now the mismatch


class Counting:
    """An embedder (the protocol) that counts the texts it embeds and can stop the run after some batches."""

    def __init__(self, dimension: int, *, stop_after: int | None = None) -> None:
        self.inner = HashEmbedder(dimension)
        self.name, self.dimension = self.inner.name, self.inner.dimension
        self.texts = 0
        self.calls = 0
        self.stop_after = stop_after

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if self.stop_after is not None and self.calls == self.stop_after:
            raise KeyboardInterrupt  # Ctrl-C while the embedding endpoint works on the next batch
        self.calls += 1
        self.texts += len(texts)
        return self.inner.embed(texts)


def test_an_interrupted_reembed_continues_where_it_stopped(db_dsn: str, empty_db_dsn: str, tmp_path: Path) -> None:
    _ingest(db_dsn, tmp_path)
    database = Database(db_dsn)
    first = Counting(64, stop_after=2)
    with pytest.raises(KeyboardInterrupt):
        reembedding.reembed(database, first, batch=2)
    with psycopg.connect(db_dsn) as conn:
        run = reembedding.state(conn)
        left = reembedding.remaining(conn, None)
    assert run is not None and run["name"] == "hash-v1:64" and run["dimension"] == 64
    assert first.texts == 4 and left["chunks"] == 0 and left["events"] > 0  # the two stored batches stay stored
    assert _indexes(db_dsn) == set()
    shown = CliRunner().invoke(cli, ["db", "status"], env=_env(db_dsn, tmp_path, "hash:64"))
    assert "reembed     unfinished: to hash-v1:64" in shown.output

    # Another embedder cannot start over an unfinished run.
    with pytest.raises(Exception, match="is unfinished"):
        reembedding.reembed(database, Counting(32))

    second = Counting(64)
    lines: list[str] = []
    report = reembedding.reembed(database, second, batch=2, progress=lines.append)
    assert report.resumed and lines[0].startswith("resuming the re-embedding with hash-v1:64")
    assert second.texts == sum(left.values())  # only what was left
    _ingest(empty_db_dsn, tmp_path, embedder="hash:64")
    assert _vectors(db_dsn) == _vectors(empty_db_dsn)
    assert _indexes(db_dsn) == HNSW
    with psycopg.connect(db_dsn) as conn:
        assert reembedding.state(conn) is None
    database.close()


def test_source_reembed_recomputes_one_source_and_refuses_a_switch_that_would_leave_others(
        db_dsn: str, tmp_path: Path) -> None:
    _ingest(db_dsn, tmp_path, source="a")
    _ingest(db_dsn, tmp_path, source="b")
    before = _vectors(db_dsn)
    switched = CliRunner().invoke(cli, ["source", "a", "--reembed"], env=_env(db_dsn, tmp_path, "hash:64"))
    assert switched.exit_code == 1
    assert "would leave 'b' with hash-v1:512 vectors" in str(switched.exception)
    assert "sag-pg db reembed" in str(switched.exception)

    same = CliRunner().invoke(cli, ["source", "a", "--reembed"], env=_env(db_dsn, tmp_path, "hash"))
    assert same.exit_code == 0, same.output
    assert same.stdout.startswith("re-embedded 4 chunks,")  # source a's only
    assert _vectors(db_dsn) == before and _indexes(db_dsn) == HNSW


@pytest.mark.parametrize("command", [["db", "reembed"], ["source", "default", "--reembed"]])
def test_after_a_reembed_the_next_ingest_of_the_same_directory_skips_every_unchanged_file(
        cli_env: dict[str, str], db_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], command: list[str]) -> None:
    """The content hash means "this content, with this extraction": re-embedding changes neither, so an
    unchanged file is not extracted and stored again afterwards; a changed one still is."""
    folder = tmp_path / "notes"
    folder.mkdir()
    for uri, text in DOCS.items():
        (folder / f"{uri}.md").write_text(text, encoding="utf-8")
    assert run_cli(capsys, "ingest", str(folder))[0] == 0
    monkeypatch.setenv("SAG_EMBEDDER", "hash:64")
    code, out, err = run_cli(capsys, *command)
    assert code == 0 and out.startswith("re-embedded 4 chunks,"), err
    with psycopg.connect(db_dsn) as conn:
        ids = conn.execute("select uri, id from sag.documents order by uri").fetchall()

    code, out, err = run_cli(capsys, "ingest", str(folder), "--json")
    assert code == 0, err
    report = json.loads(out)
    assert (report["documents"], report["skipped"]) == (0, 4), report
    with psycopg.connect(db_dsn) as conn:  # the same rows: nothing was stored again
        assert conn.execute("select uri, id from sag.documents order by uri").fetchall() == ids

    (folder / "hopper.md").write_text(DOCS["hopper"] + "\nShe retired from the Navy in 1986.", encoding="utf-8")
    code, out, err = run_cli(capsys, "ingest", str(folder), "--json")
    assert code == 0, err
    assert (json.loads(out)["documents"], json.loads(out)["skipped"]) == (1, 3)


def test_documents_stored_with_the_hash_that_named_the_embedder_are_still_unchanged(
        cli_env: dict[str, str], db_dsn: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Databases made before the hash left the embedder out: their unchanged documents are not re-processed."""
    folder = tmp_path / "notes"
    folder.mkdir()
    for uri, text in DOCS.items():
        (folder / f"{uri}.md").write_text(text, encoding="utf-8")
    assert run_cli(capsys, "ingest", str(folder))[0] == 0
    with psycopg.connect(db_dsn) as conn:
        for uri, title, content, metadata in conn.execute("select uri, title, content, metadata from sag.documents"):
            digest = hashlib.sha256()
            for part in (title, content, json.dumps(metadata, sort_keys=True, ensure_ascii=False),
                         RulesExtractor.name, "hash-v1:512"):  # the former formula: extractor and embedder last
                digest.update(part.encode() + b"\x00")
            conn.execute("update sag.documents set content_hash = %s where uri = %s", [digest.hexdigest(), uri])
    code, out, err = run_cli(capsys, "ingest", str(folder), "--json")
    assert code == 0, err
    assert (json.loads(out)["documents"], json.loads(out)["skipped"]) == (0, 4)

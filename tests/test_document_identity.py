"""Issue #37.1: a document's identity does not depend on where the command ran.  The same file ingested from
another directory (another URI, the same content) is skipped and named, not stored twice; the demo run from
two directories stores its documents once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psycopg


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sag_pg", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600, check=False)


def _uris(dsn: str, source: str) -> list[str]:
    with psycopg.connect(dsn) as conn:
        return [r[0] for r in conn.execute("select d.uri from sag.documents d join sag.sources s on s.id = "
                                           "d.source_id where s.name = %s order by 1", [source]).fetchall()]


def test_the_same_file_from_another_directory_is_not_a_second_document(db_dsn: str, tmp_path: Path) -> None:
    notes = tmp_path / "work" / "notes"
    notes.mkdir(parents=True)
    (notes / "halvard.md").write_text("# Halvard\n\nHalvard Berg founded Fjord Capital in 1998.\n", "utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("SAG_")}, "SAG_DATABASE_URL": db_dsn,
           "SAG_HOME": str(tmp_path / "home")}
    first = _run(["ingest", "notes/halvard.md", "--source", "s"], tmp_path / "work", env)
    assert first.returncode == 0, first.stderr
    again = _run(["ingest", str(notes / "halvard.md"), "--source", "s"], elsewhere, env)
    assert again.returncode == 0, again.stderr
    assert _uris(db_dsn, "s") == ["notes/halvard.md"]
    assert "identical to notes/halvard.md, already stored" in again.stderr
    copy = _run(["ingest", str(notes / "halvard.md"), "--source", "s", "--allow-duplicates"], elsewhere, env)
    assert copy.returncode == 0, copy.stderr
    assert _uris(db_dsn, "s") == ["halvard.md", "notes/halvard.md"]


def test_the_demo_from_two_directories_stores_each_document_once(db_dsn: str, tmp_path: Path) -> None:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("SAG_")}, "SAG_DATABASE_URL": db_dsn,
           "SAG_HOME": str(tmp_path / "home")}
    import sag_pg

    # From the folder that holds the package (its files lie under the working directory: URIs like
    # sag_pg/demo/docs/...) and from another one (URIs relative to the files' folder).
    (tmp_path / "b").mkdir()
    for where in (Path(sag_pg.__file__).resolve().parent.parent, tmp_path / "b"):
        done = _run(["demo"], where, env)
        assert done.returncode == 0, done.stderr
    assert len(_uris(db_dsn, "demo")) == 12

"""Documents and sources from the command line: list, show, export (round trip), stable URIs, source
deletion and creation, failed ingests, synonyms on stored keys, cluster pruning."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner

from sag_pg.cli import cli, main

HALVARD = """# Halvard Foods

## Origins
Halvard Foods was founded by Ingrid Halvard in Bergen in 1987.

## Growth
In 1999 Ingrid Halvard opened a second plant in Oslo. Kepler Labs bought Halvard Foods in 2011.
"""


@pytest.fixture
def env(db_dsn: str, tmp_path: Path) -> dict[str, str]:
    return {"SAG_DATABASE_URL": db_dsn, "SAG_HOME": str(tmp_path / "home"), "SAG_LLM": "", "SAG_EMBEDDER": ""}


def _run(args: list[str], env: dict[str, str], code: int = 0, input: str | None = None):  # type: ignore[no-untyped-def]
    result = CliRunner().invoke(cli, args, env=env, input=input)
    assert result.exit_code == code, (result.output, result.exception)
    return result


def _error(args: list[str], env: dict[str, str], capsys: pytest.CaptureFixture[str]) -> str:
    """The one line `sag-pg ARGS` prints when it fails with exit code 1 (through main, as a user sees it)."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        main(["--dsn", env["SAG_DATABASE_URL"], *args])
    assert exit_info.value.code == 1
    return capsys.readouterr().err


@pytest.fixture
def notes(env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """notes/halvard.md and notes/oslo.md under the current directory, ingested into "nordic" as `notes/`."""
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "halvard.md").write_text(HALVARD)
    (folder / "oslo.md").write_text("# Oslo\n\nOslo is the capital of Norway.\n")
    _run(["ingest", "notes/", "--source", "nordic", "--quiet"], env)
    return folder


def _uris(dsn: str, source: str) -> dict[str, str]:
    with psycopg.connect(dsn) as conn:
        return dict(conn.execute("select d.uri, d.content_hash from sag.documents d join sag.sources s "
                                 "on s.id = d.source_id where s.name = %s", [source]).fetchall())


def test_uris_are_relative_and_a_copy_elsewhere_updates_them(notes: Path, env: dict[str, str], tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    assert set(_uris(env["SAG_DATABASE_URL"], "nordic")) == {"notes/halvard.md", "notes/oslo.md"}
    # The same folder name somewhere outside the current directory: the same URIs, nothing new.
    copy = tmp_path / "home-copy" / "notes"
    copy.mkdir(parents=True)
    (copy / "halvard.md").write_text(HALVARD)
    (copy / "oslo.md").write_text("# Oslo\n\nOslo is the capital of Norway.\n")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")  # the copy is outside the current directory
    again = CliRunner().invoke(cli, ["ingest", str(copy), "--source", "nordic", "--json"], env=env)
    assert json.loads(again.output[again.output.index("{"):])["skipped"] == 2
    assert set(_uris(env["SAG_DATABASE_URL"], "nordic")) == {"notes/halvard.md", "notes/oslo.md"}
    monkeypatch.chdir(tmp_path)
    assert "deleted notes/halvard.md" in _run(["delete", "notes/halvard.md", "--source", "nordic"], env).output
    # A file's absolute path finds the document too (and the URIs older versions stored: absolute paths).
    assert _run(["delete", str(notes / "oslo.md"), "--source", "nordic"], env).exit_code == 0


def test_documents_lists_with_counts(notes: Path, env: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    listed = _run(["documents", "--json"], env)
    rows = json.loads(listed.output)
    assert [(r["source"], r["uri"]) for r in rows] == [("nordic", "notes/halvard.md"), ("nordic", "notes/oslo.md")]
    # The title is the heading, "Halvard Foods" (a key anyway): Bergen, Halvard Foods, Ingrid Halvard, 1987,
    # Origins | Oslo, 1999, Growth | Kepler Labs, 2011 = 10 keys (test_browse's title "Halvard" made 11).
    assert (rows[0]["chunk_count"], rows[0]["event_count"], rows[0]["key_count"]) == (2, 3, 10)
    table = _run(["documents", "--prefix", "notes/h"], env).output
    assert "notes/halvard.md" in table and "notes/oslo.md" not in table
    assert "no source named 'nope'; sources: nordic" in _error(["documents", "--source", "nope"], env, capsys)


def test_show_prints_chunks_events_and_keys(notes: Path, env: dict[str, str],
                                            capsys: pytest.CaptureFixture[str]) -> None:
    shown = _run(["show", "notes/halvard.md"], env).output
    assert shown.index("[0] Halvard Foods > Origins") < shown.index("[1] Halvard Foods > Growth")
    assert "- Kepler Labs bought Halvard Foods in 2011." in shown
    assert "person:Ingrid Halvard" in shown and "time:1987" in shown
    as_json = json.loads(_run(["show", "notes/halvard.md", "--json"], env).output)
    assert [len(c["events"]) for c in as_json["chunks"]] == [1, 2]
    assert _error(["show", "nothing.md"], env, capsys).startswith("Error: no document 'nothing.md'")


def test_export_round_trips_through_ingest(notes: Path, env: dict[str, str], tmp_path: Path) -> None:
    _run(["export", "--source", "nordic", "-o", str(tmp_path / "nordic.jsonl")], env)
    lines = (tmp_path / "nordic.jsonl").read_text().splitlines()
    assert [json.loads(line)["id"] for line in lines] == ["notes/halvard.md", "notes/oslo.md"]
    _run(["ingest", str(tmp_path / "nordic.jsonl"), "--source", "copy", "--quiet"], env)
    dsn = env["SAG_DATABASE_URL"]
    assert _uris(dsn, "copy") == _uris(dsn, "nordic")  # the same documents with the same content hashes
    # Exported to stdout and ingested into the source it came from: every document unchanged.
    exported = _run(["export", "--source", "nordic"], env).stdout
    (tmp_path / "again.jsonl").write_text(exported)
    again = _run(["ingest", str(tmp_path / "again.jsonl"), "--source", "nordic", "--json"], env)
    summary = json.loads(again.output[again.output.index("{"):])
    assert (summary["documents"], summary["skipped"]) == (0, 2)


def test_source_is_not_created_silently_and_can_be_deleted(notes: Path, env: dict[str, str],
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    unknown = _error(["source", "newsrc", "--key-type", "person=1"], env, capsys)
    assert "no source named 'newsrc'; sources: nordic" in unknown
    created = _run(["source", "newsrc", "--create", "--key-type", "person=1"], env)
    assert json.loads(created.output)["config"]["key_types"] == {"person": 1.0}
    gone = _run(["source", "nordic", "--delete", "--yes"], env)
    assert "deleted source nordic: 2 documents, 3 chunks, 4 events" in gone.output
    assert json.loads(_run(["sources", "--json"], env).output)[0]["name"] == "newsrc"
    assert "no source named 'nordic'" in _error(["source", "nordic", "--delete", "--yes"], env, capsys)


def test_a_failed_first_ingest_leaves_no_empty_source(env: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "bad.jsonl").write_text('{"id": "a", "text": 5}\n')
    _run(["ingest", str(tmp_path / "bad.jsonl"), "--source", "fresh"], env, code=1)
    assert json.loads(_run(["sources", "--json"], env).output) == []


def test_synonyms_merge_stored_keys_and_reach_questions(notes: Path, env: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "bwr.md").write_text("# BWR\n\nBWR is headquartered in Trondheim.\n")
    _run(["ingest", "bwr.md", "--source", "nordic", "--quiet"], env)
    (tmp_path / "syn.json").write_text(json.dumps({"BWR": "Brightwater Robotics"}))
    applied = _run(["source", "nordic", "--synonyms", str(tmp_path / "syn.json")], env)
    assert "re-ingested 1 stored documents holding an alias" in applied.output
    with psycopg.connect(env["SAG_DATABASE_URL"]) as conn:
        names = {r[0] for r in conn.execute("select normalized from sag.keys")}
    assert "bwr" not in names and "brightwaterrobotics" in names
    found = json.loads(_run(["search", "Where is BWR headquartered?", "--source", "nordic", "--json"], env).output)
    assert found["chunks"][0]["document_uri"] == "bwr.md"
    assert found["query"] == "Where is BWR headquartered? (Brightwater Robotics)"  # the alias's canonical name


def test_cluster_prune_keeps_the_newest_runs(notes: Path, env: dict[str, str]) -> None:
    for _ in range(3):
        _run(["cluster", "--source", "nordic", "--semantic-k", "0"], env)
    assert "deleted 2 cluster runs" in _run(["cluster", "--prune"], env).output
    assert "deleted 1 cluster runs" in _run(["cluster", "--prune", "--keep", "0", "--source", "nordic"], env).output


def test_progress_off_a_terminal_and_json_errors_point_at_the_line(env: dict[str, str], tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    ingest_module = importlib.import_module("sag_pg.cli.ingest")  # the package's `ingest` is the command
    monkeypatch.setattr(ingest_module, "PROGRESS_SECONDS", 0.0)  # a line per document instead of every 10 s
    (tmp_path / "extra.jsonl").write_text('{"id": "a", "text": "Ada Lovelace wrote notes."}\n'
                                          '{"id": "b", "text": "x"\n'
                                          '{"id": "c" "text": "y"}\n')
    result = CliRunner().invoke(cli, ["ingest", str(tmp_path / "extra.jsonl")], env=env)
    assert result.exit_code == 1
    lines = result.output.splitlines()
    # Each failure once; a cut line ends early, a missing comma is at its column (12: the `"` after "c" ).
    assert [line for line in lines if "extra.jsonl:" in line] == [
        f"failed: {tmp_path / 'extra.jsonl'}:2: not valid JSON (Expecting ',' delimiter at the end of the line)",
        f"failed: {tmp_path / 'extra.jsonl'}:3: not valid JSON (Expecting ',' delimiter at column 12)"]
    assert any(line.startswith("ingest: 3/3 documents (1 stored, 0 unchanged, 2 failed)") for line in lines)


def test_a_bad_llm_setting_names_the_variables(env: dict[str, str], capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SAG_LLM", "bogus")
    (tmp_path / "a.md").write_text("Ada Lovelace wrote notes.\n")
    message = _error(["ingest", str(tmp_path / "a.md")], env, capsys)
    assert "unknown LLM 'bogus' (SAG_LLM or --llm)" in message and "SAG_LLM_BASE_URL" in message
    assert "set llm_base_url" not in message

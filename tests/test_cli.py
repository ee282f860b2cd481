"""The CLI through click's runner: every command has help with an example; the data commands work."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from sag_pg import __version__
from sag_pg.cli import cli

README = Path(__file__).resolve().parent.parent / "README.md"


def _commands() -> list[list[str]]:
    found = []
    for name, command in cli.commands.items():
        found.append([name])
        for sub in getattr(command, "commands", {}):
            found.append([name, sub])
    return found


@pytest.mark.parametrize("path", _commands(), ids=lambda p: " ".join(p))
def test_every_command_has_help_with_an_example(path: list[str]) -> None:
    result = CliRunner().invoke(cli, [*path, "--help"])
    assert result.exit_code == 0, result.output
    assert "Example:" in result.output


def test_version() -> None:
    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0 and __version__ in result.output


def test_readme_commands_exist() -> None:
    text = README.read_text()
    code = "\n".join(re.findall(r"```(?:bash|sh)?\n(.*?)```", text, flags=re.DOTALL))
    used = set(re.findall(r"(?:^|&& |\s)(?:\.venv/bin/)?sag-pg ([a-z][a-z-]*)", code, flags=re.MULTILINE))
    used |= set(re.findall(r"`sag-pg ([a-z][a-z-]*)", text))
    assert used, "the README shows no sag-pg command"
    missing = used - set(cli.commands)
    assert not missing, f"README mentions commands that do not exist: {missing}"
    for sub in re.findall(r"sag-pg db ([a-z]+)", text):
        assert sub in cli.commands["db"].commands  # type: ignore[attr-defined]


@pytest.fixture
def runner_env(db_dsn: str, tmp_path: Path) -> dict[str, str]:
    return {"SAG_DATABASE_URL": db_dsn, "SAG_HOME": str(tmp_path / "home"), "SAG_LLM": "", "SAG_EMBEDDER": ""}


def _run(args: list[str], env: dict[str, str], input: str | None = None):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(cli, args, env=env, input=input, catch_exceptions=False)


def test_ingest_search_stats_delete(runner_env: dict[str, str], tmp_path: Path) -> None:
    doc = tmp_path / "lovelace.md"
    doc.write_text("# Ada Lovelace\n\nAda Lovelace worked with Charles Babbage on the Analytical Engine in 1843.\n")
    ingested = _run(["ingest", str(doc), "--json", "--source", "hist"], runner_env)
    assert ingested.exit_code == 0, ingested.output
    summary = json.loads(ingested.output[ingested.output.index("{"):])
    assert summary["documents"] == 1 and summary["failed"] == 0

    found = _run(["search", "Who worked with Babbage?", "--source", "hist", "--json"], runner_env)
    assert found.exit_code == 0, found.output
    data = json.loads(found.output)
    assert set(data) >= {"query", "chunks", "keys", "timings_ms"}
    top = data["chunks"][0]
    assert top["document_uri"] == "lovelace.md"  # relative to the folder named (tmp_path is not under cwd)
    assert {"chunk_id", "document_title", "title", "content", "score", "events", "keys"} <= set(top)

    explained = _run(["search", "Babbage", "--source", "hist", "--explain"], runner_env)
    assert explained.exit_code == 0 and "key-final" in explained.output

    stats = _run(["stats", "--source", "hist", "--json"], runner_env)
    assert json.loads(stats.output)["documents"] == 1
    listing = _run(["sources"], runner_env)
    assert "hist" in listing.output

    deleted = _run(["delete", str(doc.resolve()), "--source", "hist"], runner_env)
    assert deleted.exit_code == 0
    again = CliRunner().invoke(cli, ["delete", str(doc.resolve()), "--source", "hist"], env=runner_env)
    assert again.exit_code != 0 and "no document" in again.output


def test_stdin_and_failure_exit_code(runner_env: dict[str, str], tmp_path: Path) -> None:
    piped = _run(["ingest", "-", "--uri", "note-1", "--json"], runner_env, input="Grace Hopper wrote COBOL.\n")
    assert piped.exit_code == 0, piped.output
    (tmp_path / "bad.txt").write_bytes(b"\xff\xfe\x00binary")
    failed = CliRunner().invoke(cli, ["ingest", str(tmp_path / "bad.txt")], env=runner_env)
    assert failed.exit_code == 1
    assert "bad.txt" in failed.output


def test_unknown_source_and_normal_mode_without_llm_are_clear_errors(runner_env: dict[str, str]) -> None:
    from sag_pg.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["--dsn", runner_env["SAG_DATABASE_URL"], "search", "x", "--source", "nope"])
    assert exit_info.value.code == 1
    with pytest.raises(SystemExit) as exit_info:
        main(["--dsn", runner_env["SAG_DATABASE_URL"], "search", "x", "--mode", "normal"])
    assert exit_info.value.code == 1

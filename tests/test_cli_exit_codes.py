"""Every exit code a command's help promises is the one the console script returns (issue 37 item 4).

Run through ``sag_pg.cli.main``, the console script's entry point: click's test runner runs in standalone
mode, where ``Exit(1)`` works, and so it could not see that ``run_main`` dropped the code that click's
``main`` returns out of standalone mode (``kg import`` exited 0 with failed lines).  A command whose help
mentions an exit code must have its cases in CONTRACTS, so a new promise cannot go untested.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import click
import pytest

from sag_pg.cli import cli, main

KG_DATA = Path(__file__).parent / "data" / "kg" / "freebase-mini.nt"  # two malformed lines (18 and 19)


def _clean_kg(tmp: Path) -> list[str]:
    path = tmp / "clean.nt"
    path.write_text("".join(line for n, line in enumerate(KG_DATA.read_text(encoding="utf-8").splitlines(True), 1)
                            if n not in (18, 19)), encoding="utf-8")
    return ["kg", "import", str(path), "--source", "kg"]


def _bad_ingest(tmp: Path) -> list[str]:
    (tmp / "good.txt").write_text("Grace Hopper wrote COBOL.\n", encoding="utf-8")
    (tmp / "bad.txt").write_bytes(b"\xff\xfe\x00binary")
    return ["ingest", str(tmp / "good.txt"), str(tmp / "bad.txt")]


def _good_ingest(tmp: Path) -> list[str]:
    (tmp / "good.txt").write_text("Grace Hopper wrote COBOL.\n", encoding="utf-8")
    return ["ingest", str(tmp / "good.txt")]


# command (as its help is found) -> [(case, the arguments for a fresh database, the exit code promised)]
Case = tuple[str, Callable[[Path], list[str]], int]
CONTRACTS: dict[str, list[Case]] = {
    "kg import": [
        ("malformed lines", lambda tmp: ["kg", "import", str(KG_DATA), "--source", "kg"], 1),
        ("a clean file", _clean_kg, 0),
    ],
    "ingest": [("an input failed", _bad_ingest, 1), ("every input stored", _good_ingest, 0)],
    "": [  # the root group's help: 0 done, 1 an error, 2 a usage error
        ("done", lambda tmp: ["sources"], 0),
        ("an error", lambda tmp: ["search", "x", "--source", "nowhere"], 1),
        ("a usage error", lambda tmp: ["search", "x", "--no-such-option"], 2),
        ("a number out of range", lambda tmp: ["search", "x", "--top-n", "0"], 2),
        ("help", lambda tmp: ["--help"], 0),
    ],
}

PROMISE = re.compile(r"\bexit code|\bexit codes\b", re.IGNORECASE)


def _helps() -> dict[str, str]:
    found: dict[str, str] = {}

    def walk(command: click.Command, path: list[str]) -> None:
        found[" ".join(path)] = command.get_help(click.Context(command, info_name=" ".join(["sag-pg", *path])))
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, [*path, name])

    walk(cli, [])
    return found


def test_every_promised_exit_code_has_its_cases() -> None:
    promising = {path for path, text in _helps().items() if PROMISE.search(text)}
    assert {"kg import", "ingest", ""} <= promising  # the walk reads the help texts
    assert promising == set(CONTRACTS), "a command's help promises an exit code that no case here checks"


@pytest.mark.parametrize(("command", "case", "args", "code"),
                         [(command, case, args, code) for command, cases in CONTRACTS.items()
                          for case, args, code in cases],
                         ids=lambda v: v if isinstance(v, str) else "")
def test_the_console_script_returns_the_promised_exit_code(command: str, case: str,
                                                           args: Callable[[Path], list[str]], code: int,
                                                           db_dsn: str, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("SAG_DATABASE_URL", db_dsn)
    monkeypatch.setenv("SAG_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SAG_LLM", "")
    monkeypatch.setenv("SAG_EMBEDDER", "")
    with pytest.raises(SystemExit) as exit_info:
        main(args(tmp_path))
    out, err = capsys.readouterr()
    assert (exit_info.value.code or 0) == code, (case, out, err)
    assert "Traceback" not in out + err
    if code == 1:
        assert err.count("Error:") + err.count("failed") + err.count("skipped") >= 1, err

"""Out-of-range numbers are one clear error, never a traceback (issue 37 item 3, issue 36 item 9).

Every numeric option of every command is given 0, -1, 2**31 and 10**11 through the console script's entry
point: each value the option does not take is a usage error (exit code 2) with one ``Error:`` line naming the
option, before anything runs.  The options are found by walking the CLI, so a new option is covered the day it
is added; the values each one takes are written down here by hand.  The library refuses the same numbers
(QueryError naming the parameter) before any SQL runs, so Python callers and the MCP server get them too.
"""

from __future__ import annotations

from pathlib import Path

import click
import pytest

from sag_pg import SAG
from sag_pg.cli import cli, main
from sag_pg.errors import QueryError

VALUES = (0, -1, 2**31, 10**11)

# The values of VALUES each option accepts (written by hand from the options' meaning; anything else is refused).
ACCEPTS: dict[tuple[str, str], set[int]] = {
    ("search", "--depth"): {0},  # DataFlow: no propagation
    ("ask", "--level"): {0},  # the coarsest level
    ("cluster", "--alpha"): {0},
    ("cluster", "--threshold"): {0},
    ("cluster", "--semantic-k"): {0},  # keys only
    ("cluster", "--pairs-per-event"): {0},
    ("cluster", "--seed"): {0},
    ("cluster", "--limit"): {0},
    ("cluster", "--keep"): {0},
    ("bench-scale", "--seed"): {0},
    ("source", "--align-trigram"): {0},
    ("source", "--align-vector"): {0, -1},  # a cosine similarity
    ("graph add", "--weight"): {0},
    ("memory recall", "--min-score"): {0, 2**31, 10**11},  # a floor on the score: a high one finds nothing
    ("memory evict", "--ttl-days"): {0},
    ("memory evict", "--max-items"): {0},
    ("kg triples", "--seed"): {0},
    ("communities build", "--alpha"): {0},
    ("communities build", "--threshold"): {0},
    ("communities build", "--semantic-k"): {0},
    ("communities build", "--seed"): {0},
    ("communities list", "--level"): {0},
    ("documents", "--limit"): {0},  # no limit
    ("documents", "--offset"): {0},
}


def _skeletons(tmp: Path) -> dict[str, list[str]]:
    """The arguments each command needs besides the option under test."""
    (tmp / "bench").mkdir(exist_ok=True)
    (tmp / "kg.nt").write_text("", encoding="utf-8")
    return {
        "search": ["q"], "ask": ["q"], "bench": [str(tmp / "bench")], "memory recall": ["q"],
        "memory evict": ["--policy", "ttl"], "memory bench": [str(tmp / "bench")], "source": ["s"],
        "graph add": ["e"], "graph related": ["e"], "graph relations": ["e"], "kg relations": ["e"],
        "kg triples": ["e", "r"], "kg ask": ["q"], "kg import": [str(tmp / "kg.nt")], "delete": ["u"],
        "show": ["u"], "export": ["--source", "s"], "communities show": ["1"],
    }


def _numeric_options() -> list[tuple[str, str]]:
    found = []

    def walk(command: click.Command, path: list[str]) -> None:
        if isinstance(command, click.Group):
            for name, sub in command.commands.items():
                walk(sub, [*path, name])
            return
        for param in command.params:
            if isinstance(param, click.Option) and isinstance(param.type, (click.types.IntParamType,
                                                                            click.types.FloatParamType)):
                found.append((" ".join(path), param.opts[0]))

    walk(cli, [])
    # Lists of numbers, parsed by a callback: bench's Recall@k cut-offs, bench-scale's corpus sizes.
    return [*found, ("bench", "--k"), ("bench-scale", "--events")]


NUMERIC = _numeric_options()


def test_the_walk_finds_the_numeric_options() -> None:
    assert ("search", "--top-n") in NUMERIC and ("memory recall", "--top-n") in NUMERIC
    assert ("kg ask", "--kg-top-k") in NUMERIC and ("documents", "--offset") in NUMERIC
    assert not set(ACCEPTS) - set(NUMERIC), "ACCEPTS names an option that is gone"


def _cli(capsys: pytest.CaptureFixture[str], args: list[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_info:
        main(args)
    out, err = capsys.readouterr()
    return int(exit_info.value.code or 0), out, err


@pytest.mark.parametrize(("command", "option"), NUMERIC, ids=lambda v: v)
def test_every_numeric_option_refuses_what_it_does_not_take(command: str, option: str, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("SAG_HOME", str(tmp_path / "home"))  # nothing may start: the refusal comes first
    monkeypatch.setenv("SAG_DATABASE_URL", "postgresql://nobody@127.0.0.1:1/none")
    skeleton = _skeletons(tmp_path).get(command, [])
    for value in VALUES:
        if value in ACCEPTS.get((command, option), set()):
            continue
        code, out, err = _cli(capsys, [*command.split(), *skeleton, option, str(value)])
        assert code == 2, (value, out, err)
        errors = [line for line in (out + err).splitlines() if line.startswith("Error:")]
        assert len(errors) == 1 and f"'{option}'" in errors[0], (value, out + err)
        assert "Traceback" not in out + err


@pytest.mark.parametrize("value", ["99999999999", "2147483648"])
def test_top_n_beyond_an_integer_names_the_option(value: str, capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The reports: ``search --top-n 99999999999`` and ``memory recall`` ended in UndefinedFunction top_n => bigint."""
    monkeypatch.setenv("SAG_HOME", str(tmp_path / "home"))
    for command in (["search", "x"], ["memory", "recall", "x"], ["ask", "x"]):
        code, _out, err = _cli(capsys, [*command, "--top-n", value])
        assert code == 2
        assert f"Error: Invalid value for '--top-n': {value} is not in the range 1<=x<=10000." in err


def test_the_library_refuses_the_same_numbers_before_any_sql(sag: SAG) -> None:
    sag.ingest_text("Ada Lovelace worked with Charles Babbage.", uri="ada")
    for bad in (0, -1, 2**31, 10**11):
        with pytest.raises(QueryError, match=rf"^top_n must be a whole number from 1 to 10000, got {bad}$"):
            sag.search("Ada", top_n=bad)
        with pytest.raises(QueryError, match="^top_n must be"):
            sag.recall("Ada", top_n=bad)
        with pytest.raises(QueryError, match="^top_n must be"):
            sag.ask("Ada", top_n=bad)
        with pytest.raises(QueryError, match="^top_k must be"):
            sag.kg.relations("Ada", top_k=bad)
    with pytest.raises(QueryError, match="^offset must be"):
        sag.documents(offset=2**31)
    with pytest.raises(QueryError, match="^top_n must be"):
        sag.search("Ada", top_n=True)  # a bool is not a count
    assert sag.search("Ada", top_n=10_000).chunks  # the largest allowed works
    sag.close()

"""Issue #37.9: contradicting options are refused, not silently resolved; --explain's abbreviations are explained."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from sag_pg.cli import cli


@pytest.mark.parametrize("args", [
    ["communities", "build", "--source", "x", "--all-sources"],
    ["communities", "list", "--source", "x", "--all-sources"],
    ["search", "q", "--source", "x", "--all-sources"],
    ["ask", "q", "--source", "x", "--all-sources"],
], ids=lambda a: " ".join(a[:2]))
def test_source_and_all_sources_contradict(args: list[str], tmp_path) -> None:  # type: ignore[no-untyped-def]
    # No database is touched: the usage error comes first (SAG_DATABASE_URL points nowhere).
    result = CliRunner().invoke(cli, args, env={"SAG_DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none",
                                                "SAG_HOME": str(tmp_path)})
    assert result.exit_code == 2, result.output
    assert "--source and --all-sources contradict each other" in result.output


def test_explain_legend_in_help() -> None:
    text = " ".join(CliRunner().invoke(cli, ["search", "--help"]).output.split())
    for part in ("k: through its keys", "v: by vector", "t: by its words", "direct match:"):
        assert part in text

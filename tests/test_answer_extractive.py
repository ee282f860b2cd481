"""Issue #37: `ask` without an LLM answers from the same search, extractively, with citations (exit 0)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sag_pg import SAG
from sag_pg.config import Settings
from sag_pg.errors import ConfigError

DOCS = {
    "fjord.md": "# Fjord Capital\n\nHalvard Berg founded Fjord Capital in Oslo in 1998. The firm invests in "
                "shipping.\n\nFjord Capital financed the Svalbard expedition of 2004.\n",
    "ship.md": "# Kronprins Haakon\n\nThe Kronprins Haakon is a research vessel. It sailed to Svalbard in 2004 "
               "with twelve scientists.\n",
    "shenmo.md": "# 沈墨\n\n沈墨毕业于北溟大学。沈墨后来主持青岚计划。\n\n青岚计划的总部设在上海。\n",
}


@pytest.fixture
def sag(db_dsn: str, tmp_path: Path):  # type: ignore[no-untyped-def]
    with SAG(settings=Settings(database_url=db_dsn, home=tmp_path / "home")) as client:
        for uri, text in DOCS.items():
            client.ingest_text(text, uri=uri, source="notes")
        yield client


def test_the_matching_facts_cited(sag: SAG) -> None:
    answer = sag.ask("Who founded Fjord Capital?", source="notes", top_n=5)
    assert answer.mode == "extractive" and answer.sufficient
    assert answer.text.startswith("Halvard Berg founded Fjord Capital in Oslo in 1998. [")
    assert answer.citations[0].document_uri == "fjord.md"
    cited = {c.chunk_id for c in answer.citations}
    assert cited <= {hit.chunk_id for hit in answer.evidence}  # only chunks of the same search
    assert answer.notes[0].startswith("no LLM configured (SAG_LLM)")
    assert answer.usage == {}


def test_chinese(sag: SAG) -> None:
    answer = sag.ask("沈墨毕业于哪所大学？", source="notes", top_n=5)
    assert answer.sufficient and answer.text.startswith("沈墨毕业于北溟大学")


def test_nothing_that_matches_is_said(sag: SAG) -> None:
    answer = sag.ask("zzzyx qqqwv", source="notes", top_n=5, mode="extractive")
    assert not answer.sufficient and answer.citations == []


def test_normal_mode_still_needs_an_llm(sag: SAG) -> None:
    with pytest.raises(ConfigError, match="needs an LLM"):
        sag.ask("Who founded Fjord Capital?", source="notes", mode="normal")


def test_cli_exit_0_and_the_first_line_says_so(sag: SAG, db_dsn: str, tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "SAG_DATABASE_URL": db_dsn, "SAG_HOME": str(tmp_path / "home")}
    done = subprocess.run([sys.executable, "-m", "sag_pg", "ask", "Who founded Fjord Capital?", "--source", "notes"],
                          env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("no LLM configured (SAG_LLM): an extractive answer")
    assert "Halvard Berg founded Fjord Capital" in done.stdout and "fjord.md" in done.stdout

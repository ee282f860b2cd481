"""Issue #37.2: `sag-pg demo` prints the evidence it counts — where each expected document ranks among the
ranks it checks, and the sentence holding the answer — with snippets cut at sentence boundaries."""

from __future__ import annotations

import re

from click.testing import CliRunner

from sag_pg.cli import cli
from sag_pg.cli.demo import snippet
from sag_pg.demo import DEMO_QUERIES


def test_snippets_start_and_end_at_sentences() -> None:
    text = "建安十三年，曹操南下，刘备退守夏口。章武三年，刘备临终托孤于诸葛亮。诸葛亮后来病逝于五丈原。"
    assert snippet(text, "托孤") == "章武三年，刘备临终托孤于诸葛亮。"
    assert snippet(text, "五丈原") == "诸葛亮后来病逝于五丈原。"
    assert snippet(text, None) == "建安十三年，曹操南下，刘备退守夏口。"
    long = "Apple " + "really " * 40 + "bought NeXT for $429 million in 1996. Next sentence."
    cut = snippet(long, "$429 million", width=60)
    assert "$429 million" in cut and cut.startswith("…") and not cut.startswith("… ")
    assert len(cut) <= 62 and re.match(r"…[A-Za-z$]", cut)  # starts at a word


def test_the_demo_shows_what_it_counts(demo_dsn: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    # On a database that holds the demo corpus already (conftest's demo_dsn: the documents `sag-pg demo`
    # ingests, as it ingests them): the demo finds every document unchanged and searches the same rows.
    result = CliRunner().invoke(cli, ["demo"], env={"SAG_DATABASE_URL": demo_dsn, "SAG_HOME": str(tmp_path),
                                                    "SAG_LLM": "", "SAG_EMBEDDER": "", "COLUMNS": "1000"},
                                 catch_exceptions=False)
    assert result.exit_code == 0, result.output
    out = result.output
    assert "demo: 0 documents ingested, 12 unchanged" in out
    assert f"of {len(DEMO_QUERIES)} questions had all their expected documents in the top 5." in out
    lines = out.splitlines()
    answer_lines = [i for i, line in enumerate(lines) if line.rstrip().endswith("(answer)")]
    assert len(answer_lines) == len(DEMO_QUERIES)  # every answer document is shown with its rank
    for i, query in zip(answer_lines, DEMO_QUERIES, strict=True):
        shown = lines[i + 1]
        assert query.answer in shown or "the answer is in another passage of this document" in shown, shown
        rank = int(lines[i].split(".")[0])
        assert 1 <= rank <= 5

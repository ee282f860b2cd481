"""Issue #37 item 13: answer prompts of 1,900-2,500 tokens took 7-17 min a call on a CPU model.  The evidence is
budgeted by tokens (Settings.evidence_tokens / SAG_EVIDENCE_TOKENS): best passage first, events then text cut,
the rest named as left out."""

from __future__ import annotations

from pathlib import Path

import psycopg

from sag_pg import SAG, Settings, prompts
from sag_pg.answer.evidence import estimate_tokens

from .openai_server import FakeOpenAIServer
from .test_answer import answer_json, evidence_ids, last_user, llm_settings

# Eight long documents about the same engine: every one of them is evidence for the question.
DOCS = {f"engine-{n}.md": f"# Engine report {n}\n\n" + " ".join(
    f"The Analytical Engine report {n} describes part {p}: Babbage drew the mill and the store in {1830 + p}, "
    f"and Lovelace annotated the cards of step {p}." for p in range(12)) for n in range(8)}
QUESTION = "What did Babbage and Lovelace do for the Analytical Engine?"


def _evidence(prompt: str) -> str:
    """The evidence in an answer prompt: the prompt less its frame (the template rendered around nothing)."""
    before, after = prompts.render("answer_json", query=QUESTION, evidence="\0").split("\0")
    assert prompt.startswith(before) and prompt.endswith(after)
    return prompt[len(before):len(prompt) - len(after)]


def test_the_evidence_stays_within_its_token_budget(db_dsn: str, tmp_path: Path,
                                                    openai_server: FakeOpenAIServer) -> None:
    with SAG(settings=Settings(database_url=db_dsn, home=tmp_path)) as sag:
        for uri, text in DOCS.items():
            sag.ingest_text(text, uri=uri)
    with psycopg.connect(db_dsn) as conn:
        chunks = conn.execute("select count(*) from sag.chunks").fetchone()[0]
    assert chunks >= 8

    openai_server.script(answer_json("Babbage drew the mill.", sufficient=False),
                         answer_json("Babbage drew the mill.", sufficient=False))
    with SAG(settings=llm_settings(db_dsn, tmp_path, openai_server, evidence_tokens=0)) as unbounded:
        whole = unbounded.ask(QUESTION, top_n=8)
    with SAG(settings=llm_settings(db_dsn, tmp_path, openai_server, evidence_tokens=400)) as bounded:
        budgeted = bounded.ask(QUESTION, top_n=8)
    full_prompt, small_prompt = (last_user(r) for r in openai_server.requests)

    assert estimate_tokens(_evidence(full_prompt)) > 1000  # the case needs evidence over the budget
    evidence = _evidence(small_prompt)
    assert estimate_tokens(evidence) <= 400 + 40  # the budget, and at most one short passage's minimum over it
    shown = evidence_ids(small_prompt)
    assert shown and shown == evidence_ids(full_prompt)[:len(shown)]  # the best passages, in the same order
    left_out = len(whole.evidence) - len(shown)
    assert left_out > 0 and f"({left_out} more passages left out: the evidence budget of 400 tokens" in evidence
    assert [c.chunk_id for c in budgeted.evidence] == [c.chunk_id for c in whole.evidence]  # the search is the same; only what the LLM reads is budgeted


def test_estimate_counts_cjk_characters_and_english_by_four() -> None:
    assert estimate_tokens("诸葛亮联合孙权") == 7
    assert estimate_tokens("abcdefgh") == 2
    assert estimate_tokens("曹操 and Liu") == 2 + (len(" and Liu") + 3) // 4

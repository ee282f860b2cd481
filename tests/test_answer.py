"""Answers with citations, against the local OpenAI-compatible server (the real openai client talks to it).

The corpus is ingested offline (rule extractor); a second client on the same database has the LLM.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner

from sag_pg import SAG, ConfigError, QueryError, Settings, prompts
from sag_pg.answer.cited import NO_EVIDENCE_ANSWER
from sag_pg.answer.evidence import check_citations, format_evidence, parse_citations
from sag_pg.cli._common import AppContext
from sag_pg.cli.ask import ask as ask_command

from .openai_server import FakeOpenAIServer, Scripted

DOCS = {
    "ada.md": "# Ada Lovelace\n\nAda Lovelace wrote the first published algorithm in 1843. "
              "She worked with Charles Babbage on the Analytical Engine.",
    "babbage.md": "# Charles Babbage\n\nCharles Babbage designed the Difference Engine in London. "
                  "Babbage was born in 1791.",
    "turing.md": "# Alan Turing\n\nAlan Turing proposed the Turing machine in 1936 at Cambridge.",
}


# -- helpers shared with test_deep.py ------------------------------------------------------------------


def last_user(request: dict[str, Any]) -> str:
    return str([m["content"] for m in request["messages"] if m["role"] == "user"][-1])


def evidence_ids(prompt: str) -> list[int]:
    """The chunk ids of the evidence blocks in a prompt, in order."""
    return [int(i) for i in re.findall(r"^\[(\d+)\] ", prompt, flags=re.MULTILINE)]


def llm_settings(db_dsn: str, home: Path, server: FakeOpenAIServer, **more: Any) -> Settings:
    return Settings(database_url=db_dsn, home=home, llm="openai:test", llm_base_url=server.base_url,
                    llm_max_retries=0, **more)


@pytest.fixture
def corpus(sag: SAG) -> dict[str, int]:
    """The three documents, ingested without an LLM; their chunk ids by uri (one chunk each)."""
    for uri, text in DOCS.items():
        sag.ingest_text(text, uri=uri)
    with psycopg.connect(sag.dsn) as conn:
        rows = conn.execute("select d.uri, c.id from sag.chunks c join sag.documents d on d.id = c.document_id")
        return {uri: int(chunk_id) for uri, chunk_id in rows}


@pytest.fixture
def asker(db_dsn: str, tmp_path: Path, openai_server: FakeOpenAIServer, corpus: dict[str, int]) -> Iterator[SAG]:
    """A client with an LLM (the test server) on the ingested corpus."""
    with SAG(settings=llm_settings(db_dsn, tmp_path, openai_server)) as client:
        yield client


def answer_json(answer: str, sufficient: bool = True, missing: str = "") -> str:
    return json.dumps({"answer": answer, "sufficient": sufficient, "missing": missing})


# -- answers -------------------------------------------------------------------------------------------


def test_answer_cites_the_evidence_and_drops_unknown_ids(asker: SAG, corpus: dict[str, int],
                                                          openai_server: FakeOpenAIServer) -> None:
    ada = corpus["ada.md"]

    def model(request: dict[str, Any]) -> str:
        prompt = last_user(request)
        assert prompt.startswith("Answer the question using only the numbered evidence")
        assert ada in evidence_ids(prompt)
        return answer_json(f"Ada Lovelace wrote it in 1843 [{ada}][999999]. She worked with Babbage [999998, {ada}].")

    openai_server.responder = model
    answer = asker.ask("Who wrote the first published algorithm?", top_n=3)
    prompt = openai_server.prompts()[0]
    # The evidence: each chunk under its id with its title, its text, and the events extracted from it.
    assert f"[{ada}] Ada Lovelace\nAda Lovelace wrote the first published algorithm in 1843." in prompt
    assert "Events:\n- " in prompt
    assert answer.sufficient and answer.mode == "fast"
    assert [(c.chunk_id, c.document_uri, c.title) for c in answer.citations] == [(ada, "ada.md", "Ada Lovelace")]
    assert answer.dropped_citations == [999999, 999998]
    assert "9999" not in answer.text
    assert answer.text == f"Ada Lovelace wrote it in 1843 [{ada}]. She worked with Babbage [{ada}]."
    assert any("999999" in note for note in answer.notes)
    assert len(answer.evidence) == 3
    data = json.loads(json.dumps(answer.to_dict()))
    assert data["citations"] == [{"chunk_id": ada, "document_uri": "ada.md", "title": "Ada Lovelace",
                                  "document_title": "Ada Lovelace"}]
    assert {e["chunk_id"] for e in data["evidence"]} == set(corpus.values())
    assert data["usage"] == {"prompt_tokens": 10, "completion_tokens": 5, "calls": 1}


def test_insufficient_evidence_is_said(asker: SAG, corpus: dict[str, int],
                                       openai_server: FakeOpenAIServer) -> None:
    openai_server.script(answer_json(f"The evidence names Babbage's birth year [{corpus['babbage.md']}] but not "
                                     "his death.", sufficient=False, missing="the year Babbage died"))
    answer = asker.ask("When did Charles Babbage die?")
    assert not answer.sufficient
    assert answer.missing == "the year Babbage died"
    assert [c.document_uri for c in answer.citations] == ["babbage.md"]


def test_no_evidence_means_no_llm_call(sag: SAG, asker: SAG, openai_server: FakeOpenAIServer) -> None:
    sag.ingest_text("# Tmp\n\nA placeholder.", uri="tmp.md", source="empty")  # offline: a source, then
    sag.delete_document("tmp.md", source="empty")  # nothing in it
    answer = asker.ask("Who wrote the first published algorithm?", source="empty")
    assert openai_server.chat_count == 0
    assert (answer.text, answer.sufficient, answer.citations) == (NO_EVIDENCE_ANSWER, False, [])


def test_normal_mode_rewrites_then_answers(asker: SAG, corpus: dict[str, int],
                                           openai_server: FakeOpenAIServer) -> None:
    openai_server.script(
        json.dumps({"query": "Which engine did Charles Babbage design?",
                    "keys": [{"type": "person", "value": "Charles Babbage"}]}),
        answer_json(f"The Difference Engine [{corpus['babbage.md']}]."),
    )
    answer = asker.ask("what did he design?", mode="normal", top_n=2)
    assert openai_server.prompts()[0].startswith("You rewrite a user's question")
    assert answer.usage["calls"] == 2
    assert answer.to_dict()["rewrite"]["query"] == "Which engine did Charles Babbage design?"
    assert answer.citations[0].document_uri == "babbage.md"


def test_without_an_llm_only_fast_mode_answers(sag: SAG, corpus: dict[str, int]) -> None:
    for mode in ("normal", "deep"):
        with pytest.raises(ConfigError, match="SAG_LLM"):
            sag.ask("Who wrote the first published algorithm?", mode=mode)
    assert sag.ask("Who wrote the first published algorithm?").mode == "extractive"  # tests/test_answer_extractive.py


def test_an_answer_that_repeats_the_prompt_example_is_discarded(asker: SAG, corpus: dict[str, int],
                                                                 openai_server: FakeOpenAIServer) -> None:
    """Issue #37: a small model copied the output format's example as its answer; it is no answer."""
    example = re.search(r'\{"answer": "([^"]*)"', prompts.render("answer_json", query="q", evidence="e"))
    assert example is not None
    openai_server.script(answer_json(example.group(1) + f" [{corpus['ada.md']}]."))
    answer = asker.ask("Who wrote the first published algorithm?")
    assert not answer.sufficient and answer.citations == []
    assert answer.notes == ["the model's answer repeated the prompt's example and was discarded"]
    # The example itself is neutral: no fact of any demo subject a model could pass off as an answer.
    assert not re.search(r"\d", example.group(1)) and "iPhone" not in example.group(1)


def test_bad_requests_are_query_errors(asker: SAG) -> None:
    with pytest.raises(QueryError, match="unknown mode"):
        asker.ask("q", mode="fancy")
    with pytest.raises(QueryError, match="max_rounds: only for deep mode"):
        asker.ask("q", max_rounds=2)
    with pytest.raises(QueryError, match="keys"):
        asker.ask("q", mode="deep", keys=["Ada"])


# -- the CLI -------------------------------------------------------------------------------------------


def test_cli_ask_json(db_dsn: str, tmp_path: Path, openai_server: FakeOpenAIServer,
                      corpus: dict[str, int]) -> None:
    openai_server.script(answer_json(f"Alan Turing, in 1936 [{corpus['turing.md']}]."))
    app = AppContext(settings=llm_settings(db_dsn, tmp_path, openai_server))
    result = CliRunner().invoke(ask_command, ["Who proposed the Turing machine?", "--json", "--top-n", "2"],
                                obj=app, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["answer"].startswith("Alan Turing")
    assert data["citations"][0]["document_uri"] == "turing.md" and data["citations"][0]["title"] == "Alan Turing"
    assert len(data["evidence"]) == 2 and data["evidence"][0]["content"]


def test_cli_ask_prints_sources_and_gaps(db_dsn: str, tmp_path: Path, openai_server: FakeOpenAIServer,
                                         corpus: dict[str, int]) -> None:
    openai_server.script(answer_json(f"Babbage was born in 1791 [{corpus['babbage.md']}].", sufficient=False,
                                     missing="his death"))
    app = AppContext(settings=llm_settings(db_dsn, tmp_path, openai_server))
    result = CliRunner().invoke(ask_command, ["When did Babbage live?"], obj=app, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "insufficient evidence: his death" in result.output
    assert f"[{corpus['babbage.md']}] babbage.md" in result.output


def test_cli_ask_help_has_an_example() -> None:
    result = CliRunner().invoke(ask_command, ["--help"])
    assert result.exit_code == 0 and "Example:" in result.output and "--max-rounds" in result.output


def test_cli_deep_options_need_deep_mode(tmp_path: Path) -> None:
    app = AppContext(settings=Settings(database_url="postgresql://unused", home=tmp_path))
    result = CliRunner().invoke(ask_command, ["q", "--max-rounds", "2"], obj=app)
    assert result.exit_code == 2 and "--max-rounds: only with --mode deep" in result.output


# -- citations and evidence, without a server ----------------------------------------------------------


def test_parse_citations_forms() -> None:
    text = "A [3]. B [4][5]. C [6, 7]. D [chunk 8] E [#9] F [3] G [a] H [link](http://x) I [10，11]"
    assert parse_citations(text) == [3, 4, 5, 6, 7, 8, 9, 10, 11]


def test_check_citations_keeps_known_ids_only() -> None:
    checked = check_citations("A [1]. B [2][9]. C [9]. D [1, 9, 2].", known=[1, 2])
    assert checked.text == "A [1]. B [2]. C. D [1][2]."
    assert (checked.cited, checked.unknown) == ([1, 2], [9])
    untouched = check_citations("A [1, 2].", known=[1, 2])
    assert untouched.text == "A [1, 2]." and untouched.unknown == []


def test_format_evidence_without_chunks() -> None:
    assert format_evidence([]) == "(no passages found)"


NEW_PROMPTS = {
    "answer_json": {"query", "evidence"},
    "deep_answer": {"query", "findings", "evidence"},
    "node_query": {"query", "question", "parents", "findings"},
    "node_answer": {"query", "question", "parents", "search", "evidence"},
    "react_check": {"query", "findings"},
    "plan_reask": {"prompt", "problems", "previous"},
}


@pytest.mark.parametrize("name", sorted(NEW_PROMPTS))
def test_answer_prompts_have_their_documented_placeholders(name: str) -> None:
    assert prompts.placeholders(prompts.load(name)) == NEW_PROMPTS[name]
    rendered = prompts.fill(prompts.load(name), {p: f"<{p}>" for p in NEW_PROMPTS[name]})
    assert "{{" not in rendered


def test_scripted_failure_is_an_llm_error(asker: SAG, openai_server: FakeOpenAIServer) -> None:
    from sag_pg import LLMError

    openai_server.script(Scripted(status=400, body={"error": {"message": "bad request"}}))
    with pytest.raises(LLMError, match="answer_json"):
        asker.ask("Who wrote the first published algorithm?")

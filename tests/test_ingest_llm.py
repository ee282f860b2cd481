"""Ingestion with an LLM, against a local OpenAI-compatible server (the real openai client talks to it)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from sag_pg import SAG, Settings

from .integrity import violations
from .openai_server import FakeOpenAIServer, Scripted


def _last_user(request: dict[str, Any]) -> str:
    return [m["content"] for m in request["messages"] if m["role"] == "user"][-1]


def _event_of(prompt: str) -> str:
    return prompt.split("【事件】:", 1)[1].split("【", 1)[0]


def extraction_responder(request: dict[str, Any]) -> str | Scripted:
    """A tiny deterministic 'model': one event per sentence, the capitalised words as person keys."""
    prompt = _last_user(request)
    if prompt.startswith("You are summarising"):
        return "A summary."
    if prompt.startswith("You extract events"):
        sentences = sorted(set(re.findall(r"[A-Z][a-z]+ [A-Z][a-z]+ met [^.\n]*\.", prompt)))
        return json.dumps({"events": [{"title": s[:20], "content": s} for s in sentences]})
    if "【事件】" in prompt:
        event = _event_of(prompt)
        names = re.findall(r"[A-Z][a-z]+ [A-Z][a-z]+", event)
        return json.dumps({"keys": [{"type": "person", "value": n} for n in names] + [{"type": "year", "value": 1}]})
    return Scripted(status=400, body={"error": {"message": f"unexpected prompt: {prompt[:60]}"}})


@pytest.fixture
def llm_sag(db_dsn: str, openai_server: FakeOpenAIServer, tmp_path: Path) -> Iterator[SAG]:
    settings = Settings(database_url=db_dsn, home=tmp_path, llm="openai:test-model",
                        llm_base_url=openai_server.base_url, llm_max_retries=2, llm_concurrency=2)
    with SAG(settings=settings) as sag:
        yield sag


def test_llm_ingest_uses_pre_retrieval(db_dsn: str, openai_server: FakeOpenAIServer, llm_sag: SAG) -> None:
    openai_server.responder = extraction_responder
    sag = llm_sag
    sag.ingest_text("# One\n\nAda Lovelace met Charles Babbage in London.", uri="one")
    openai_server.requests.clear()
    report = sag.ingest_text("# Two\n\nAda Lovelace met Mary Somerville in London.", uri="two")
    assert report.documents == 1 and report.prompt_tokens > 0
    key_prompts = [p for p in openai_server.prompts() if "【事件】" in p]
    assert len(key_prompts) == 1
    prompt = key_prompts[0]
    # The keys of the first document come back as reference lists for the second.
    direct = prompt.split("**直接相关属性:**", 1)[1].split("**相似事件中的Key示例", 1)[0]
    from_events = prompt.split("**相似事件中的Key示例", 1)[1].split("**提取规则", 1)[0]
    assert "Ada Lovelace" in direct and "Charles Babbage" in direct
    assert "Charles Babbage" in from_events
    types = prompt.split("【属性type】", 1)[1].split("---", 1)[0]
    for key_type in ("person", "location", "organization", "time", "topic", "action", "tag"):
        assert key_type in types
    with psycopg.connect(db_dsn) as conn:
        # 'year' is not one of the source's key types: dropped.
        assert conn.execute("select count(*) from sag.keys where type = 'year'").fetchone() == (0,)
        assert conn.execute("select count(*) from sag.keys where normalized = 'adalovelace'").fetchone() == (1,)
        tokens = conn.execute("select prompt_tokens, completion_tokens from sag.documents where uri = 'two'")
        assert tokens.fetchone() == (report.prompt_tokens, report.completion_tokens)
        assert violations(conn) == {}


def test_a_malformed_answer_fails_only_its_document(db_dsn: str, openai_server: FakeOpenAIServer, llm_sag: SAG,
                                                    tmp_path: Path) -> None:
    def responder(request: dict[str, Any]) -> str | Scripted:
        prompt = _last_user(request)
        if "Broken" in prompt and prompt.startswith("You extract events"):
            return "this is not JSON at all"
        return extraction_responder(request)

    openai_server.responder = responder
    sag = llm_sag
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("\n".join(json.dumps(d) for d in [
        {"id": "good-1", "title": "Good", "text": "Ada Lovelace met Charles Babbage in London."},
        {"id": "bad", "title": "Broken", "text": "Grace Hopper met Howard Aiken at Harvard."},
        {"id": "good-2", "title": "Good", "text": "Alan Turing met Alonzo Church in Princeton."},
    ]))
    report = sag.ingest_files([corpus])
    assert (report.documents, report.failed) == (2, 1)
    assert "c.jsonl:2" in report.errors[0] and "JSON" in report.errors[0]
    with psycopg.connect(db_dsn) as conn:
        uris = {r[0] for r in conn.execute("select uri from sag.documents")}
        assert uris == {"good-1", "good-2"}
        assert conn.execute("select count(*) from sag.keys where normalized = 'gracehopper'").fetchone() == (0,)
        assert violations(conn) == {}


def test_rate_limits_are_retried_during_ingest(openai_server: FakeOpenAIServer, llm_sag: SAG) -> None:
    openai_server.responder = extraction_responder
    openai_server.fail(429, "slow down", headers={"Retry-After": "0"})
    sag = llm_sag
    report = sag.ingest_text("# T\n\nAda Lovelace met Charles Babbage in London.", uri="t")
    assert report.documents == 1
    assert openai_server.chat_count >= 4  # the 429, then summary, events, keys

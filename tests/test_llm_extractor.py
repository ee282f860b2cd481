"""LLMExtractor against the local OpenAI-compatible server: prompts sent, answers turned into drafts."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from sag_pg.extract.llm_extractor import LLMExtractor, coerce_value, parse_time
from sag_pg.llm.openai_llm import OpenAILLM
from sag_pg.types import Chunk, EventDraft, KeyDraft, KeyRef, PreRetrieval
from tests import openai_server as fake_openai
from tests.openai_server import FakeOpenAIServer

# The fixture, usable here even before conftest registers tests.openai_server as a plugin.
openai_server = fake_openai.openai_server

CHUNK = Chunk(
    ordinal=0,
    title="History",
    content="In 1976 Jobs and Wozniak founded Apple.\nIn 2007 Jobs introduced the iPhone.",
    start_line=1,
    end_line=2,
)
PRE = PreRetrieval(
    direct_keys=[KeyRef("person", "史蒂夫·乔布斯"), KeyRef("organization", "苹果公司")],
    keys_from_events=[KeyRef("location", "旧金山")],
    key_types=["person", "organization", "time", "location"],
)
EVENT = EventDraft(
    title="乔布斯发布iPhone",
    content="2007年1月9日，乔布斯在旧金山发布了第一代iPhone。",
    time=datetime(2007, 1, 9),
)


@pytest.fixture
def llm(openai_server: FakeOpenAIServer) -> Iterator[OpenAILLM]:
    client = OpenAILLM("test-model", base_url=openai_server.base_url, backoff_base=0.001, backoff_max=0.01)
    yield client
    client.close()


def test_summarize_sends_the_picked_sentences(openai_server: FakeOpenAIServer, llm: OpenAILLM) -> None:
    openai_server.script("  Apple was founded in 1976 and launched the iPhone in 2007.\n")
    summary = LLMExtractor(llm).summarize(
        ["Apple was founded in 1976.", "  ", "Jobs introduced\nthe iPhone in 2007."], title="Apple"
    )
    assert summary == "Apple was founded in 1976 and launched the iPhone in 2007."
    prompt = openai_server.prompts()[0]
    assert "Document title: Apple" in prompt
    assert "- Apple was founded in 1976.\n- Jobs introduced the iPhone in 2007." in prompt


def test_summarize_without_sentences_does_not_call(openai_server: FakeOpenAIServer, llm: OpenAILLM) -> None:
    assert LLMExtractor(llm).summarize([], title="Empty") == ""
    assert openai_server.chat_count == 0


def test_events_are_parsed(openai_server: FakeOpenAIServer, llm: OpenAILLM) -> None:
    answer = {
        "events": [
            {"title": "Apple founded", "content": "Jobs and Wozniak founded Apple in 1976.", "time": "1976"},
            {"title": "iPhone", "content": "Jobs introduced the iPhone.", "time": "2007-01-09"},
            {"title": "Empty", "content": "   ", "time": None},
            {
                "content": "Apple is based in Cupertino, California, where it has its headquarters campus, Apple Park.",
                "time": "sometime",
            },
            {"title": "Stamp", "content": "A precise event.", "time": "2007-01-09T09:41:00Z"},
        ]
    }
    openai_server.script(f"```json\n{json.dumps(answer)}\n```")
    events = LLMExtractor(llm).events(CHUNK, summary="Apple history.", doc_title="Apple Inc.")
    assert [(e.title, e.content, e.time) for e in events] == [
        ("Apple founded", "Jobs and Wozniak founded Apple in 1976.", datetime(1976, 1, 1)),
        ("iPhone", "Jobs introduced the iPhone.", datetime(2007, 1, 9)),
        (
            "Apple is based in Cupertino, California, where it has its headquarters campus…",
            "Apple is based in Cupertino, California, where it has its headquarters campus, Apple Park.",
            None,
        ),
        ("Stamp", "A precise event.", datetime(2007, 1, 9, 9, 41, tzinfo=UTC)),
    ]
    assert all(e.keys == [] for e in events)
    prompt = openai_server.prompts()[0]
    assert "Document title: Apple Inc." in prompt
    assert "Apple history." in prompt
    assert "Part: History" in prompt
    assert CHUNK.content in prompt
    # Structured output: the events schema travels as response_format.
    sent = openai_server.requests[0]["response_format"]
    assert sent["type"] == "json_schema" and sent["json_schema"]["name"] == "extract_events"
    assert sent["json_schema"]["schema"]["type"] in ("object", "array")


def test_events_bare_array_and_empty_chunk(openai_server: FakeOpenAIServer, llm: OpenAILLM) -> None:
    openai_server.script('[{"title": "t", "content": "c"}]')
    extractor = LLMExtractor(llm)
    assert extractor.events(CHUNK, summary="", doc_title="D") == [EventDraft("t", "c")]
    blank = Chunk(ordinal=1, title="", content="  \n", start_line=3, end_line=3)
    assert extractor.events(blank, summary="", doc_title="D") == []
    assert openai_server.chat_count == 1


def test_keys_prompt_carries_the_pre_retrieval(openai_server: FakeOpenAIServer, llm: OpenAILLM) -> None:
    openai_server.script('{"keys": []}')
    assert LLMExtractor(llm).keys(EVENT, summary="苹果公司的历史。", pre=PRE) == []
    prompt = openai_server.prompts()[0]
    assert (
        "【事件】:\n乔布斯发布iPhone\n2007年1月9日，乔布斯在旧金山发布了第一代iPhone。\n时间: 2007-01-09"
        in prompt
    )
    assert "【属性type】\n- person\n- organization\n- time\n- location\n" in prompt
    assert "**直接相关属性:**\n- person: 史蒂夫·乔布斯\n- organization: 苹果公司\n" in prompt
    assert "**相似事件中的Key示例 (用于参考):**\n- location: 旧金山\n" in prompt
    assert "苹果公司的历史。" in prompt


def test_keys_prompt_with_empty_reference_lists(openai_server: FakeOpenAIServer, llm: OpenAILLM) -> None:
    openai_server.script('{"keys": [{"type": "person", "value": "Jobs"}]}')
    pre = PreRetrieval(direct_keys=[], keys_from_events=[], key_types=["person"])
    assert LLMExtractor(llm).keys(EVENT, summary="", pre=pre) == [KeyDraft("person", "Jobs", "Jobs")]
    prompt = openai_server.prompts()[0]
    assert "**直接相关属性:**\n（无）" in prompt
    assert "**相似事件中的Key示例 (用于参考):**\n（无）" in prompt


def test_keys_are_filtered_and_typed(openai_server: FakeOpenAIServer, llm: OpenAILLM) -> None:
    answer = {
        "keys": [
            {"type": "Person", "value": " 史蒂夫·乔布斯 "},  # case-insensitive type match
            {"type": "weather", "value": "sunny"},  # not an allowed type
            {"type": "time", "value": 2007},  # JSON number -> float
            {"type": "time", "value": "2007"},  # numeric string stays a string
            {"type": "organization", "value": True},  # JSON boolean -> bool
            {"type": "organization", "value": "true"},  # a string, not a boolean
            {"type": "organization", "value": "   "},  # empty -> dropped
            {"type": "organization", "value": None},  # missing -> dropped
            {"type": "location", "content": "旧金山"},  # the §1.3 field name
            {"type": "person", "value": "史蒂夫·乔布斯"},  # duplicate -> dropped
            {"type": "time", "value": 3.5},
        ]
    }
    openai_server.script(json.dumps(answer, ensure_ascii=False))
    keys = LLMExtractor(llm).keys(EVENT, summary="", pre=PRE)
    assert keys == [
        KeyDraft("person", "史蒂夫·乔布斯", "史蒂夫·乔布斯"),
        KeyDraft("time", "2007", 2007.0),
        KeyDraft("time", "2007", "2007"),
        KeyDraft("organization", "true", True),
        KeyDraft("organization", "true", "true"),
        KeyDraft("location", "旧金山", "旧金山"),
        KeyDraft("time", "3.5", 3.5),
    ]
    assert isinstance(keys[1].value, float) and isinstance(keys[3].value, bool)


def test_keys_schema_violation_is_repaired(openai_server: FakeOpenAIServer, llm: OpenAILLM) -> None:
    openai_server.script(
        '{"keys": [{"type": "person", "value": ["a", "b"]}]}',
        '{"keys": [{"type": "person", "value": "a"}, {"type": "person", "value": "b"}]}',
    )
    keys = LLMExtractor(llm).keys(EVENT, summary="", pre=PRE)
    assert [k.name for k in keys] == ["a", "b"]
    assert openai_server.chat_count == 2


def test_prompts_dir_override_reaches_the_server(
    openai_server: FakeOpenAIServer, llm: OpenAILLM, tmp_path: Path
) -> None:
    (tmp_path / "summary.txt").write_text("Condense «{{title}}»:\n{{sentences}}", encoding="utf-8")
    openai_server.script("short")
    LLMExtractor(llm, prompts_dir=tmp_path).summarize(["One.", "Two."], title="Doc")
    assert openai_server.prompts() == ["Condense «Doc»:\n- One.\n- Two."]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("2007-01-09", datetime(2007, 1, 9)),
        ("2007-01", datetime(2007, 1, 1)),
        ("2007", datetime(2007, 1, 1)),
        (1998, datetime(1998, 1, 1)),
        ("2007-13", None),
        ("last spring", None),
        ("", None),
        (None, None),
        (True, None),
    ],
)
def test_parse_time(raw: object, expected: datetime | None) -> None:
    assert parse_time(raw) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("  Apple  Inc. ", ("Apple Inc.", "Apple Inc.")),
        ("42", ("42", "42")),
        (42, (42.0, "42")),
        (-0.25, (-0.25, "-0.25")),
        (False, (False, "false")),
        (float("nan"), None),
        ("", None),
        ([1], None),
    ],
)
def test_coerce_value(raw: object, expected: object) -> None:
    assert coerce_value(raw) == expected

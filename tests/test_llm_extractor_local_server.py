"""What a run of the LLM extractor on a real local model (Qwen2.5-Coder-1.5B under llama-cpp-python's server,
docs/extraction.md "The LLM extractor on a local model") showed about sag-pg's LLM path."""

from __future__ import annotations

from sag_pg.extract.llm_extractor import LLMExtractor
from sag_pg.types import EventDraft, PreRetrieval
from tests.llm_support import MakeLLM
from tests.llm_support import make as make  # noqa: PLC0414 - the fixture
from tests.openai_server import FakeOpenAIServer, Scripted
from tests.openai_server import openai_server as openai_server  # noqa: PLC0414 - the fixture

KEYS_ANSWER = '{"keys": [{"type": "person", "value": "欧阳明远"}, {"type": "organization", "value": "北京大学"}]}'


def test_a_stream_without_usage_counts_its_pieces_as_completion_tokens(openai_server: FakeOpenAIServer,
                                                                       make: MakeLLM) -> None:
    # llama-cpp-python's server ignores stream_options.include_usage: its streams carry no usage, and every
    # answer used to count 0 tokens (ingest's and ask's token figures, the deep answer's budget).
    openai_server.script(Scripted(content="one two three four five", usage=None))
    llm = make(concurrency=1, max_retries=0)
    assert llm.complete_text("q") == "one two three four five"
    assert (llm.usage.prompt_tokens, llm.usage.completion_tokens, llm.usage.calls) == (0, 5, 1)


def test_a_reported_usage_wins_over_the_pieces(openai_server: FakeOpenAIServer, make: MakeLLM) -> None:
    openai_server.script(Scripted(content="one two three four five", usage=(40, 3)))
    llm = make(concurrency=1, max_retries=0)
    llm.complete_text("q")
    assert (llm.usage.prompt_tokens, llm.usage.completion_tokens) == (40, 3)


def test_key_extraction_through_a_server_without_usage(openai_server: FakeOpenAIServer, make: MakeLLM) -> None:
    openai_server.script(Scripted(content=KEYS_ANSWER, usage=None))
    llm = make(concurrency=1, max_retries=0)
    pre = PreRetrieval(direct_keys=[], keys_from_events=[], key_types=["person", "organization"])
    keys = LLMExtractor(llm).keys(EventDraft("", "欧阳明远从北京大学毕业。"), summary="", pre=pre)
    assert [(k.type, k.name) for k in keys] == [("person", "欧阳明远"), ("organization", "北京大学")]
    assert llm.usage.completion_tokens == len(KEYS_ANSWER.split())  # the fake server streams a word a piece

"""What a run of the LLM extractor on a real local model (Qwen2.5-Coder-1.5B under llama-cpp-python's server,
docs/extraction.md "The LLM extractor on a local model") showed about sag-pg's LLM path."""

from __future__ import annotations

from datetime import datetime

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


def _keys_of(openai_server: FakeOpenAIServer, make: MakeLLM, answer: str, event: EventDraft,
             summary: str = "") -> list[tuple[str, str]]:
    openai_server.script(answer)
    pre = PreRetrieval(direct_keys=[], keys_from_events=[], key_types=["person", "organization", "time"])
    return [(k.type, k.name) for k in LLMExtractor(make(max_retries=0)).keys(event, summary=summary, pre=pre)]


def test_a_year_the_text_does_not_hold_is_not_a_time_key(openai_server: FakeOpenAIServer, make: MakeLLM) -> None:
    # Qwen2.5-Coder-1.5B gave "time: 2019" for both of these sentences, which name no date.
    answer = ('{"keys": [{"type": "organization", "value": "Polaris Mining"}, {"type": "time", "value": 2019},'
              ' {"type": "TIME", "value": "2019年"}]}')
    event = EventDraft("", "Polaris Mining was fined by the Environment Agency for polluting the River Tees.")
    assert _keys_of(openai_server, make, answer, event) == [("organization", "Polaris Mining")]


def test_a_year_of_the_text_its_time_line_or_the_summary_stays(openai_server: FakeOpenAIServer,
                                                                make: MakeLLM) -> None:
    answer = ('{"keys": [{"type": "time", "value": 2021}, {"type": "time", "value": "2020-03"},'
              ' {"type": "time", "value": 2018.0}, {"type": "time", "value": "Monday"}, {"type": "time", "value": 1999}]}')
    event = EventDraft("", "2021年5月，东湖实验室与华中科技大学签署战略合作协议，周一公布。", time=datetime(2020, 3, 1))
    assert _keys_of(openai_server, make, answer, event, summary="2018年成立的东湖实验室") == [
        ("time", "2021"), ("time", "2020-03"), ("time", "2018"), ("time", "Monday")]


def test_a_number_of_another_type_is_not_checked_against_the_text(openai_server: FakeOpenAIServer,
                                                                   make: MakeLLM) -> None:
    # 两亿元 read as 200000000 is the model's reading of the text, not an invented date.
    answer = '{"keys": [{"type": "organization", "value": 2019}]}'
    event = EventDraft("", "2022年，Greywater Capital向晶芯半导体公司投资了两亿元。")
    assert _keys_of(openai_server, make, answer, event) == [("organization", "2019")]

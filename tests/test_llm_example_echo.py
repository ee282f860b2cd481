"""Issue #37 item 13: a small local model copied the extraction prompts' examples: the events prompt's date came
back on events whose text has no date, the keys prompt's `2007` as a key.  A scripted model (the local
OpenAI-compatible test server) that echoes whatever example the prompt it receives shows: the copied date and
key are dropped; the same values are kept when the text does hold them."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from sag_pg.extract.llm_extractor import LLMExtractor
from sag_pg.llm.openai_llm import OpenAILLM
from sag_pg.types import Chunk, EventDraft, PreRetrieval
from tests import openai_server as fake_openai
from tests.openai_server import FakeOpenAIServer

openai_server = fake_openai.openai_server

PRE = PreRetrieval(direct_keys=[], keys_from_events=[], key_types=["person", "time", "location"])


def _example(prompt: str) -> dict[str, Any]:
    """The output-format example the prompt shows (its last line that is a JSON object)."""
    lines = [line for line in prompt.splitlines() if line.startswith("{") and line.endswith("}")]
    return json.loads(lines[-1])


def _echoing_model(request: dict[str, Any]) -> str:
    prompt = request["messages"][-1]["content"]
    example = _example(prompt)
    if "events" in example:
        date = next(e["time"] for e in example["events"] if e.get("time"))
        return json.dumps({"events": [{"title": "Halvard moves to Bergen", "content": "Halvard moved to Bergen.",
                                       "time": date}]})
    number = next(k["value"] for k in example["keys"] if isinstance(k["value"], (int, float)))
    return json.dumps({"keys": [{"type": "person", "value": "Halvard"}, {"type": "time", "value": number}]})


@pytest.fixture
def llm(openai_server: FakeOpenAIServer) -> Iterator[OpenAILLM]:
    openai_server.responder = _echoing_model
    client = OpenAILLM("test-model", base_url=openai_server.base_url, backoff_base=0.001, backoff_max=0.01)
    yield client
    client.close()


def _shown_example_date(openai_server: FakeOpenAIServer) -> str:
    example = _example(openai_server.prompts()[0])
    return next(e["time"] for e in example["events"] if e.get("time"))


def test_an_echoed_example_date_and_key_are_dropped_when_the_text_has_none(
        openai_server: FakeOpenAIServer, llm: OpenAILLM) -> None:
    extractor = LLMExtractor(llm)
    chunk = Chunk(ordinal=0, title="Notes", content="Halvard moved to Bergen.", start_line=1, end_line=1)
    events = extractor.events(chunk, summary="", doc_title="Halvard")
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", _shown_example_date(openai_server))  # the echo did happen
    assert [(e.content, e.time) for e in events] == [("Halvard moved to Bergen.", None)]

    keys = extractor.keys(events[0], summary="", pre=PRE)
    assert [(k.type, k.value) for k in keys] == [("person", "Halvard")]


def test_the_same_values_stay_when_the_text_holds_them(openai_server: FakeOpenAIServer, llm: OpenAILLM) -> None:
    extractor = LLMExtractor(llm)
    # The text holds the year of the prompt's example date (whatever the prompt shows).
    probe = Chunk(ordinal=0, title="Notes", content="Halvard moved to Bergen.", start_line=1, end_line=1)
    extractor.events(probe, summary="", doc_title="Halvard")
    year = _shown_example_date(openai_server)[:4]
    chunk = Chunk(ordinal=0, title="Notes", content=f"In {year} Halvard moved to Bergen.", start_line=1, end_line=1)
    events = extractor.events(chunk, summary="", doc_title="Halvard")
    assert events[0].time is not None and events[0].time.year == int(year)
    keys = extractor.keys(EventDraft(title="Halvard moves", content=f"In {year} Halvard moved to Bergen.",
                                     time=events[0].time), summary="", pre=PRE)
    values = {k.value for k in keys}
    assert "Halvard" in values

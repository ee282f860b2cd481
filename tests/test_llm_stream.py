"""Issue #37 item 13: SAG_LLM_TIMEOUT's 60 s cut every call of a CPU model (105-1,023 s each), and each abandoned
request kept the server generating while its retry queued.  Answers are streamed: the timeout is the longest
silence between two pieces, and a request given up closes its connection, which stops the server's generation."""

from __future__ import annotations

import time

import pytest

from sag_pg.errors import LLMError
from tests.llm_support import MakeLLM
from tests.llm_support import make as make  # noqa: PLC0414 - the fixture
from tests.openai_server import FakeOpenAIServer, Scripted
from tests.openai_server import openai_server as openai_server  # noqa: PLC0414 - the fixture

WORDS = "the mill and the store of the engine"


def test_a_slow_answer_that_keeps_coming_is_not_cut_off(openai_server: FakeOpenAIServer, make: MakeLLM) -> None:
    # Eight pieces 0.15 s apart: the whole answer takes longer than the timeout, no silence does.
    openai_server.script(Scripted(content=WORDS, gap=0.15))
    llm = make(timeout=0.4, concurrency=1, max_retries=0)
    assert llm.complete_text("q") == WORDS
    assert openai_server.requests[0]["stream"] is True
    assert (llm.usage.prompt_tokens, llm.usage.completion_tokens) == (10, 5)  # from the stream's last piece


def test_a_stalled_answer_is_given_up_and_its_generation_stopped(openai_server: FakeOpenAIServer,
                                                                  make: MakeLLM) -> None:
    openai_server.script(Scripted(content=WORDS, gap=1.5), "in time")
    llm = make(timeout=0.4, concurrency=1, max_retries=1)
    assert llm.complete_text("q") == "in time"  # the retry
    deadline = time.monotonic() + 10
    while openai_server.cancelled == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert openai_server.cancelled == 1  # the server saw the connection closed and generated no more
    assert openai_server.pieces_sent < len(WORDS.split()) + 1


def test_silence_past_the_timeout_is_named(openai_server: FakeOpenAIServer, make: MakeLLM) -> None:
    openai_server.script(Scripted(content=WORDS, gap=1.5))
    with pytest.raises(LLMError, match=r"timed out: no answer for 0\.4s"):
        make(timeout=0.4, concurrency=1, max_retries=0).complete_text("q", purpose="slow")


def test_a_server_that_does_not_stream_still_answers(openai_server: FakeOpenAIServer, make: MakeLLM) -> None:
    openai_server.script(Scripted(body={"id": "x", "object": "chat.completion", "model": "m",
                                        "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"},
                                                     "finish_reason": "stop"}],
                                        "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}}))
    llm = make()
    assert llm.complete_text("q") == "ok"
    assert (llm.usage.prompt_tokens, llm.usage.completion_tokens) == (3, 1)

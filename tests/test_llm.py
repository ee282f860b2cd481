"""OpenAILLM against a real local HTTP server, through the real openai client."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from sag_pg.config import Settings
from sag_pg.errors import ConfigError, LLMError
from sag_pg.llm import LLM, Usage, make_llm
from sag_pg.llm.openai_llm import PLACEHOLDER_API_KEY, OpenAILLM
from tests import llm_support
from tests import openai_server as fake_openai
from tests.llm_support import OBJECT_SCHEMA, SECRET, MakeLLM, recorded_sleeps
from tests.openai_server import FakeOpenAIServer, Scripted

# The fixtures, usable here even before conftest registers tests.openai_server as a plugin.
openai_server = fake_openai.openai_server
make = llm_support.make


# -- plain calls ------------------------------------------------------------------------------


def test_complete_text_sends_prompt_and_counts_tokens(openai_server: FakeOpenAIServer, make: MakeLLM) -> None:
    llm = make()
    openai_server.script(Scripted(content="  Hello there.  ", usage=(7, 3)))
    assert llm.complete_text("Say hello", system="Be brief", purpose="greet") == "Hello there."
    (request,) = openai_server.requests
    assert request["model"] == "test-model"
    assert request["temperature"] == 0
    assert request["messages"] == [
        {"role": "system", "content": "Be brief"},
        {"role": "user", "content": "Say hello"},
    ]
    assert "response_format" not in request
    assert openai_server.headers_seen[0]["authorization"] == f"Bearer {SECRET}"
    assert llm.usage == Usage(prompt_tokens=7, completion_tokens=3, calls=1)
    assert isinstance(llm, LLM)
    assert llm.name == "openai:test-model"


def test_usage_missing_counts_zero_and_snapshots_subtract(
    openai_server: FakeOpenAIServer, make: MakeLLM
) -> None:
    llm = make()
    openai_server.script(Scripted(content="a", usage=(100, 20)))
    llm.complete_text("first")
    before = llm.usage.snapshot()
    openai_server.script(Scripted(content="b", usage=(11, 4)), Scripted(content="c", usage=None))
    llm.complete_text("second")
    llm.complete_text("third")
    spent = llm.usage.snapshot() - before
    # "c" came streamed without a usage: its one piece is its one completion token, its prompt is not counted.
    assert spent == Usage(prompt_tokens=11, completion_tokens=5, calls=2)
    assert before == Usage(100, 20, 1)  # a snapshot does not move
    assert llm.usage.as_dict() == {"prompt_tokens": 111, "completion_tokens": 25, "calls": 3}


def test_reasoning_block_is_stripped_from_text(openai_server: FakeOpenAIServer, make: MakeLLM) -> None:
    openai_server.script("<think>let me think {about it}</think>\nThe answer.")
    assert make().complete_text("q") == "The answer."


def test_usage_add_is_thread_safe() -> None:
    usage = Usage()

    def work() -> None:
        for _ in range(2000):
            usage.add(1, 2)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert usage == Usage(16000, 32000, 16000)
    assert usage.total_tokens == 48000


# -- retries ----------------------------------------------------------------------------------


def test_429_is_retried_until_success(openai_server: FakeOpenAIServer, make: MakeLLM) -> None:
    llm = make()
    sleeps = recorded_sleeps(llm)
    openai_server.fail(429, "rate limited")
    openai_server.fail(429, "rate limited")
    openai_server.script("finally")
    assert llm.complete_text("q") == "finally"
    assert openai_server.chat_count == 3
    assert len(sleeps) == 2
    assert llm.usage.calls == 1  # only answered requests count


@pytest.mark.parametrize("status", [500, 502, 503, 408])
def test_transient_statuses_are_retried(openai_server: FakeOpenAIServer, make: MakeLLM, status: int) -> None:
    openai_server.fail(status, "try later")
    openai_server.script("ok")
    assert make().complete_text("q") == "ok"
    assert openai_server.chat_count == 2


def test_backoff_grows_exponentially_with_jitter(openai_server: FakeOpenAIServer, make: MakeLLM) -> None:
    llm = make(backoff_base=0.01, backoff_max=0.03)
    sleeps = recorded_sleeps(llm)
    for _ in range(3):
        openai_server.fail(500)
    openai_server.script("ok")
    llm.complete_text("q")
    # equal jitter: within [ceiling/2, ceiling], ceiling = min(base * 2**n, max)
    for delay, ceiling in zip(sleeps, [0.01, 0.02, 0.03], strict=True):
        assert ceiling / 2 <= delay <= ceiling


def test_retry_after_is_honoured_and_capped(openai_server: FakeOpenAIServer, make: MakeLLM) -> None:
    llm = make(retry_after_max=0.2)
    sleeps = recorded_sleeps(llm, really=True)
    openai_server.fail(429, headers={"Retry-After": "0.05"})
    openai_server.fail(429, headers={"Retry-After": "3600"})  # capped at retry_after_max
    openai_server.fail(503, headers={"retry-after-ms": "30"})
    openai_server.script("ok")
    started = time.monotonic()
    assert llm.complete_text("q") == "ok"
    elapsed = time.monotonic() - started
    assert sleeps == [pytest.approx(0.05), pytest.approx(0.2), pytest.approx(0.03)]
    assert elapsed >= 0.28  # the sleeps happened; no upper bound (a loaded machine is slower)


def test_timeouts_are_retried_then_raise(openai_server: FakeOpenAIServer, make: MakeLLM) -> None:
    llm = make(timeout=0.2, max_retries=2, concurrency=1)
    for _ in range(3):
        openai_server.script(Scripted(content="too late", delay=0.6))
    with pytest.raises(LLMError) as caught:
        llm.complete_text("q", purpose="slow-thing")
    assert openai_server.chat_count == 3
    message = str(caught.value)
    assert "openai:test-model" in message
    assert openai_server.base_url in message
    assert "slow-thing" in message
    assert "timed out" in message and "3 attempts" in message
    assert SECRET not in message


def test_timeout_then_success(openai_server: FakeOpenAIServer, make: MakeLLM) -> None:
    openai_server.script(Scripted(content="too late", delay=0.6), "in time")
    assert make(timeout=0.2, concurrency=1).complete_text("q") == "in time"


def test_last_status_is_named_after_the_last_retry(openai_server: FakeOpenAIServer, make: MakeLLM) -> None:
    llm = make(max_retries=3)
    for _ in range(4):
        openai_server.fail(503, "overloaded")
    with pytest.raises(LLMError, match=r"4 attempts; last: HTTP 503") as caught:
        llm.complete_text("q")
    assert openai_server.chat_count == 4
    assert SECRET not in str(caught.value)


@pytest.mark.parametrize("status", [400, 401, 404])
def test_client_errors_are_not_retried(openai_server: FakeOpenAIServer, make: MakeLLM, status: int) -> None:
    openai_server.fail(status, "nope")
    with pytest.raises(LLMError, match=f"HTTP {status}") as caught:
        make().complete_text("q")
    assert openai_server.chat_count == 1
    assert SECRET not in str(caught.value)


def test_connection_errors_are_retried_then_raise(make: MakeLLM) -> None:
    import socket

    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    llm = make(base_url=f"http://127.0.0.1:{port}/v1", max_retries=2)
    sleeps = recorded_sleeps(llm)
    with pytest.raises(LLMError, match="connection failed") as caught:
        llm.complete_text("q")
    assert len(sleeps) == 2
    assert f"127.0.0.1:{port}" in str(caught.value)


def test_non_completion_body_is_an_llm_error(openai_server: FakeOpenAIServer, make: MakeLLM) -> None:
    openai_server.script(Scripted(body={"unexpected": True}))
    with pytest.raises(LLMError):
        make().complete_text("q")


# -- concurrency ------------------------------------------------------------------------------


def test_concurrency_bound_is_respected(openai_server: FakeOpenAIServer, make: MakeLLM) -> None:
    llm = make(concurrency=2)
    openai_server.responder = lambda request: Scripted(content="ok", delay=0.1)
    results: list[str] = []
    lock = threading.Lock()

    def call() -> None:
        answer = llm.complete_text("q")
        with lock:
            results.append(answer)

    threads = [threading.Thread(target=call) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == ["ok"] * 8
    assert openai_server.max_in_flight == 2


def test_queued_requests_to_a_one_at_a_time_server_do_not_time_out(openai_server: FakeOpenAIServer,
                                                                    make: MakeLLM) -> None:
    # 4 requests in flight, the server answers one per 0.4 s: the last is answered after 1.6 s.  With the
    # timeout of 1 s per request it would time out and be generated again; each request may wait behind the
    # other 3, so it gets 1 s * 4.
    llm = make(concurrency=4, timeout=1.0, max_retries=2)
    serial = threading.Lock()

    def one_at_a_time(request: dict) -> str:  # type: ignore[type-arg]
        with serial:
            time.sleep(0.4)
        return "ok"

    openai_server.responder = one_at_a_time
    answers: list[str] = []
    threads = [threading.Thread(target=lambda: answers.append(llm.complete_text("q"))) for _ in range(4)]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert answers == ["ok"] * 4
    assert time.monotonic() - started >= 1.6  # the server's pace; no upper bound on a loaded machine
    assert openai_server.chat_count == 4  # nothing retried


# -- construction -----------------------------------------------------------------------------


def test_make_llm_from_settings(openai_server: FakeOpenAIServer) -> None:
    assert make_llm(Settings(llm=None)) is None
    assert make_llm(Settings(llm="")) is None
    llm = make_llm(
        Settings(
            llm="openai:qwen2.5-7b", llm_base_url=openai_server.base_url, llm_timeout=7, llm_max_retries=1
        )
    )
    assert isinstance(llm, OpenAILLM)
    try:
        assert llm.model == "qwen2.5-7b" and llm.timeout == 7 and llm.max_retries == 1
        openai_server.script("hi")
        assert llm.complete_text("q") == "hi"
        # No key but a base URL: local servers get a placeholder bearer token.
        assert openai_server.headers_seen[0]["authorization"] == f"Bearer {PLACEHOLDER_API_KEY}"
    finally:
        llm.close()


@pytest.mark.parametrize("spec", ["anthropic:claude", "openai:", "gpt-4o", "openai"])
def test_make_llm_rejects_unknown_specs(spec: str) -> None:
    with pytest.raises(ConfigError, match="openai:MODEL"):
        make_llm(Settings(llm=spec, llm_api_key="k"))


def test_missing_key_without_base_url_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="API key"):
        make_llm(Settings(llm="openai:gpt-4o-mini"))


@pytest.mark.parametrize("kwargs", [{"concurrency": 0}, {"max_retries": -1}, {"timeout": 0}, {"model": ""},
                                    {"structured_output": "json"}, {"structured_output": ""}])
def test_invalid_parameters(kwargs: dict[str, Any]) -> None:
    params: dict[str, Any] = {"model": "m", "base_url": "http://127.0.0.1:9/v1", **kwargs}
    with pytest.raises(ConfigError):
        OpenAILLM(**params)


def test_fake_server_embeddings_are_deterministic(openai_server: FakeOpenAIServer) -> None:
    import openai

    client = openai.OpenAI(api_key="k", base_url=openai_server.base_url, max_retries=0)
    try:
        first = client.embeddings.create(model="fake-embed", input=["alpha", "beta"], encoding_format="float")
        again = client.embeddings.create(
            model="fake-embed", input="alpha", dimensions=8, encoding_format="float"
        )
        packed = client.embeddings.create(model="fake-embed", input="alpha", encoding_format="base64")
        default = client.embeddings.create(model="fake-embed", input="alpha")
    finally:
        client.close()
    vectors = [d.embedding for d in first.data]
    assert len(vectors) == 2 and all(len(v) == 8 for v in vectors)
    assert vectors[0] == again.data[0].embedding != vectors[1]
    assert abs(sum(x * x for x in vectors[0]) - 1.0) < 1e-9
    assert openai_server.embedding_requests[0]["input"] == ["alpha", "beta"]
    assert isinstance(packed.data[0].embedding, str)  # base64 when asked for it
    assert default.data[0].embedding == pytest.approx(vectors[0], abs=1e-6)  # float32 round trip


def test_retry_after_header_forms() -> None:
    from email.utils import format_datetime

    from sag_pg.llm.retry import Backoff, retry_after_seconds

    assert retry_after_seconds(None) is None
    assert retry_after_seconds({"Retry-After": "2"}) == 2.0
    assert retry_after_seconds({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert retry_after_seconds({"Retry-After": "soon"}) is None
    in_a_minute = format_datetime(datetime.now(UTC) + timedelta(seconds=60), usegmt=True)
    assert 55 <= (retry_after_seconds({"Retry-After": in_a_minute}) or 0) <= 60
    assert Backoff(retry_after_max=5).delay(0, retry_after=60) == 5


# -- max_tokens: a rambling model must stop (issue #14) -----------------------------------------------------


def test_every_request_carries_max_tokens(openai_server: FakeOpenAIServer, make: MakeLLM) -> None:
    llm = make(max_tokens=321)
    openai_server.script("plain", '{"a": 1}')
    llm.complete_text("hi")
    llm.complete_json("json please", schema=OBJECT_SCHEMA)
    assert [r.get("max_tokens") for r in openai_server.requests] == [321, 321]


def test_max_tokens_comes_from_settings_and_zero_sends_none(openai_server: FakeOpenAIServer) -> None:
    env = {"SAG_LLM": "openai:test-model", "SAG_LLM_BASE_URL": openai_server.base_url, "SAG_LLM_MAX_TOKENS": "77"}
    settings = Settings.from_env(env)
    assert settings.llm_max_tokens == 77
    assert Settings().llm_max_tokens > 0  # a cap by default
    openai_server.script("a", "b")
    with make_llm(settings) as llm:  # type: ignore[union-attr]
        llm.complete_text("hi")
    with make_llm(settings.with_(llm_max_tokens=0)) as llm:  # type: ignore[union-attr]
        llm.complete_text("hi")
    assert [r.get("max_tokens") for r in openai_server.requests] == [77, None]


def test_rejected_max_tokens_becomes_max_completion_tokens(openai_server: FakeOpenAIServer, make: MakeLLM) -> None:
    # OpenAI's reasoning models refuse max_tokens and name its successor.
    llm = make(max_tokens=500)
    openai_server.fail(400, "Unsupported parameter: 'max_tokens' is not supported with this model. "
                            "Use 'max_completion_tokens' instead.")
    openai_server.script("one", "two")
    assert llm.complete_text("hi") == "one"
    assert llm.complete_text("again") == "two"
    sent = [(r.get("max_tokens"), r.get("max_completion_tokens")) for r in openai_server.requests]
    assert sent == [(500, None), (None, 500), (None, 500)]

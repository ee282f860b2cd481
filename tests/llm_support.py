"""Shared by the OpenAILLM tests: the fixture building clients for the local test server, and a sleep recorder."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from sag_pg.llm.openai_llm import OpenAILLM
from tests import openai_server as fake_openai
from tests.openai_server import FakeOpenAIServer

# The fixture, usable here even before conftest registers tests.openai_server as a plugin.
openai_server = fake_openai.openai_server

SECRET = "sk-secret-test-key-1234"
OBJECT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["a"],
    "properties": {"a": {"type": "integer"}},
}

MakeLLM = Callable[..., OpenAILLM]


@pytest.fixture
def make(openai_server: FakeOpenAIServer) -> Iterator[MakeLLM]:
    made: list[OpenAILLM] = []

    def build(**overrides: Any) -> OpenAILLM:
        params: dict[str, Any] = {
            "model": "test-model",
            "base_url": openai_server.base_url,
            "api_key": SECRET,
            "timeout": 5.0,
            "max_retries": 3,
            "concurrency": 4,
            "backoff_base": 0.001,
            "backoff_max": 0.01,
            "retry_after_max": 0.2,
        }
        params.update(overrides)
        llm = OpenAILLM(**params)
        made.append(llm)
        return llm

    yield build
    for llm in made:
        llm.close()


def recorded_sleeps(llm: OpenAILLM, *, really: bool = False) -> list[float]:
    sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        if really:
            time.sleep(seconds)

    llm._sleep = sleep
    return sleeps

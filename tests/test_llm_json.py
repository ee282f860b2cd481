"""OpenAILLM's JSON answers against a real local HTTP server: structured output (json_schema, JSON mode,
the prompt alone), its fallbacks, and one repair of a malformed or schema-violating answer."""

from __future__ import annotations

import pytest

from sag_pg.config import Settings
from sag_pg.errors import ConfigError, LLMError
from sag_pg.llm import make_llm
from tests import llm_support
from tests import openai_server as fake_openai
from tests.llm_support import OBJECT_SCHEMA, MakeLLM, recorded_sleeps
from tests.openai_server import FakeOpenAIServer, Scripted

# The fixtures, usable here even before conftest registers tests.openai_server as a plugin.
openai_server = fake_openai.openai_server
make = llm_support.make


def test_json_answer_is_parsed_and_json_mode_requested(
    openai_server: FakeOpenAIServer, make: MakeLLM
) -> None:
    openai_server.script('{"a": 1}')
    assert make().complete_json("give a", schema=OBJECT_SCHEMA, system="You count.") == {"a": 1}
    (request,) = openai_server.requests
    # Structured output: the answer's JSON Schema as response_format.
    assert request["response_format"] == {"type": "json_schema", "json_schema": {
        "name": "answer", "schema": OBJECT_SCHEMA, "strict": False}}
    system = request["messages"][0]
    assert system["role"] == "system" and system["content"].startswith("You count.")
    assert "JSON" in system["content"]


@pytest.mark.parametrize(
    "answer",
    [
        '```json\n{"a": 2}\n```',
        'Sure! Here is the JSON you asked for:\n```\n{"a": 2}\n```\nAnything else?',
        'As noted in [1], the result is {"a": 2} and that is all.',
        '<think>maybe {"a": 1}? no.</think>{"a": 2}',
        '\n\n  {"a": 2}  \n',
    ],
)
def test_wrapped_json_is_accepted_without_repair(
    openai_server: FakeOpenAIServer, make: MakeLLM, answer: str
) -> None:
    openai_server.script(answer)
    assert make().complete_json("q", schema=OBJECT_SCHEMA) == {"a": 2}
    assert openai_server.chat_count == 1


def test_top_level_array_and_shape_slips(openai_server: FakeOpenAIServer, make: MakeLLM) -> None:
    llm = make()
    array_schema = {"type": "array", "items": {"type": "integer"}}
    wrapped_schema = {
        "type": "object",
        "required": ["items"],
        "properties": {"items": {"type": "array", "items": {"type": "integer"}}},
    }
    openai_server.script("Result:\n[1, 2, 3]", '{"numbers": [4, 5]}', "[6]")
    assert llm.complete_json("q", schema=array_schema) == [1, 2, 3]
    # JSON mode forces an object: a single-key object around the array is unwrapped ...
    assert llm.complete_json("q", schema=array_schema) == [4, 5]
    # ... and a bare array is wrapped into the one required array property.
    assert llm.complete_json("q", schema=wrapped_schema) == {"items": [6]}
    assert openai_server.chat_count == 3


def test_malformed_json_gets_one_repair(openai_server: FakeOpenAIServer, make: MakeLLM) -> None:
    bad = '{"a": 1,,, oops'
    openai_server.script(bad, '{"a": 1}')
    llm = make()
    assert llm.complete_json("give a", schema=OBJECT_SCHEMA, purpose="demo") == {"a": 1}
    assert openai_server.chat_count == 2
    repair = openai_server.requests[1]["messages"]
    assert repair[:2] == openai_server.requests[0]["messages"]
    assert repair[2] == {"role": "assistant", "content": bad}
    assert repair[3]["role"] == "user"
    assert "could not be used" in repair[3]["content"]
    assert '"required": ["a"]' in repair[3]["content"]  # the schema travels with the repair request
    assert openai_server.requests[1]["response_format"]["json_schema"]["name"] == "demo"
    assert llm.usage.calls == 2


def test_schema_violation_gets_one_repair(openai_server: FakeOpenAIServer, make: MakeLLM) -> None:
    openai_server.script('{"a": "one"}', '{"a": 1}')
    assert make().complete_json("give a", schema=OBJECT_SCHEMA) == {"a": 1}
    repair_request = openai_server.requests[1]["messages"][-1]["content"]
    assert "at a:" in repair_request and "is not of type 'integer'" in repair_request
    assert openai_server.requests[1]["messages"][-2]["content"] == '{"a": "one"}'


def test_malformed_twice_raises_with_excerpt(openai_server: FakeOpenAIServer, make: MakeLLM) -> None:
    openai_server.script("I cannot do that.", "Still no JSON, sorry " + "x" * 500)
    with pytest.raises(LLMError) as caught:
        make().complete_json("give a", schema=OBJECT_SCHEMA, purpose="extract_keys")
    message = str(caught.value)
    assert openai_server.chat_count == 2  # exactly one repair attempt
    assert "Still no JSON, sorry" in message
    assert len(message) < 600  # an excerpt, not the whole answer
    assert "extract_keys" in message and "openai:test-model" in message


def test_empty_answer_is_repaired(openai_server: FakeOpenAIServer, make: MakeLLM) -> None:
    openai_server.script("", '{"a": 3}')
    assert make().complete_json("q", schema=OBJECT_SCHEMA) == {"a": 3}
    assert "empty" in openai_server.requests[1]["messages"][-1]["content"]


def test_rejected_response_format_falls_back_and_is_remembered(
    openai_server: FakeOpenAIServer, make: MakeLLM
) -> None:
    llm = make()
    assert llm.structured_output == "json_schema"
    openai_server.fail(400, "response_format: json_schema is not supported by this server")
    openai_server.fail(400, "Additional properties are not allowed ('schema' was unexpected)")
    openai_server.fail(400, "'response_format' of type 'json_object' is not supported with this model.")
    openai_server.script('{"a": 1}', '{"a": 2}')
    assert llm.complete_json("q", schema=OBJECT_SCHEMA) == {"a": 1}
    assert llm.complete_json("q", schema=OBJECT_SCHEMA) == {"a": 2}
    first, second, third, fourth, fifth = openai_server.requests
    assert first["response_format"]["type"] == "json_schema"
    assert second["response_format"] == {"type": "json_object", "schema": OBJECT_SCHEMA}
    assert third["response_format"] == {"type": "json_object"}
    assert "response_format" not in fourth and "response_format" not in fifth
    assert llm.json_mode is False and llm.structured_output == "none"
    assert llm.json_requests == {"none": 2}


def test_a_server_without_json_schema_gets_json_object(openai_server: FakeOpenAIServer, make: MakeLLM) -> None:
    llm = make()
    openai_server.fail(422, "Unknown response format type: json_schema")
    openai_server.script('{"a": 1}', '{"a": 2}')
    assert llm.complete_json("q", schema=OBJECT_SCHEMA, purpose="extract keys") == {"a": 1}
    assert llm.complete_json("q", schema=OBJECT_SCHEMA) == {"a": 2}
    first, second, third = openai_server.requests
    assert first["response_format"]["json_schema"]["name"] == "extract_keys"   # a valid schema name
    # The schema still travels, in json_object's "schema" field (llama-cpp-python, llama-server, Anyscale).
    assert second["response_format"] == third["response_format"] == {"type": "json_object", "schema": OBJECT_SCHEMA}
    assert llm.structured_output == "json_object+schema"


def test_llama_cpp_python_refusal_of_json_schema_is_understood(openai_server: FakeOpenAIServer,
                                                              make: MakeLLM) -> None:
    # What llama-cpp-python 0.3.36's server answers to response_format type json_schema: HTTP 500 (not retried).
    openai_server.script(Scripted(status=500, body={"error": {
        "message": "1 validation error: {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
                   "'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema', "
                   "'ctx': {'expected': \"'text' or 'json_object'\"}}", "type": "internal_server_error"}}),
        '{"a": 5}')
    llm = make()
    sleeps = recorded_sleeps(llm)
    assert llm.complete_json("q", schema=OBJECT_SCHEMA) == {"a": 5}
    assert sleeps == [] and len(openai_server.requests) == 2
    assert openai_server.requests[1]["response_format"] == {"type": "json_object", "schema": OBJECT_SCHEMA}
    assert llm.json_requests == {"json_object+schema": 1}


def test_a_plain_server_error_on_a_json_call_is_retried_not_a_fallback(openai_server: FakeOpenAIServer,
                                                                      make: MakeLLM) -> None:
    openai_server.fail(500, "out of memory while processing response_format")
    openai_server.script('{"a": 6}')
    llm = make()
    assert llm.complete_json("q", schema=OBJECT_SCHEMA) == {"a": 6}
    assert llm.structured_output == "json_schema"
    assert [r["response_format"]["type"] for r in openai_server.requests] == ["json_schema", "json_schema"]


def test_starting_at_json_object_sends_no_schema(openai_server: FakeOpenAIServer, make: MakeLLM) -> None:
    openai_server.script('{"a": 1}')
    assert make(structured_output="json_object").complete_json("q", schema=OBJECT_SCHEMA) == {"a": 1}
    assert openai_server.requests[0]["response_format"] == {"type": "json_object"}


def test_rejected_temperature_is_dropped(openai_server: FakeOpenAIServer, make: MakeLLM) -> None:
    # Reasoning models accept only their default temperature.
    llm = make()
    openai_server.fail(400, "Unsupported value: 'temperature' does not support 0 with this model.")
    openai_server.script("ok", "again")
    assert llm.complete_text("q") == "ok"
    assert llm.complete_text("q") == "again"
    assert [("temperature" in r) for r in openai_server.requests] == [True, False, False]
    assert llm.json_mode is True


def test_other_bad_request_on_json_call_is_not_a_fallback(
    openai_server: FakeOpenAIServer, make: MakeLLM
) -> None:
    openai_server.fail(400, "messages: too long")
    with pytest.raises(LLMError, match="HTTP 400"):
        make().complete_json("q", schema=OBJECT_SCHEMA)
    assert openai_server.chat_count == 1



def test_json_extraction_edge_cases() -> None:
    from sag_pg.llm.jsonparse import JSONAnswerError, extract_json

    assert extract_json('Text {"a": {"b": [1, 2]}} more {"c": 1}') == {"a": {"b": [1, 2]}}
    assert extract_json("```\n[1, 2]\n```") == [1, 2]
    assert extract_json('null and {"a": 1}') == {"a": 1}
    with pytest.raises(JSONAnswerError, match="no JSON"):
        extract_json("no json { here")



def test_structured_output_comes_from_settings(openai_server: FakeOpenAIServer) -> None:
    # SAG_LLM_STRUCTURED_OUTPUT picks where to start: a server whose schema support misbehaves can be told to
    # use JSON mode, or the prompt alone.
    env = {"SAG_LLM": "openai:test-model", "SAG_LLM_BASE_URL": openai_server.base_url}
    assert Settings.from_env(env).llm_structured_output == "json_schema"
    sent = []
    for mode in ("json_schema", "json_object", "none"):
        settings = Settings.from_env({**env, "SAG_LLM_STRUCTURED_OUTPUT": mode})
        openai_server.script('{"a": 1}')
        with make_llm(settings) as llm:  # type: ignore[union-attr]
            assert llm.structured_output == mode
            assert llm.complete_json("give a", schema=OBJECT_SCHEMA) == {"a": 1}
            assert llm.json_requests == {mode: 1}
        sent.append((openai_server.requests[-1].get("response_format") or {"type": None})["type"])
    assert sent == ["json_schema", "json_object", None]
    with pytest.raises(ConfigError, match="must be one of json_schema, json_object\\+schema, json_object, none"):
        make_llm(Settings.from_env({**env, "SAG_LLM_STRUCTURED_OUTPUT": "grammar"}))

"""Find the JSON in a model's answer and check it against a JSON Schema.

Models wrap JSON in code fences, put prose or a ``<think>`` block before it, or answer
with a bare array where an object was asked for (and the reverse, when the server's JSON
mode forces an object). These helpers accept all of that, so a repair round-trip is only
spent on answers that are really broken.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from jsonschema import validators
from jsonschema.exceptions import best_match

_REASONING = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.IGNORECASE | re.DOTALL)
_FENCE = re.compile(r"```[ \t]*(?:json5?|JSON)?[ \t]*\r?\n?(.*?)```", re.DOTALL)
_DECODER = json.JSONDecoder()


class JSONAnswerError(ValueError):
    """The answer holds no usable JSON; the message says why (it is sent back to the model)."""


def strip_reasoning(text: str) -> str:
    """Drop ``<think>…</think>`` style blocks that reasoning models put before their answer."""
    return _REASONING.sub("", text).strip()


def extract_json(text: str) -> Any:
    """The JSON value in ``text``: the whole text, a fenced block, or the longest JSON object/array in it."""
    text = strip_reasoning(text or "")
    if not text:
        raise JSONAnswerError("the answer is empty")
    try:
        return json.loads(text)
    except ValueError:
        pass
    for block in _FENCE.findall(text):
        try:
            return json.loads(block.strip())
        except ValueError:
            continue
    # Prose around the JSON: decode at every opening bracket and keep the longest value,
    # so that a citation like "[1]" in a leading sentence does not win over the real answer.
    best: tuple[int, Any] | None = None
    i = 0
    while i < len(text):
        if text[i] in "{[":
            try:
                value, end = _DECODER.raw_decode(text, i)
            except ValueError:
                i += 1
                continue
            if best is None or end - i > best[0]:
                best = (end - i, value)
            i = end  # nested brackets are part of this value already
        else:
            i += 1
    if best is None:
        raise JSONAnswerError("no JSON object or array found in the answer")
    return best[1]


def fit_shape(value: Any, schema: Mapping[str, Any]) -> Any:
    """Undo the two common shape slips: ``{"items": [...]}`` for an array and ``[...]`` for ``{"items": [...]}``."""
    expected = schema.get("type")
    if expected == "array" and isinstance(value, dict) and len(value) == 1:
        (inner,) = value.values()
        if isinstance(inner, list):
            return inner
    if expected == "object" and isinstance(value, list):
        required = list(schema.get("required", []))
        properties = schema.get("properties", {})
        if len(required) == 1 and properties.get(required[0], {}).get("type") == "array":
            return {required[0]: value}
    return value


def schema_error(value: Any, schema: Mapping[str, Any]) -> str | None:
    """None when ``value`` is valid, else a one-line description of the most relevant violation."""
    validator_class = validators.validator_for(schema)
    error = best_match(validator_class(schema).iter_errors(value))
    if error is None:
        return None
    where = "/".join(str(part) for part in error.absolute_path) or "(top level)"
    # Messages quote the offending instance, which can be the whole answer: keep them short.
    return f"at {where}: {excerpt(error.message, 300)}"


def parse_answer(text: str, schema: Mapping[str, Any]) -> Any:
    """Extract, reshape and validate; raises :class:`JSONAnswerError` with a reason the model can act on."""
    value = fit_shape(extract_json(text), schema)
    problem = schema_error(value, schema)
    if problem is not None:
        raise JSONAnswerError(f"the JSON does not match the required schema {problem}")
    return value


def excerpt(text: str | None, limit: int = 200) -> str:
    """A one-line, shortened view of an answer for error messages."""
    flat = " ".join((text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"

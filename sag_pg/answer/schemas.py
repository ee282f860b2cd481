"""JSON Schemas of the answers to the answering and deep-query prompts.

The plan itself is :data:`sag_pg.prompts.schemas.PLAN_DAG_SCHEMA`; what JSON Schema cannot say (unique
ids, edges between known nodes, no cycles) is checked by :func:`sag_pg.answer.plan.validate_plan`.
"""

from __future__ import annotations

from typing import Any

from ..prompts.schemas import PLAN_DAG_SCHEMA

__all__ = ["ANSWER_SCHEMA", "NODE_ANSWER_SCHEMA", "NODE_QUERY_SCHEMA", "PLAN_DAG_SCHEMA", "REACT_CHECK_SCHEMA"]

_NAMES: dict[str, Any] = {"type": "array", "items": {"type": ["string", "number"]}}

# answer_json and deep_answer
ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["answer", "sufficient"],
    "properties": {
        "answer": {"type": "string"},
        "sufficient": {"type": "boolean"},
        "missing": {"type": ["string", "null"]},
    },
}

NODE_QUERY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["query"],
    "properties": {"query": {"type": "string", "minLength": 1}, "keys": _NAMES},
}

NODE_ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["answer", "answered"],
    "properties": {
        "answer": {"type": "string"},
        "answered": {"type": "boolean"},
        "next_query": {"type": ["string", "null"]},
        "next_keys": _NAMES,
    },
}

REACT_CHECK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["answerable"],
    "properties": {
        "answerable": {"type": "boolean"},
        "reason": {"type": ["string", "null"]},
        # A further plan, when not answerable: the plan's node and edge shapes, possibly empty.
        "nodes": {**PLAN_DAG_SCHEMA["properties"]["nodes"], "minItems": 0},
        "edges": PLAN_DAG_SCHEMA["properties"]["edges"],
    },
}

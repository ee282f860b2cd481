"""JSON Schemas of the structured answers to the query-side prompts (``rewrite_query``, ``plan_dag``).

The extraction schemas live next to their only user, :mod:`sag_pg.extract.llm_extractor`.
Pass these to :meth:`sag_pg.llm.LLM.complete_json`; checks that JSON Schema cannot express
(the DAG has no cycles, edges name existing nodes) are the caller's.
"""

from __future__ import annotations

from typing import Any

KEY_VALUE_TYPES = ["string", "number", "boolean"]

REWRITE_QUERY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["query"],
    "properties": {
        "query": {"type": "string", "minLength": 1},
        "keys": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["type", "value"],
                "properties": {
                    "type": {"type": "string"},
                    "value": {"type": KEY_VALUE_TYPES},
                },
            },
        },
    },
}

PLAN_DAG_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["nodes"],
    "properties": {
        "nodes": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["id", "question"],
                "properties": {
                    "id": {"type": "string", "minLength": 1},
                    "question": {"type": "string", "minLength": 1},
                },
            },
        },
        "edges": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["source", "target"],
                "properties": {
                    "source": {"type": "string"},
                    "target": {"type": "string"},
                    "description": {"type": "string"},
                },
            },
        },
    },
}

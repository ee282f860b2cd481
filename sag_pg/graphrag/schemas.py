"""JSON Schemas of the LLM answers GraphRAG asks for (validated by the LLM client, which asks once for a
repair and then raises :class:`~sag_pg.errors.LLMError`)."""

from __future__ import annotations

from typing import Any

__all__ = ["DRIFT_LOCAL_SCHEMA", "DRIFT_PRIMER_SCHEMA", "MAP_SCHEMA", "REPORT_SCHEMA"]

_RATING = {"type": "number", "minimum": 0, "maximum": 10}

REPORT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["title", "summary", "rating", "rating_explanation", "findings"],
    "properties": {
        "title": {"type": "string", "minLength": 1},
        "summary": {"type": "string", "minLength": 1},
        "rating": _RATING,
        "rating_explanation": {"type": "string"},
        "findings": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["summary", "explanation"],
                "properties": {"summary": {"type": "string", "minLength": 1}, "explanation": {"type": "string"},
                               "rating": _RATING},
            },
        },
    },
}

MAP_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["points"],
    "properties": {
        "points": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["description", "score"],
                "properties": {"description": {"type": "string"},
                               "score": {"type": "number", "minimum": 0, "maximum": 100}},
            },
        },
    },
}

_FOLLOW_UPS = {"type": "array", "items": {"type": "string", "minLength": 1}}
_SCORE = {"type": "number", "minimum": 0, "maximum": 100}

DRIFT_PRIMER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["intermediate_answer", "score", "follow_up_queries"],
    "properties": {"intermediate_answer": {"type": "string"}, "score": _SCORE, "follow_up_queries": _FOLLOW_UPS},
}

DRIFT_LOCAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["response", "score", "follow_up_queries"],
    "properties": {"response": {"type": "string"}, "score": _SCORE, "follow_up_queries": _FOLLOW_UPS},
}

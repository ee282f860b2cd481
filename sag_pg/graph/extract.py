"""Typed relations from an LLM (a second call after extraction, run on demand): events with their keys go
in, ``(head, type, tail, weight)`` come out, validated against the event's own keys before they are stored."""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import prompts
from ..db.graph import CandidateEvent
from ..errors import LLMError
from ..llm import LLM

log = logging.getLogger(__name__)

__all__ = ["RELATIONS_SCHEMA", "ExtractedRelation", "RelationBatch", "extract_relations", "render_prompt"]

RELATIONS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["relations"],
    "properties": {
        "relations": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["event", "head", "type", "tail"],
                "properties": {
                    "event": {"type": "integer"},
                    "head": {"type": "string"},
                    "type": {"type": "string"},
                    "tail": {"type": "string"},
                    "weight": {"type": "number"},
                },
            },
        },
    },
}

_TYPE = re.compile(r"[^0-9a-z]+")


@dataclass(frozen=True)
class ExtractedRelation:
    event_id: int
    head_id: int
    relation_type: str
    tail_id: int
    weight: float


@dataclass
class RelationBatch:
    """What one LLM call gave: the relations that passed validation and why the others did not."""

    relations: list[ExtractedRelation] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)


def render_prompt(events: Sequence[CandidateEvent], prompts_dir: Path | None = None) -> str:
    lines = [f"{n}. {' '.join(e.content.split())}\n   keys: {'; '.join(e.keys)}" for n, e in enumerate(events, 1)]
    return prompts.render("extract_relations", prompts_dir=prompts_dir, events="\n".join(lines))


def _validate(item: dict[str, Any], events: Sequence[CandidateEvent]) -> ExtractedRelation | str:
    number = item.get("event")
    if not isinstance(number, int) or not 1 <= number <= len(events):
        return f"no event {number!r}"
    event = events[number - 1]
    by_name = {name.casefold(): key_id for name, key_id in event.keys.items()}
    head, tail = by_name.get(str(item["head"]).strip().casefold()), by_name.get(str(item["tail"]).strip().casefold())
    if head is None or tail is None:
        return f"event {number}: {item['head']!r} or {item['tail']!r} is not one of its keys"
    if head == tail:
        return f"event {number}: a relation of {item['head']!r} with itself"
    kind = _TYPE.sub("_", str(item["type"]).casefold()).strip("_")
    if not kind:
        return f"event {number}: empty relation type"
    weight = item.get("weight", 1.0)
    if not isinstance(weight, int | float) or not 0 <= weight <= 1:
        return f"event {number}: weight {weight!r} is not in [0, 1]"
    return ExtractedRelation(event.event_id, head, kind, tail, float(weight))


def extract_relations(llm: LLM, events: Sequence[CandidateEvent], *,
                      prompts_dir: Path | None = None) -> RelationBatch:
    """One LLM call for a batch of events; an LLM failure is logged and gives an empty batch."""
    batch = RelationBatch()
    if not events:
        return batch
    try:
        answer = llm.complete_json(render_prompt(events, prompts_dir), schema=RELATIONS_SCHEMA,
                                   purpose="extract_relations")
    except LLMError as exc:
        log.warning("relation extraction: the LLM failed (%s)", exc)
        batch.rejected.append(f"LLM failed: {exc}")
        return batch
    for item in answer.get("relations", []):
        checked = _validate(item, events)
        if isinstance(checked, str):
            batch.rejected.append(checked)
        else:
            batch.relations.append(checked)
    return batch

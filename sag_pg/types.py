"""Plain data passed between the ingestion steps (chunker → extractor → store)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

KeyValue = str | float | bool

# The key types every source starts with (dataflow-activation §2.4's types, plus organization), with SAG's
# weights (sag_internal._key_weight).  DataFlow does not read them: it has the seed's ENTITY_TYPE_WEIGHTS
# (sag.dataflow_type_weights, a source's config -> dataflow_type_weights).
DEFAULT_KEY_TYPES: dict[str, float] = {
    "person": 1.0,
    "organization": 1.0,
    "location": 1.0,
    "time": 0.6,
    "topic": 0.8,
    "action": 0.5,
    "tag": 0.6,
}


@dataclass(frozen=True)
class Chunk:
    """A piece of a document; lines are 1-based and inclusive."""

    ordinal: int
    title: str
    content: str
    start_line: int
    end_line: int


@dataclass(frozen=True)
class KeyDraft:
    """An extracted attribute: ``value`` is a str, a float (numbers, years) or a bool (sag-algorithm §1.4)."""

    type: str
    name: str
    value: KeyValue


@dataclass
class EventDraft:
    """One atomic fact extracted from a chunk, with its keys."""

    title: str
    content: str
    time: datetime | None = None
    keys: list[KeyDraft] = field(default_factory=list)


@dataclass(frozen=True)
class KeyRef:
    """A stored key, as shown to the LLM by pre-retrieval (sag-algorithm §1.3)."""

    type: str
    name: str


@dataclass(frozen=True)
class PreRetrieval:
    """What the key-extraction prompt is given: similar keys, keys of similar events, the source's types."""

    direct_keys: list[KeyRef]
    keys_from_events: list[KeyRef]
    key_types: list[str]

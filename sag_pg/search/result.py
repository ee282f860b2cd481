"""What a search returns: the ranked chunks with their events and keys, the activated keys, timings."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["ChunkHit", "KeyHit", "SearchResult"]

KeyValue = str | float | bool | None


@dataclass(frozen=True)
class KeyHit:
    """A key of key-final: its weight after stages 1–2 and the hop (step) that first reached it."""

    key_id: int
    type: str
    name: str
    value: KeyValue
    weight: float
    step: int

    def to_dict(self) -> dict[str, Any]:
        return {"key_id": self.key_id, "type": self.type, "name": self.name, "value": self.value,
                "weight": self.weight, "step": self.step}


@dataclass
class ChunkHit:
    """A retrieved chunk.  ``score`` orders the results (PageRank, or ``weight_init`` without it), except that
    a ``direct_match`` (one of the question's best chunks by its own BM25 and cosine evidence, ``s``, the
    best chunk of a key it names, or its bridge: the best chunk of the strongest key its best passage adds) is
    kept among the first three places; the other numbers are stage 3's (see ``sag.rank_chunks``)."""

    chunk_id: int
    document_uri: str
    document_title: str
    title: str
    content: str
    score: float
    similarity: float
    text_score: float
    key_score: float
    weight_init: float
    via_keys: bool
    via_vector: bool
    via_text: bool
    events: list[dict[str, Any]] = field(default_factory=list)
    keys: list[dict[str, Any]] = field(default_factory=list)
    direct_match: bool = False

    def __repr__(self) -> str:  # one line, not the whole text
        return (f"ChunkHit(chunk_id={self.chunk_id}, document_uri={self.document_uri!r}, title={self.title!r}, "
                f"score={self.score:.4f}, content={len(self.content)} chars)")

    def to_dict(self) -> dict[str, Any]:
        return {
            "chunk_id": self.chunk_id,
            "document_uri": self.document_uri,
            "document_title": self.document_title,
            "title": self.title,
            "content": self.content,
            "score": self.score,
            "events": self.events,
            "keys": self.keys,
            "explain": {
                "similarity": self.similarity,
                "text_score": self.text_score,
                "key_score": self.key_score,
                "weight_init": self.weight_init,
                "via_keys": self.via_keys,
                "via_vector": self.via_vector,
                "via_text": self.via_text,
                "direct_match": self.direct_match,
            },
        }


@dataclass
class SearchResult:
    """The top chunks, best first; the activated keys (key-final), heaviest first; timings per stage.

    ``terms``: the question's BM25 terms and ``named_keys``: the ids of the keys it names (sag.query_terms,
    sag.named_keys); ``rewrite``: normal mode's LLM rewrite of the question (None in fast mode)."""

    query: str
    chunks: list[ChunkHit]
    keys: list[KeyHit]
    timings_ms: dict[str, float]
    terms: list[str] = field(default_factory=list)
    named_keys: list[int] = field(default_factory=list)
    rewrite: Any = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "chunks": [c.to_dict() for c in self.chunks],
            "keys": [k.to_dict() for k in self.keys],
            "terms": list(self.terms),
            "named_keys": list(self.named_keys),
            "timings_ms": dict(self.timings_ms),
        }

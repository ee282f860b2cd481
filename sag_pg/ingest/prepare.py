"""Turn one document into everything that will be stored: summary, chunks, events, keys, embeddings.

No database writes happen here; pre-retrieval (LLM mode only) reads through a callback.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from ..embedders.base import Embedder
from ..errors import ExtractionError
from ..text.chunking import chunk_document
from ..text.normalize import normalize_key
from ..text.tokenize import search_tokens, tokens_to_text
from ..types import Chunk, EventDraft, KeyDraft, PreRetrieval
from .extractors import Extractor
from .readers import DocumentInput

PreRetriever = Callable[[np.ndarray], PreRetrieval]


@dataclass(frozen=True)
class PreparedKey:
    type: str
    name: str
    normalized: str
    value_string: str | None
    value_number: float | None
    value_bool: bool | None


@dataclass
class PreparedDocument:
    doc: DocumentInput
    content_hash: str
    summary: str
    chunks: list[Chunk]
    chunk_tokens: list[list[str]]
    chunk_embeddings: np.ndarray
    event_chunk_ordinals: list[int]
    events: list[EventDraft]
    event_embeddings: np.ndarray
    keys: list[PreparedKey]
    key_embeddings: list[np.ndarray | None]
    # (event ordinal, index into keys, count)
    links: list[tuple[int, int, int]]
    prompt_tokens: int = 0
    completion_tokens: int = 0
    timings: dict[str, float] = field(default_factory=dict)


def content_hash(doc: DocumentInput, *, extractor: str, embedder: str) -> str:
    """Changes when anything that would be stored changes: text, title, metadata, extractor, embedder."""
    digest = hashlib.sha256()
    for part in (doc.title, doc.text, json.dumps(doc.metadata, sort_keys=True, ensure_ascii=False), extractor, embedder):
        digest.update(part.encode("utf-8"))
        digest.update(b"\x00")
    return digest.hexdigest()


def prepare_key(key: KeyDraft, synonyms: Mapping[str, str] | None) -> PreparedKey | None:
    key_type = key.type.strip().lower()
    if not key_type:
        return None
    value = key.value
    if isinstance(value, bool):
        return PreparedKey(key_type, key.name or str(value).lower(), "true" if value else "false", None, None, value)
    if isinstance(value, (int, float)):
        number = float(value)
        if number != number or number in (float("inf"), float("-inf")):
            return None
        normalized = f"{number:.15g}"
        return PreparedKey(key_type, key.name or normalized, normalized, None, number, None)
    text = str(value).strip()
    normalized = normalize_key(text, synonyms)
    if not normalized:
        return None
    return PreparedKey(key_type, key.name or text, normalized, text, None, None)


class DocumentPreparer:
    def __init__(self, embedder: Embedder, extractor: Extractor, *, pre_retriever: PreRetriever | None = None,
                 synonyms: Mapping[str, str] | None = None, concurrency: int = 1) -> None:
        self.embedder = embedder
        self.extractor = extractor
        self.pre_retriever = pre_retriever
        self.synonyms = synonyms
        self.concurrency = max(1, concurrency)

    def _map(self, fn: Callable, items: list) -> list:  # type: ignore[type-arg]
        if self.concurrency == 1 or len(items) < 2:
            return [fn(item) for item in items]
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            return list(pool.map(fn, items))

    def prepare(self, doc: DocumentInput) -> PreparedDocument:
        ex = self.extractor
        if ex.uses_pre_retrieval and self.pre_retriever is None:
            raise ValueError(f"extractor {ex.name} needs a pre_retriever")
        timings: dict[str, float] = {}
        clock = _Clock(timings)
        summary = ex.summary(doc.text, title=doc.title)
        clock.lap("summary")
        chunks = chunk_document(doc.text, title=doc.title)
        if not chunks:
            raise ExtractionError(f"{doc.origin or doc.uri}: no text to index after chunking")
        chunk_tokens = [search_tokens(f"{c.title}\n{c.content}") for c in chunks]
        clock.lap("chunk")

        per_chunk = self._map(lambda c: ex.events(c, summary=summary, doc_title=doc.title), chunks)
        events: list[EventDraft] = []
        event_chunk: list[int] = []
        for chunk, found in zip(chunks, per_chunk, strict=True):
            for event in found:
                if event.content.strip():
                    events.append(event)
                    event_chunk.append(chunk.ordinal)
        clock.lap("events")

        texts = [f"{c.title}\n{c.content}" for c in chunks] + [f"{e.title}\n{e.content}" for e in events]
        vectors = self.embedder.embed(texts)
        chunk_vecs, event_vecs = vectors[: len(chunks)], vectors[len(chunks):]
        clock.lap("embed")

        def keys_of(i: int) -> list[KeyDraft]:
            event = events[i]
            pre = self.pre_retriever(event_vecs[i]) if self.pre_retriever else None
            chunk = chunks[event_chunk[i]]
            return ex.keys(event, summary=summary, doc_title=doc.title, chunk_title=chunk.title, pre=pre)

        per_event = self._map(keys_of, list(range(len(events))))
        clock.lap("keys")

        keys: list[PreparedKey] = []
        index: dict[tuple[str, str], int] = {}
        counts: dict[tuple[int, int], int] = {}
        for ordinal, found in enumerate(per_event):
            for draft in found:
                prepared = prepare_key(draft, self.synonyms)
                if prepared is None:
                    continue
                ident = (prepared.type, prepared.normalized)
                if ident not in index:
                    index[ident] = len(keys)
                    keys.append(prepared)
                link = (ordinal, index[ident])
                counts[link] = counts.get(link, 0) + 1
        string_keys = [k.value_string for k in keys if k.value_string is not None]
        key_vecs_iter = iter(self.embedder.embed(string_keys)) if string_keys else iter(())
        key_vecs = [next(key_vecs_iter) if k.value_string is not None else None for k in keys]
        clock.lap("embed_keys")

        return PreparedDocument(
            doc=doc,
            content_hash=content_hash(doc, extractor=ex.name, embedder=self.embedder.name),
            summary=summary,
            chunks=chunks,
            chunk_tokens=chunk_tokens,
            chunk_embeddings=chunk_vecs,
            event_chunk_ordinals=event_chunk,
            events=events,
            event_embeddings=event_vecs,
            keys=keys,
            key_embeddings=key_vecs,
            links=[(e, k, n) for (e, k), n in counts.items()],
            timings=timings,
        )


class _Clock:
    def __init__(self, into: dict[str, float]) -> None:
        import time

        self._now = time.perf_counter
        self._last = self._now()
        self._into = into

    def lap(self, name: str) -> None:
        now = self._now()
        self._into[name] = self._into.get(name, 0.0) + (now - self._last)
        self._last = now

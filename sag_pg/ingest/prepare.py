"""Turn one document into everything that will be stored: summary, chunks, events, keys, embeddings.

No database writes happen here; pre-retrieval (LLM mode only) reads through a callback.  A big document is
prepared part by part (:meth:`DocumentPreparer.prepare_streamed`): a few dozen chunks with their events, keys
and vectors at a time, each part stored before the next is made, so memory does not grow with the document.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from ..embedders.base import Embedder
from ..errors import ExtractionError, SagError
from ..text.chunking import chunk_document
from ..text.normalize import normalize_key
from ..text.tokenize import search_tokens
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

    def as_part(self) -> PreparedPart:
        """The whole document as one part."""
        return PreparedPart(0, 0, self.chunks, self.chunk_tokens, self.chunk_embeddings, self.event_chunk_ordinals,
                            self.events, self.event_embeddings, self.keys, self.key_embeddings, self.links)

    def parts(self, max_chunks: int) -> Iterator[PreparedPart]:
        """The document cut into parts of at most ``max_chunks`` chunks (each chunk with its events, each part
        with the keys its events name)."""
        if len(self.chunks) <= max_chunks:
            yield self.as_part()
            return
        links_of: dict[int, list[tuple[int, int]]] = {}
        for event, key, count in self.links:
            links_of.setdefault(event, []).append((key, count))
        first_event = 0
        for start in range(0, len(self.chunks), max_chunks):
            chunks = self.chunks[start:start + max_chunks]
            end_event = first_event
            last = chunks[-1].ordinal
            while end_event < len(self.events) and self.event_chunk_ordinals[end_event] <= last:
                end_event += 1
            index: dict[int, int] = {}
            links: list[tuple[int, int, int]] = []
            for event in range(first_event, end_event):
                for key, count in links_of.get(event, ()):
                    links.append((event - first_event, index.setdefault(key, len(index)), count))
            yield PreparedPart(
                start, first_event, chunks, self.chunk_tokens[start:start + max_chunks],
                self.chunk_embeddings[start:start + max_chunks], self.event_chunk_ordinals[first_event:end_event],
                self.events[first_event:end_event], self.event_embeddings[first_event:end_event],
                [self.keys[k] for k in index], [self.key_embeddings[k] for k in index], links)
            first_event = end_event


@dataclass
class PreparedPart:
    """Consecutive chunks of a document with their events (attached to absolute chunk ordinals) and the keys
    those events name; links are (event position in the part, index into keys, count)."""

    chunk_offset: int
    event_offset: int
    chunks: list[Chunk]
    chunk_tokens: list[list[str]]
    chunk_embeddings: np.ndarray
    event_chunk_ordinals: list[int]
    events: list[EventDraft]
    event_embeddings: np.ndarray
    keys: list[PreparedKey]
    key_embeddings: list[np.ndarray | None]
    links: list[tuple[int, int, int]]


@dataclass
class StreamedDocument:
    """A big document whose summary and chunks are made, its events, keys and vectors made part by part
    while it is stored (:meth:`parts`; each call starts again from the first part)."""

    doc: DocumentInput
    content_hash: str
    summary: str
    chunk_count: int
    make_parts: Callable[[], Iterator[PreparedPart]]
    timings: dict[str, float] = field(default_factory=dict)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    events: int = 0  # of the parts made by the last call of parts()
    links: int = 0

    def parts(self) -> Iterator[PreparedPart]:
        self.events = self.links = 0
        for part in self.make_parts():
            self.events += len(part.events)
            self.links += len(part.links)
            yield part


def content_hash(doc: DocumentInput, *, extractor: str, embedder: str | None = None) -> str:
    """"This content, with this extraction": changes when the text, title, metadata or extractor change.

    Not the embedder: the database serves one (``sag.bind_embedder`` refuses another) and a re-embedding
    recomputes every stored vector from the stored texts, so an unchanged document needs no new extraction
    after one (issue 37 item 6).  ``embedder`` gives the hash stored before that change (content, extractor and
    embedder), which ingestion still accepts for unchanged documents.
    """
    digest = hashlib.sha256()
    parts = (doc.title, doc.text, json.dumps(doc.metadata, sort_keys=True, ensure_ascii=False), extractor)
    for part in parts if embedder is None else (*parts, embedder):
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


@dataclass
class _Draft:
    """A document extracted but not yet embedded (see :meth:`DocumentPreparer.prepare_many`)."""

    doc: DocumentInput
    summary: str
    chunks: list[Chunk]
    chunk_tokens: list[list[str]]
    events: list[EventDraft]
    event_chunk: list[int]
    keys: list[PreparedKey]
    counts: dict[tuple[int, int], int]
    timings: dict[str, float]

    def passages(self) -> list[str]:
        return [f"{c.title}\n{c.content}" for c in self.chunks] + [f"{e.title}\n{e.content}" for e in self.events]


class DocumentPreparer:
    """Extraction and embedding of documents. Embedding is batched: every chunk and event of a document (or of a
    window of documents, :meth:`prepare_many`) in one call, and each distinct key text is embedded once per
    preparer (kept in a bounded cache), so a real model's throughput is what bounds ingestion."""

    # Bytes of key vectors kept (about 43 k keys at 384 dimensions).
    KEY_CACHE_BYTES = 64 << 20

    def __init__(self, embedder: Embedder, extractor: Extractor, *, pre_retriever: PreRetriever | None = None,
                 synonyms: Mapping[str, str] | None = None, concurrency: int = 1) -> None:
        self.embedder = embedder
        self.extractor = extractor
        self.pre_retriever = pre_retriever
        self.synonyms = synonyms
        self.concurrency = max(1, concurrency)
        self._key_vectors: dict[str, np.ndarray] = {}

    def __getstate__(self) -> dict[str, object]:
        # Pickled for the worker process: no cache to ship, and a pre-retriever reads a connection of this one.
        return {**self.__dict__, "_key_vectors": {}, "pre_retriever": None}

    def _map(self, fn: Callable, items: list) -> list:  # type: ignore[type-arg]
        if self.concurrency == 1 or len(items) < 2:
            return [fn(item) for item in items]
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            return list(pool.map(fn, items))

    def prepare(self, doc: DocumentInput) -> PreparedDocument:
        if not self.extractor.uses_pre_retrieval:
            draft = self._draft(doc)
            return self._embed_drafts([draft])[0]
        if self.pre_retriever is None:
            raise ValueError(f"extractor {self.extractor.name} needs a pre_retriever")
        # Keys are extracted with the nearest stored keys of each event: events are embedded first.
        timings: dict[str, float] = {}
        clock = _Clock(timings)
        summary, chunks, chunk_tokens, events, event_chunk = self._events(doc, clock)
        vectors = self.embedder.embed([f"{c.title}\n{c.content}" for c in chunks]
                                      + [f"{e.title}\n{e.content}" for e in events])
        event_vecs = vectors[len(chunks):]
        clock.lap("embed")
        pre_retriever = self.pre_retriever
        keys, counts = self._keys(doc, summary, chunks, events, event_chunk,
                                  lambda i: pre_retriever(event_vecs[i]))
        clock.lap("keys")
        draft = _Draft(doc, summary, chunks, chunk_tokens, events, event_chunk, keys, counts, timings)
        key_vecs = self._key_embeddings(keys)
        clock.lap("embed_keys")
        return self._finish(draft, vectors, key_vecs)

    def prepare_many(self, docs: Sequence[DocumentInput]) -> list[PreparedDocument | str]:
        """Prepare several documents with one embedding call for all their texts; a message for each
        document that cannot be prepared (the others go on). Only for extractors without pre-retrieval."""
        if self.extractor.uses_pre_retrieval:
            raise ValueError(f"extractor {self.extractor.name} prepares one document at a time")
        results: list[PreparedDocument | str | _Draft] = []
        for doc in docs:
            try:
                results.append(self._draft(doc))
            except SagError as exc:
                results.append(str(exc))
        drafts = [r for r in results if isinstance(r, _Draft)]
        try:
            done = iter(self._embed_drafts(drafts))
            return [next(done) if isinstance(r, _Draft) else r for r in results]  # type: ignore[misc]
        except SagError:
            if len(drafts) < 2:
                raise
        # One document's texts spoiled the batch (too long for the model, say): find out which, one by one.
        out: list[PreparedDocument | str] = []
        for result in results:
            if isinstance(result, _Draft):
                try:
                    out.append(self._embed_drafts([result])[0])
                except SagError as exc:
                    out.append(f"{result.doc.origin or result.doc.uri}: {exc}")
            else:
                out.append(result)
        return out

    def prepare_streamed(self, doc: DocumentInput, part_chunks: int) -> StreamedDocument:
        """Summary and chunks now; events, keys and vectors of ``part_chunks`` chunks at a time as the parts
        are read.  Only for extractors without pre-retrieval."""
        if self.extractor.uses_pre_retrieval:
            raise ValueError(f"extractor {self.extractor.name} prepares one whole document at a time")
        timings: dict[str, float] = {}
        clock = _Clock(timings)
        summary = self.extractor.summary(doc.text, title=doc.title)
        clock.lap("summary")
        chunks = chunk_document(doc.text, title=doc.title)
        if not chunks:
            raise ExtractionError(f"{doc.origin or doc.uri}: no text to index after chunking")
        clock.lap("chunk")

        def make_parts() -> Iterator[PreparedPart]:
            first_event = 0
            for start in range(0, len(chunks), part_chunks):
                part = self._part(doc, summary, chunks, start, start + part_chunks, first_event, timings)
                first_event += len(part.events)
                yield part

        return StreamedDocument(doc, content_hash(doc, extractor=self.extractor.name, embedder=self.embedder.name),
                                summary, len(chunks), make_parts, timings)

    def _part(self, doc: DocumentInput, summary: str, chunks: list[Chunk], start: int, end: int, first_event: int,
              timings: dict[str, float]) -> PreparedPart:
        clock = _Clock(timings)
        own = chunks[start:end]
        chunk_tokens = [search_tokens(f"{c.title}\n{c.content}") for c in own]
        clock.lap("chunk")
        events, event_chunk = self._chunk_events(doc, summary, own)
        clock.lap("events")
        # _keys reads chunks[event_chunk[i]]: the ordinals are the document's, and so is the list.
        keys, counts = self._keys(doc, summary, chunks, events, event_chunk, None)
        clock.lap("keys")
        new_keys = list(dict.fromkeys(k.value_string for k in keys
                                      if k.value_string is not None and k.value_string not in self._key_vectors))
        texts = [f"{c.title}\n{c.content}" for c in own] + [f"{e.title}\n{e.content}" for e in events]
        vectors = self.embedder.embed(texts + new_keys)
        self._remember_keys(new_keys, vectors[len(texts):])
        key_vecs = self._key_embeddings(keys)
        clock.lap("embed")
        return PreparedPart(start, first_event, own, chunk_tokens, vectors[:len(own)], event_chunk, events,
                            vectors[len(own):len(texts)], keys, key_vecs,
                            [(e, k, c) for (e, k), c in counts.items()])

    def _chunk_events(self, doc: DocumentInput, summary: str,
                      chunks: list[Chunk]) -> tuple[list[EventDraft], list[int]]:
        ex = self.extractor
        per_chunk = self._map(lambda c: ex.events(c, summary=summary, doc_title=doc.title), chunks)
        events: list[EventDraft] = []
        event_chunk: list[int] = []
        for chunk, found in zip(chunks, per_chunk, strict=True):
            for event in found:
                if event.content.strip():
                    events.append(event)
                    event_chunk.append(chunk.ordinal)
        return events, event_chunk

    # -- the steps ---------------------------------------------------------------------------------------

    def _events(self, doc: DocumentInput, clock: _Clock) -> tuple[str, list[Chunk], list[list[str]],
                                                                   list[EventDraft], list[int]]:
        ex = self.extractor
        summary = ex.summary(doc.text, title=doc.title)
        clock.lap("summary")
        chunks = chunk_document(doc.text, title=doc.title)
        if not chunks:
            raise ExtractionError(f"{doc.origin or doc.uri}: no text to index after chunking")
        chunk_tokens = [search_tokens(f"{c.title}\n{c.content}") for c in chunks]
        clock.lap("chunk")
        events, event_chunk = self._chunk_events(doc, summary, chunks)
        clock.lap("events")
        return summary, chunks, chunk_tokens, events, event_chunk

    def _keys(self, doc: DocumentInput, summary: str, chunks: list[Chunk], events: list[EventDraft],
              event_chunk: list[int], pre_of: Callable[[int], PreRetrieval] | None,
              ) -> tuple[list[PreparedKey], dict[tuple[int, int], int]]:
        ex = self.extractor

        def keys_of(i: int) -> list[KeyDraft]:
            chunk = chunks[event_chunk[i]]
            return ex.keys(events[i], summary=summary, doc_title=doc.title, chunk_title=chunk.title,
                           pre=pre_of(i) if pre_of else None)

        per_event = self._map(keys_of, list(range(len(events))))
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
        return keys, counts

    def _draft(self, doc: DocumentInput) -> _Draft:
        timings: dict[str, float] = {}
        clock = _Clock(timings)
        summary, chunks, chunk_tokens, events, event_chunk = self._events(doc, clock)
        keys, counts = self._keys(doc, summary, chunks, events, event_chunk, None)
        clock.lap("keys")
        return _Draft(doc, summary, chunks, chunk_tokens, events, event_chunk, keys, counts, timings)

    def _embed_drafts(self, drafts: list[_Draft]) -> list[PreparedDocument]:
        """One embedding call for the chunks, events and not yet known key texts of all the drafts."""
        if not drafts:
            return []
        started = time.perf_counter()
        passages = [draft.passages() for draft in drafts]
        new_keys = list(dict.fromkeys(k.value_string for d in drafts for k in d.keys
                                      if k.value_string is not None and k.value_string not in self._key_vectors))
        texts = [text for texts in passages for text in texts]
        vectors = self.embedder.embed(texts + new_keys)
        self._remember_keys(new_keys, vectors[len(texts):])
        elapsed = time.perf_counter() - started
        total = max(1, len(texts) + len(new_keys))
        out: list[PreparedDocument] = []
        offset = 0
        for draft, own in zip(drafts, passages, strict=True):
            key_vecs = self._key_embeddings(draft.keys)
            # The shared call's time, shared by the number of texts (new key texts count for all).
            draft.timings["embed"] = draft.timings.get("embed", 0.0) + elapsed * (len(own) + len(new_keys)
                                                                                  / len(drafts)) / total
            out.append(self._finish(draft, vectors[offset:offset + len(own)], key_vecs))
            offset += len(own)
        return out

    def _key_embeddings(self, keys: list[PreparedKey]) -> list[np.ndarray | None]:
        """Vectors of string keys (None for number and bool keys), embedding only texts not seen before."""
        new = list(dict.fromkeys(k.value_string for k in keys
                                 if k.value_string is not None and k.value_string not in self._key_vectors))
        if new:
            self._remember_keys(new, self.embedder.embed(new))
        return [self._key_vectors[k.value_string] if k.value_string is not None else None for k in keys]

    def _remember_keys(self, texts: list[str], vectors: np.ndarray) -> None:
        if not texts:
            return
        limit = max(1024, self.KEY_CACHE_BYTES // max(1, 4 * vectors.shape[1]))
        if len(self._key_vectors) + len(texts) > limit:
            # Forget the oldest half: recent documents share keys more than old ones.
            for text in list(itertools.islice(self._key_vectors, len(self._key_vectors) // 2 + len(texts))):
                del self._key_vectors[text]
        for text, vector in zip(texts, vectors, strict=True):
            self._key_vectors[text] = np.array(vector, dtype=np.float32)  # a copy: not a view of the batch

    def _finish(self, draft: _Draft, vectors: np.ndarray, key_vecs: list[np.ndarray | None]) -> PreparedDocument:
        n = len(draft.chunks)
        return PreparedDocument(
            doc=draft.doc,
            content_hash=content_hash(draft.doc, extractor=self.extractor.name),
            summary=draft.summary,
            chunks=draft.chunks,
            chunk_tokens=draft.chunk_tokens,
            chunk_embeddings=vectors[:n],
            event_chunk_ordinals=draft.event_chunk,
            events=draft.events,
            event_embeddings=vectors[n:],
            keys=draft.keys,
            key_embeddings=key_vecs,
            links=[(e, k, c) for (e, k), c in draft.counts.items()],
            timings=draft.timings,
        )


class _Clock:
    def __init__(self, into: dict[str, float]) -> None:
        self._now = time.perf_counter
        self._last = self._now()
        self._into = into

    def lap(self, name: str) -> None:
        now = self._now()
        self._into[name] = self._into.get(name, 0.0) + (now - self._last)
        self._last = now

"""A deterministic synthetic SAG corpus with realistic skew, generated in batches of bounded size.

Shape, from the offline ingest of the bench sets (musique/hotpotqa: ~3.4-4.0 events a chunk, ~3.9-4.1 keys an
event, key event counts with median 1 and a few hubs): one chunk per document; 2-5 events a chunk (mean 3.5);
2-6 key draws an event (mean 4; a key drawn twice in an event is one link with count 2).  Keys are drawn
from a universe of ``20 * events`` by Zipf-Mandelbrot popularity, P(rank r) ∝ 1 / (r + 8) (sampled by the
inverse of its continuous CDF, no table): at 10 k events that gives 1.7 keys an event, 2.3 events a key,
median 1, 99th percentile 23, the top key in 4 % of the events (bench sets: 1.8, 2.2, 1, ~20, 4.7 %); at 1 M
events 1.3 keys an event and hubs of tens of thousands of events, as vocabularies saturate.  Key types follow the bench mix (topic, person, location,
organization; 4 % ``time`` keys are numbers, without embedding).  Texts are key names (pseudo-words, one
token each) plus Zipf-distributed filler words (English stop words first), ~22 tokens an event (~75 a chunk; bench sets 78-91).  Embeddings
are random unit vectors.

Every batch draws from its own generators, seeded by ``(seed, stream, batch)``: the structure (pass 1,
which only counts key events, and pass 2, which writes rows) is identical on every run, and memory is
bounded by the batch (plus the key ids of all links, 8 bytes each, in pass 1).

Sources (``sources`` > 1): the events are split evenly over sources 1..N, each a corpus of the shape above with
its own documents, chunks, events, links and key universe (``20 * its events`` keys: the same vocabulary of
names by popularity rank, as real sources share words, but distinct key rows with their own embeddings).  Ids
stay unique across sources, as one node's sequences give them: a source's events follow the previous source's,
its chunk (= document) ids start at its first event id, its key ids after the previous sources' universes.
Source 0's generators are seeded as a one-source corpus's, the others' by ``(seed, stream, batch, source)``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import numpy.typing as npt

__all__ = ["KeyRows", "SourceSlice", "Structure", "SynthBatch", "SynthConfig", "key_counts", "key_rows", "make_batch",
           "structures", "synth_batches"]

I64 = npt.NDArray[np.int64]

_STRUCTURE, _VECTORS, _TEXT, _KEYS = 0, 1, 2, 3  # generator streams

_CONSONANTS = "bcdfghjklmnprstvwxz"  # 19
_VOWELS = "aeiouy"                    # 6 -> 114 syllables
_SYLLABLES = [c + v for c in _CONSONANTS for v in _VOWELS]
_STOP_WORDS = (
    "the", "of", "and", "in", "to", "a", "was", "is", "for", "on", "as", "by", "with", "from", "at", "that", "his",
    "he", "it", "an", "which", "were", "are", "its", "be", "this", "first", "also", "or", "who", "their", "after",
    "has", "had",
)
# (type, share of keys) — the offline extractor's mix on the bench sets.
_TYPES = (("topic", 45), ("person", 25), ("location", 17), ("organization", 9), ("time", 4))


_PAIRS = [a + b for a in _SYLLABLES for b in _SYLLABLES]


def _word(n: int) -> str:
    """A pronounceable pseudo-word, distinct for every n >= 0: n in base 114, a syllable a digit."""
    if n < len(_SYLLABLES):
        return _SYLLABLES[n]
    if n < len(_PAIRS):
        return _PAIRS[n]
    high, low = divmod(n, len(_PAIRS))
    return _word(high) + _PAIRS[low]


@dataclass(frozen=True)
class SynthConfig:
    events: int
    dim: int = 512
    seed: int = 7
    batch_chunks: int = 2000
    zipf_q: float = 8.0
    key_universe_factor: int = 20
    filler_words: int = 5000
    sources: int = 1

    def __post_init__(self) -> None:
        if self.events < 1:
            raise ValueError(f"events must be >= 1, got {self.events}")
        if not 1 <= self.dim <= 4000:
            raise ValueError(f"dim must be in 1..4000 (HNSW over halfvec), got {self.dim}")
        if not 1 <= self.sources <= self.events:
            raise ValueError(f"sources must be in 1..events ({self.events}), got {self.sources}")

    @property
    def key_universe(self) -> int:
        """Keys of a one-source corpus of this size (a source's: :attr:`SourceSlice.universe`)."""
        return self.universe_of(self.events)

    def universe_of(self, events: int) -> int:
        return max(1000, self.key_universe_factor * events)

    @cached_property
    def slices(self) -> tuple[SourceSlice, ...]:
        """The sources, in order: events split evenly (the first ``events % sources`` get one more)."""
        base, extra = divmod(self.events, self.sources)
        out, event_start, key_start = [], 1, 0
        for index in range(self.sources):
            events = base + (index < extra)
            universe = self.universe_of(events)
            out.append(SourceSlice(index=index, events=events, event_start=event_start, key_start=key_start,
                                   universe=universe))
            event_start += events
            key_start += universe
        return tuple(out)

    def entropy(self, stream: int, batch: int, source: int) -> list[int]:
        """A generator's seed: a one-source corpus's for source 0, the source appended for the others."""
        return [self.seed, stream, batch] + ([source] if source else [])

    def draw_keys(self, rng: np.random.Generator, n: int, universe: int | None = None) -> I64:
        """n popularity ranks (1 first) among ``universe`` keys (default :attr:`key_universe`) with
        P(r) ∝ 1 / (r + q): floor of the inverse CDF of the density 1 / (x + q) on [1, U + 1)."""
        q = self.zipf_q
        universe = self.key_universe if universe is None else universe
        span = np.log((universe + 1 + q) / (1 + q))
        ranks = np.floor((1 + q) * np.exp(rng.random(n) * span) - q).astype(np.int64)
        return np.clip(ranks, 1, universe)

    @cached_property
    def filler_cdf(self) -> npt.NDArray[np.float64]:
        cdf = np.cumsum(1.0 / np.arange(1, self.filler_words + 1, dtype=np.float64))
        return cdf / cdf[-1]

    @cached_property
    def filler(self) -> list[str]:
        words = list(_STOP_WORDS)
        n = 0
        while len(words) < self.filler_words:
            # Filler words end in "n", key names never do: the two vocabularies stay apart.
            words.append(_word(n) + "n")
            n += 1
        return words[: self.filler_words]


@dataclass(frozen=True)
class SourceSlice:
    """One source of the corpus: its events, ids ``event_start ..`` (chunk ids from there too), key ids
    ``key_start + rank`` for ranks 1..``universe``.  Its source id is ``index + 1``."""

    index: int
    events: int
    event_start: int
    key_start: int
    universe: int

    @property
    def source_id(self) -> int:
        return self.index + 1


@dataclass(frozen=True)
class Structure:
    """Ids and links of one batch of one source (ids are global and 1-based; document id = chunk id)."""

    source: SourceSlice
    batch: int              # within the source
    chunk_ids: I64
    event_ids: I64
    event_chunk: I64        # chunk id of each event
    event_ordinal: npt.NDArray[np.int32]  # position of the event in its chunk
    link_event: I64         # event_keys, one row per (event, key)
    link_key: I64
    link_count: npt.NDArray[np.int32]


def structures(config: SynthConfig, source: SourceSlice | None = None) -> Iterator[Structure]:
    """The batches' structure, source after source (or of ``source`` only), each source until its events
    (its last chunk may be short)."""
    for part in config.slices if source is None else (source,):
        yield from _source_structures(config, part)


def _source_structures(config: SynthConfig, source: SourceSlice) -> Iterator[Structure]:
    chunk_next, event_next, batch = source.event_start, source.event_start, 0
    end = source.event_start + source.events  # first event id past the source
    universe = source.universe
    while event_next < end:
        rng = np.random.default_rng(config.entropy(_STRUCTURE, batch, source.index))
        per_chunk = rng.integers(2, 6, size=config.batch_chunks)
        remaining = end - event_next
        cum = np.cumsum(per_chunk)
        if cum[-1] >= remaining:  # the last batch: cut at exactly config.events
            n = int(np.searchsorted(cum, remaining)) + 1
            per_chunk = per_chunk[:n].copy()
            per_chunk[-1] -= int(cum[n - 1] - remaining)
        n_chunks, n_events = len(per_chunk), int(per_chunk.sum())
        chunk_ids = np.arange(chunk_next, chunk_next + n_chunks, dtype=np.int64)
        event_ids = np.arange(event_next, event_next + n_events, dtype=np.int64)
        event_chunk = np.repeat(chunk_ids, per_chunk)
        starts = np.repeat(np.cumsum(per_chunk) - per_chunk, per_chunk)
        event_ordinal = (np.arange(n_events) - starts).astype(np.int32)
        per_event = rng.integers(2, 7, size=n_events)
        draws = config.draw_keys(rng, int(per_event.sum()), universe)
        pairs, counts = np.unique(np.repeat(event_ids, per_event) * (universe + 1) + draws, return_counts=True)
        yield Structure(
            source=source, batch=batch, chunk_ids=chunk_ids, event_ids=event_ids, event_chunk=event_chunk,
            event_ordinal=event_ordinal, link_event=pairs // (universe + 1),
            link_key=pairs % (universe + 1) + source.key_start, link_count=counts.astype(np.int32),
        )
        chunk_next += n_chunks
        event_next += n_events
        batch += 1


def key_counts(config: SynthConfig, source: SourceSlice | None = None) -> tuple[I64, I64]:
    """Pass 1: the keys that occur (ascending ids) and their number of events (of ``source`` only, if given)."""
    ids, counts = np.unique(np.concatenate([s.link_key for s in structures(config, source)]), return_counts=True)
    return ids.astype(np.int64), counts.astype(np.int64)


def key_type(key_ids: I64) -> list[str]:
    """Types by popularity rank (a key id less its source's ``key_start``)."""
    bucket = (key_ids * 2654435761) % 100
    names = np.empty(len(key_ids), dtype=object)
    low = 0
    for name, share in _TYPES:
        names[(bucket >= low) & (bucket < low + share)] = name
        low += share
    return list(names)


def key_name(key_id: int, type_: str) -> str:
    if type_ == "time":
        return str(key_id)
    word = _word(key_id)
    return word if type_ == "topic" else word.capitalize()


@dataclass(frozen=True)
class KeyRows:
    ids: I64
    types: list[str]
    names: list[str]
    event_counts: I64
    embeddings: npt.NDArray[np.float32] | None  # string keys only


def _unit(rng: np.random.Generator, n: int, dim: int) -> npt.NDArray[np.float32]:
    """Random unit vectors: uniform coordinates in [-1, 1), normalized (several times cheaper than normal
    draws; pairwise cosines are just as concentrated around 0, with spread ~1/sqrt(dim))."""
    vectors = rng.random((n, dim), dtype=np.float32)
    vectors -= 0.5
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors


def key_rows(config: SynthConfig, ids: I64, counts: I64, start: int,
             source: SourceSlice | None = None) -> tuple[KeyRows, KeyRows]:
    """Rows for a slice of :func:`key_counts` of ``source`` (default: the first) (``ids``, ``counts``,
    beginning at position ``start``): (string keys with embeddings, time keys).  Embeddings come from a
    generator seeded by ``start`` (and the source), so the rows do not depend on how the keys are batched
    elsewhere; types and names by rank, so every source has the same vocabulary."""
    source = config.slices[0] if source is None else source
    ranks = ids - source.key_start
    types = key_type(ranks)
    is_time = np.array([t == "time" for t in types], dtype=bool)
    rng = np.random.default_rng(config.entropy(_KEYS, start, source.index))
    groups = []
    for mask, with_vectors in ((~is_time, True), (is_time, False)):
        sub = ids[mask]
        sub_types = [t for t, m in zip(types, mask) if m]
        groups.append(KeyRows(
            ids=sub, types=sub_types, names=[key_name(int(i), t) for i, t in zip(ranks[mask], sub_types)],
            event_counts=counts[mask], embeddings=_unit(rng, len(sub), config.dim) if with_vectors else None,
        ))
    return groups[0], groups[1]


@dataclass(frozen=True)
class SynthBatch:
    structure: Structure
    event_titles: list[str]
    event_contents: list[str]
    chunk_contents: list[str]
    chunk_tokens: list[str]
    chunk_token_counts: npt.NDArray[np.int32]
    event_embeddings: npt.NDArray[np.float32]
    chunk_embeddings: npt.NDArray[np.float32]


def make_batch(config: SynthConfig, s: Structure) -> SynthBatch:
    """Texts and embeddings of one batch (pass 2)."""
    n_events = len(s.event_ids)
    rng = np.random.default_rng(config.entropy(_TEXT, s.batch, s.source.index))
    per_event = rng.integers(12, 25, size=n_events)
    filler_ids = np.searchsorted(config.filler_cdf, rng.random(int(per_event.sum())), side="right")
    filler_ids = np.minimum(filler_ids, config.filler_words - 1)
    filler = config.filler
    # Key names of each event, in link order (links are sorted by event id).
    first = int(s.event_ids[0])
    key_ids = np.unique(s.link_key)
    ranks = key_ids - s.source.key_start
    names = dict(zip(key_ids.tolist(), (key_name(k, t) for k, t in zip(ranks.tolist(), key_type(ranks)))))
    event_keys: list[list[str]] = [[] for _ in range(n_events)]
    for e, k, c in zip(s.link_event.tolist(), s.link_key.tolist(), s.link_count.tolist()):
        event_keys[e - first].extend([names[k]] * c)
    titles, contents = [], []
    offsets = np.concatenate([[0], np.cumsum(per_event)]).tolist()
    fill = [filler[i] for i in filler_ids.tolist()]
    for i, keys in enumerate(event_keys):
        words = fill[offsets[i]:offsets[i + 1]]
        # Key names spread through the filler, as entities are through a sentence.
        sentence = []
        for j, w in enumerate(words):
            sentence.append(w)
            if j % 3 == 1 and keys:
                sentence.append(keys.pop())
        sentence.extend(keys)
        text = " ".join(sentence)
        contents.append(text[0].upper() + text[1:] + ".")
        titles.append(" ".join(sentence[:6]))
    chunk_contents, chunk_tokens, token_counts = [], [], []
    ordinal = s.event_ordinal.tolist()
    current: list[str] = []
    for i in range(n_events):
        if ordinal[i] == 0 and current:
            chunk_contents.append(" ".join(current))
            current = []
        current.append(contents[i])
    chunk_contents.append(" ".join(current))
    for text in chunk_contents:
        tokens = text.lower().replace(".", "").split()
        chunk_tokens.append(" ".join(tokens))
        token_counts.append(len(tokens))
    vrng = np.random.default_rng(config.entropy(_VECTORS, s.batch, s.source.index))
    return SynthBatch(
        structure=s, event_titles=titles, event_contents=contents, chunk_contents=chunk_contents,
        chunk_tokens=chunk_tokens, chunk_token_counts=np.asarray(token_counts, dtype=np.int32),
        event_embeddings=_unit(vrng, n_events, config.dim), chunk_embeddings=_unit(vrng, len(s.chunk_ids), config.dim),
    )


def synth_batches(config: SynthConfig) -> Iterator[SynthBatch]:
    """Pass 2: every batch with its texts and embeddings."""
    for s in structures(config):
        yield make_batch(config, s)

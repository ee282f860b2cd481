"""The :class:`Embedder` protocol, the row normalization every embedder shares, and query/passage prefixes.

Retrieval models are often trained with a marker in front of each text: E5 wants ``query: `` before a
question and ``passage: `` before what is searched, BGE wants an instruction before the question only.
Embedders put ``passage_prefix`` before what ``embed`` gets (chunks, events, keys: everything stored)
and ``query_prefix`` before what ``embed_query`` gets (the question). :func:`known_prefixes` has the
defaults by model name; ``SAG_EMBED_QUERY_PREFIX`` / ``SAG_EMBED_PASSAGE_PREFIX`` override them.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

# pgvector's `vector` type holds at most 16,000 dimensions.
MAX_DIMENSION = 16000


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit vectors.

    ``name`` is the identity recorded in the database (``sag.bind_embedder``): it must change
    whenever the vectors would change (another model, dimension or hashing scheme), so that a
    database is never searched with vectors from a different space.
    """

    name: str
    dimension: int

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """An (n, dimension) float32 array whose rows have L2 norm 1, or are all zero.

        An empty ``texts`` gives shape (0, dimension); a row is zero when its text has
        nothing to embed (e.g. punctuation only), never NaN.

        These are passages: what gets stored and searched (chunks, events, keys). An embedder may also
        have ``embed_query(texts)`` for questions (another prefix); :func:`embed_queries` uses it when
        there is one.
        """
        ...


def embed_queries(embedder: Embedder, texts: Sequence[str]) -> npt.NDArray[np.float32]:
    """``embedder.embed_query(texts)`` if the embedder tells queries apart, else ``embedder.embed(texts)``."""
    embed_query = getattr(embedder, "embed_query", None)
    return embed_query(texts) if embed_query is not None else embedder.embed(texts)


# (pattern on the lower-cased model name, query prefix, passage prefix); the first match wins.
_BGE_EN = "Represent this sentence for searching relevant passages: "
_BGE_ZH = "为这个句子生成表示以用于检索相关文章："
_KNOWN_PREFIXES: tuple[tuple[str, str, str], ...] = (
    (r"(^|[^a-z0-9])e5([^a-z0-9]|$)", "query: ", "passage: "),  # intfloat/e5-*, multilingual-e5-*
    (r"bge-m3", "", ""),  # BGE-M3 needs no instruction
    (r"bge-[a-z0-9.-]*zh", _BGE_ZH, ""),
    (r"(^|[^a-z0-9])bge([^a-z0-9]|$)", _BGE_EN, ""),  # bge-*-en(-v1.5)
    (r"nomic-embed-text", "search_query: ", "search_document: "),
)


def known_prefixes(model: str) -> tuple[str, str]:
    """(query prefix, passage prefix) a model family expects, from its name; ("", "") when none is known.

    Example: ``known_prefixes("intfloat/multilingual-e5-small") == ("query: ", "passage: ")``.
    """
    name = model.lower()
    for pattern, query, passage in _KNOWN_PREFIXES:
        if re.search(pattern, name):
            return query, passage
    return "", ""


def prefix_tag(query_prefix: str, passage_prefix: str, *extra: str) -> str:
    """A short tag for an embedder's name: the prefixes change the vectors, so they are part of its identity.

    Empty when there is no prefix at all (names of prefix-free embedders stay as they always were).
    """
    if not (query_prefix or passage_prefix or any(extra)):
        return ""
    digest = hashlib.sha256("\0".join((query_prefix, passage_prefix, *extra)).encode()).hexdigest()
    return f":prefix-{digest[:8]}"


def add_prefix(prefix: str, texts: Sequence[str]) -> list[str]:
    """Texts with ``prefix`` in front; blank texts stay blank (they are embedded as zero rows)."""
    return [prefix + text if prefix and text.strip() else text for text in texts]


def normalize_rows(matrix: npt.ArrayLike) -> npt.NDArray[np.float32]:
    """L2-normalize each row in float64, then round to float32; zero rows stay zero.

    Normalizing in float64 and rounding once keeps the result identical to PostgreSQL's
    ``sqrt``/division on ``double precision`` followed by the cast to ``vector`` (float4).
    """
    rows = np.asarray(matrix, dtype=np.float64)
    if rows.ndim != 2:
        raise ValueError(f"expected a 2-D array, got shape {rows.shape}")
    norms = np.sqrt(np.einsum("ij,ij->i", rows, rows))
    safe = np.where(norms > 0.0, norms, 1.0)
    return (rows / safe[:, None]).astype(np.float32)

"""The offline default embedder: feature hashing, reproduced bit for bit by ``sag.embed_hash`` in SQL.

Definition of ``hash-v1`` (keep in step with ``sql/idempotent/010-embed-hash.sql``):

1. Fold ASCII only: ``A``–``Z`` become ``a``–``z``; every other character is left alone, because
   Python's ``str.lower`` and PostgreSQL's ``lower`` disagree outside ASCII (``ß``, ``İ``, ...).
2. Tokens are the maximal runs of ASCII letters ``[a-z]+``, of ASCII digits ``[0-9]+`` and of CJK
   ideographs ``[\\u3400-\\u4dbf\\u4e00-\\u9fff]+``; every other character separates tokens.
   A letter/digit boundary also separates, so ``302ai``, ``302.AI`` and ``302 AI`` all give the
   tokens ``302``, ``ai`` (and ``gpt4`` / ``GPT-4`` both give ``gpt``, ``4``).
3. Features, with weights:

   - a letter or digit token ``w`` that is not in :data:`STOPWORDS`: ``"w:" + w`` (1.0), and, when
     ``len(w) >= 4``, each of the ``len(w)`` character trigrams ``tri`` of ``"#" + w + "#"`` as
     ``"t:" + tri`` (0.25 each) -- these give fuzzy matches across inflections and typos;
   - a CJK run ``r``: each character ``ch`` not in :data:`STOPWORDS` as ``"c:" + ch`` (0.5), and each
     pair of adjacent characters ``p`` (stop characters included) as ``"b:" + p`` (1.0).

   A feature that occurs several times counts several times.
4. Hashing: ``h = md5(feature encoded as UTF-8)`` in lower-case hex; the bucket is
   ``int(h[0:8], 16) % dimension`` (the first 8 hex digits as an *unsigned* 32-bit integer) and the
   sign is +1 if the 9th hex digit ``h[8]`` is even, else -1. Each feature adds ``sign * weight`` to
   its bucket.
5. The vector is L2-normalized (computed in double precision, then rounded once to float32);
   a text without features gives the zero vector.

Every weight is a multiple of 1/4, so the bucket sums and the sum of squares are exact in double
precision whatever the summation order; that is what makes Python and SQL agree to the last bit.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from ..errors import ConfigError
from .base import MAX_DIMENSION, normalize_rows

VERSION = "hash-v1"

# Function words that would otherwise dominate the cosine of short texts. The same list is in
# sag_internal._embed_hash_stopwords() (SQL). English entries are matched against whole letter tokens
# (``s``/``t`` are what "it's"/"don't" leave behind); the CJK characters only lose their
# single-character feature, not the pairs they are part of.
_STOPWORD_TEXT = """
    a about above after again against all also am an and any are as at
    be because been before being below between both but by
    can could did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how
    i if in into is it its itself just me more most my myself
    no nor not now of off on once only or other our ours ourselves out over own
    same she should so some such than that the their theirs them themselves then there these they
    this those through to too under until up very
    was we were what when where which while who whom whose why will with would
    you your yours yourself s t
    的 了 是 在 和 与 及 之 其 也 而 或 着 这 那
"""
STOPWORDS: frozenset[str] = frozenset(_STOPWORD_TEXT.split())

_ASCII_FOLD = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_TOKEN = re.compile(r"[a-z]+|[0-9]+|[\u3400-\u4dbf\u4e00-\u9fff]+")
_WORD_WEIGHT = 1.0
_TRIGRAM_WEIGHT = 0.25
_CJK_CHAR_WEIGHT = 0.5
_CJK_PAIR_WEIGHT = 1.0
_EVEN_HEX = frozenset("02468ace")


def tokenize(text: str) -> list[str]:
    """Step 1 and 2 of the definition: ASCII-folded letter, digit and CJK runs (stopwords kept)."""
    return _TOKEN.findall(text.translate(_ASCII_FOLD))


def token_features(token: str) -> list[tuple[str, float]]:
    """Step 3 of the definition: the weighted features of one token (empty for a stopword)."""
    if "a" <= token[0] <= "z" or "0" <= token[0] <= "9":
        if token in STOPWORDS:
            return []
        features = [("w:" + token, _WORD_WEIGHT)]
        if len(token) >= 4:
            padded = "#" + token + "#"
            features += [("t:" + padded[i : i + 3], _TRIGRAM_WEIGHT) for i in range(len(token))]
        return features
    features = [("c:" + ch, _CJK_CHAR_WEIGHT) for ch in token if ch not in STOPWORDS]
    features += [("b:" + token[i : i + 2], _CJK_PAIR_WEIGHT) for i in range(len(token) - 1)]
    return features


def features(text: str) -> list[tuple[str, float]]:
    """All weighted features of a text, in token order (for inspection and tests)."""
    return [feature for token in tokenize(text) for feature in token_features(token)]


@functools.lru_cache(maxsize=1 << 16)
def feature_hash(feature: str) -> tuple[int, int]:
    """Step 4 of the definition: (unsigned 32-bit bucket seed, sign) of a feature."""
    digest = hashlib.md5(feature.encode("utf-8"), usedforsecurity=False).hexdigest()
    return int(digest[:8], 16), (1 if digest[8] in _EVEN_HEX else -1)


class HashEmbedder:
    """Feature-hashing embedder: no model, no network, identical to ``sag.embed_hash`` in SQL.

    See the module docstring for the exact definition. Tokens repeat a lot (Zipf), so each distinct
    token's (buckets, signed weights) is computed once and cached; a batch is then summed with one
    ``numpy.bincount``.
    """

    # Rows summed per bincount: bounds the dense float64 scratch array to ~chunk * dimension * 8 bytes.
    _CHUNK = 2048

    def __init__(self, dimension: int = 512) -> None:
        if isinstance(dimension, bool) or not isinstance(dimension, int):
            raise ConfigError(f"hash embedder dimension must be an integer, got {dimension!r}")
        if not 1 <= dimension <= MAX_DIMENSION:
            raise ConfigError(
                f"hash embedder dimension must be between 1 and {MAX_DIMENSION}, got {dimension}"
            )
        self.dimension = dimension
        self.name = f"{VERSION}:{dimension}"
        # Per instance, because buckets depend on the dimension.
        self._token_vector = functools.lru_cache(maxsize=1 << 16)(self._compute_token_vector)

    def __repr__(self) -> str:
        return f"HashEmbedder(dimension={self.dimension})"

    def __reduce__(self) -> tuple[type[HashEmbedder], tuple[int]]:
        # Pickled for ingestion's worker process: the cache is rebuilt there, not shipped.
        return (HashEmbedder, (self.dimension,))

    def _compute_token_vector(self, token: str) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64], int]:
        buckets: list[int] = []
        values: list[float] = []
        for feature, weight in token_features(token):
            seed, sign = feature_hash(feature)
            buckets.append(seed % self.dimension)
            values.append(sign * weight)
        bucket_array = np.asarray(buckets, dtype=np.int64)
        value_array = np.asarray(values, dtype=np.float64)
        # Shared by every later call through the cache: make accidental in-place edits fail loudly.
        bucket_array.flags.writeable = False
        value_array.flags.writeable = False
        return bucket_array, value_array, len(buckets)

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not a single str")
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(texts), self._CHUNK):
            chunk = texts[start : start + self._CHUNK]
            out[start : start + len(chunk)] = self._embed_chunk(chunk)
        return out

    def _embed_chunk(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        n, dim = len(texts), self.dimension
        tokens: list[str] = []
        tokens_per_text = np.empty(n, dtype=np.int64)
        for row, text in enumerate(texts):
            found = tokenize(text)
            tokens += found
            tokens_per_text[row] = len(found)
        entries = list(map(self._token_vector, tokens))
        if not entries:
            return np.zeros((n, dim), dtype=np.float32)
        features_per_token = np.fromiter((entry[2] for entry in entries), dtype=np.int64, count=len(entries))
        rows = np.repeat(np.repeat(np.arange(n, dtype=np.int64), tokens_per_text), features_per_token)
        buckets = np.concatenate([entry[0] for entry in entries])
        values = np.concatenate([entry[1] for entry in entries])
        # Sums of multiples of 1/4: exact in float64, so the order of summation is irrelevant.
        dense = np.bincount(rows * dim + buckets, weights=values, minlength=n * dim)
        return normalize_rows(dense.reshape(n, dim))

"""Extractive summaries with sumy's TextRank, fed by our own tokenizer (no NLTK data needed).

Why TextRank and not LexRank: LexRank's idf is ``log(n / (1 + df))``, which is 0 or negative for every
word of a two- or three-sentence text, so all similarities vanish and its power method divides by a zero
norm (NaN scores, arbitrary picks). TextRank's damping keeps short texts well defined.

One fix to sumy's TextRank graph (:class:`_TextRank`): sumy links every sentence to itself, and a
self-loop keeps a sentence's score at 1/n however unrelated it is to the rest, so on short texts all
scores come out ~equal and off-topic sentences win by rounding noise. We build the graph as in the
TextRank paper (no self-loops; a sentence sharing no word with any other votes evenly for all, as
PageRank does for dangling pages) and keep sumy's edge weight, power method and sentence selection.

Why we build sumy's document model ourselves instead of ``PlaintextParser``: the parser joins lines with
spaces (erasing the line breaks that end Chinese sentences) and drops any all-upper-case line as a
"heading". :class:`SumyTokenizer` still works with ``PlaintextParser.from_string(text, tokenizer)``.

Offline: sumy's stop-word lists are package data read with ``pkgutil``; the stemmer is NLTK's Snowball
stemmer, which is pure code. Nothing touches ``nltk.data`` (no punkt, no stopwords corpus).
"""

from __future__ import annotations

import math
import pkgutil
from collections import Counter
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from sag_pg.text.tokenize import contains_han, split_sentences, word_tokens

__all__ = ["MAX_SUMMARY_CANDIDATES", "SumyTokenizer", "summarize"]

# TextRank compares every pair of sentences, so its cost grows with the square of the sentence count
# (measured on one core: 0.7 ms for 20 sentences, 10 ms for 80, 135 ms for 320). Longer documents are
# ranked on the first half of this budget (the lead carries most of a document's gist) plus an evenly
# spaced sample of the rest, so the whole document is still represented.
MAX_SUMMARY_CANDIDATES = 80

_LANGUAGE_ALIASES = {
    "en": "english", "zh": "chinese", "de": "german", "fr": "french", "es": "spanish", "it": "italian",
    "pt": "portuguese", "nl": "dutch", "sv": "swedish", "ru": "russian", "ar": "arabic", "ja": "japanese",
    "ko": "korean", "cs": "czech", "pl": "polish", "sk": "slovak", "uk": "ukrainian", "el": "greek",
    "he": "hebrew", "th": "thai",
}  # fmt: skip
_SNOWBALL_LANGUAGES = frozenset(
    str.split(
        "arabic danish dutch english finnish french german hungarian italian norwegian portuguese romanian "
        "russian spanish swedish"
    )
)


class SumyTokenizer:
    """What sumy needs from a tokenizer (``to_sentences``, ``to_words``, ``language``), over tokenize.py."""

    def __init__(self, language: str = "english") -> None:
        self.language = language

    def to_sentences(self, paragraph: str) -> tuple[str, ...]:
        return tuple(split_sentences(paragraph))

    def to_words(self, sentence: str) -> tuple[str, ...]:
        return tuple(word_tokens(sentence))


def _language_name(language: str | None) -> str | None:
    if language is None:
        return None
    lowered = language.strip().lower()
    return _LANGUAGE_ALIASES.get(lowered, lowered)


def _stop_words(language: str) -> frozenset[str]:
    if not language.isalpha():  # it becomes part of a resource path
        return frozenset()
    try:
        data = pkgutil.get_data("sumy", f"data/stopwords/{language}.txt")
    except OSError:
        return frozenset()
    if data is None:
        return frozenset()
    return frozenset(w.strip().lower() for w in data.decode("utf-8").splitlines() if w.strip())


def _stemmer(language: str | None) -> Callable[[str], str]:
    snowball_language = "english" if language is None else language
    if snowball_language not in _SNOWBALL_LANGUAGES:
        return lambda word: word
    from nltk.stem.snowball import SnowballStemmer

    snowball = SnowballStemmer(snowball_language)

    @lru_cache(maxsize=65536)
    def stem(word: str) -> str:
        return word if contains_han(word) else snowball.stem(word)

    return stem


@lru_cache(maxsize=1)
def _text_rank_class() -> type:
    import numpy
    from sumy.summarizers.text_rank import TextRankSummarizer

    class _TextRank(TextRankSummarizer):  # type: ignore[misc]
        def _create_matrix(self, document: Any) -> Any:
            """Sumy's edge weight (shared words / (log|s1| + log|s2|)), no self-loops, dangling rows even."""
            words = [self._to_words_set(sentence) for sentence in document.sentences]
            counts = [Counter(w) for w in words]
            size = len(words)
            weights = numpy.zeros((size, size))
            for i in range(size):
                for j in range(i + 1, size):
                    shared = sum(counts[j][w] for w in words[i])
                    if shared:
                        norm = math.log(len(words[i])) + math.log(len(words[j]))
                        weights[i, j] = weights[j, i] = shared / norm if norm > 1e-9 else float(shared)
            row_sums = weights.sum(axis=1)
            dangling = row_sums == 0
            weights[dangling] = 1.0 / size
            weights[~dangling] /= row_sums[~dangling, numpy.newaxis]
            return numpy.full((size, size), (1.0 - self.damping) / size) + self.damping * weights

    return _TextRank


@lru_cache(maxsize=16)
def _summarizer(language: str | None) -> Any:
    """One TextRank summarizer per language; it keeps no per-call state, so threads may share it."""
    summarizer = _text_rank_class()(_stemmer(language))
    # Auto mode (language None) mixes English and Chinese stop words: neither list hits the other script.
    languages = ("english", "chinese") if language is None else (language,)
    summarizer.stop_words = frozenset().union(*(_stop_words(name) for name in languages))
    return summarizer


def _candidates(sentences: list[str]) -> list[str]:
    if len(sentences) <= MAX_SUMMARY_CANDIDATES:
        return sentences
    lead = MAX_SUMMARY_CANDIDATES // 2
    rest = sentences[lead:]
    sample_size = MAX_SUMMARY_CANDIDATES - lead
    step = len(rest) / sample_size
    return sentences[:lead] + [rest[int(i * step)] for i in range(sample_size)]


def summarize(text: str, *, sentences: int = 3, language: str | None = None) -> list[str]:
    """The ``sentences`` most central sentences of ``text`` (TextRank), in document order.

    Texts with no more than ``sentences`` (distinct) sentences come back whole; empty text gives ``[]``.
    ``language`` (e.g. ``"english"``, ``"de"``) picks sumy's stop words and the Snowball stemmer;
    None handles English, Chinese and mixed text.
    """
    if sentences <= 0:
        return []
    unique = list(dict.fromkeys(split_sentences(text)))  # repeated boilerplate would vote for itself
    if len(unique) <= sentences:
        return unique
    from sumy.models.dom import ObjectDocumentModel, Paragraph, Sentence

    language_name = _language_name(language)
    tokenizer = SumyTokenizer(language_name or "english")
    candidates = _candidates(unique)
    document = ObjectDocumentModel([Paragraph([Sentence(s, tokenizer) for s in candidates])])
    picked = _summarizer(language_name)(document, sentences)
    return [str(sentence) for sentence in picked]

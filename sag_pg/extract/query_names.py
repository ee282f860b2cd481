"""The spans of a question that may name a key, for looking keys up by name (sag.keys_named).

The question-side twin of the rule extractor's name rules: what the rules would make a key of, written in a
question, is found here as a run of words.
"""

from __future__ import annotations

import re

from sag_pg.extract.english_names import _FUNCTION_WORDS, _ROMAN_RE
from sag_pg.text.tokenize import contains_han, load_jieba_posseg

__all__ = ["query_names"]

_NAME_WORD_RE = re.compile(r"[^\W_]+(?:-[^\W_]+)*")  # "Kim Jong-chul" is two words, "Edler's" two
_NAME_FLAGS = frozenset({"nr", "nrfg", "nrt", "ns", "nt", "nz", "j"})


def query_names(text: str, *, max_words: int = 10) -> list[tuple[str, int, int]]:
    """Spans of a question that may name a key: ``(text, first word, last word)``, word positions counted
    over the question's letter/digit runs (a hyphenated run is one word).

    The keys an extractor makes are names as running text writes them, so a key named in a question is a
    run of its words: every run of up to ``max_words`` words that starts and ends with a capitalised word
    or a number ("Welcome to the Show", "Flute Sonata in C major, BWV 1033", "2007 FIFA U-20 World Cup";
    lower-case words only inside). A single word must be capitalised, two letters or more, and neither a
    function word ("Which") nor a Roman numeral ("III"); a bare number is not a name (years are values). Chinese: the words jieba tags as names
    (person, place, organization, other proper noun). Callers look the spans up as key names and keep the
    longest matches.
    """
    words = [m.group() for m in _NAME_WORD_RE.finditer(text)]
    spans: list[tuple[str, int, int]] = []
    for i, first in enumerate(words):
        if contains_han(first) or not (first[0].isupper() or first[0].isdigit()):
            continue
        for j in range(i, min(len(words), i + max_words)):
            last = words[j]
            if contains_han(last):
                break
            if not (last[0].isupper() or last[0].isdigit()):
                continue
            if i == j and (
                first.isdigit() or not first[0].isupper() or len(first) < 2 or first.lower() in _FUNCTION_WORDS
                or _ROMAN_RE.fullmatch(first)
            ):
                continue  # "Which", "C" (major), "III" alone name nothing
            if j > i and last.lower() in _FUNCTION_WORDS:
                continue  # "Nolan And": the run ends before a capitalised function word
            spans.append((" ".join(words[i : j + 1]), i, j))
    if contains_han(text):
        position = len(words)
        for pair in load_jieba_posseg().lcut(text):
            if pair.flag in _NAME_FLAGS and len(pair.word) >= 2 and contains_han(pair.word):
                spans.append((pair.word, position, position))
            position += 1
    return spans

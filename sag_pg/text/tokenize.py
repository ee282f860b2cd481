"""Multilingual tokenization: sentences for summaries and rules, word tokens for search and BM25.

Tokens are what PostgreSQL's ``to_tsvector('simple', ...)`` will see (via :func:`tokens_to_text`), so a
token is a run of letters, digits and combining marks only: no ``_``, ``-``, ``.``, ``+`` or anything else
the text-search parser would split on or drop (PostgreSQL 18.6, C.UTF-8: ``e-mail`` becomes three
lexemes, ``foo_bar`` two, ``x²`` loses the ``²``; letters of every script and inner marks stay). Checked
by feeding ``tokens_to_text(search_tokens(text))`` to ``ts_debug``: one lexeme per token, unchanged, for
all 2,884 bench passages; differences remain only for a few marks newer than the server's Unicode data.

Chinese (Han) runs are segmented with jieba, which is loaded lazily, once, quietly and under a lock;
text without Han characters never touches jieba, so English stays in the microsecond range.
"""

from __future__ import annotations

import logging
import re
import threading
import unicodedata
import warnings
from types import ModuleType
from typing import Any

__all__ = [
    "MAX_TOKEN_CHARS",
    "contains_han",
    "load_jieba",
    "load_jieba_posseg",
    "search_tokens",
    "sentence_spans",
    "split_sentences",
    "tokens_to_text",
    "word_tokens",
]

# Longer "words" are hashes, base64 or binary junk; PostgreSQL would also refuse words over 2047 bytes.
MAX_TOKEN_CHARS = 100

# Han ideographs (+ 〇 and 々, which jieba and readers treat as part of Han words).
_HAN = "\u3005\u3007\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
_HAN_RE = re.compile(f"[{_HAN}]")
_HAN_OR_OTHER_RE = re.compile(f"([{_HAN}]+)|([^{_HAN}]+)")
_ASCII_WORD_RE = re.compile(r"[a-z0-9]+")
_WORD_RE = re.compile(r"[^\W_]+")


def contains_han(text: str) -> bool:
    """True if ``text`` has at least one Chinese (Han) character."""
    return not text.isascii() and _HAN_RE.search(text) is not None


# --------------------------------------------------------------------------------------------- jieba

_jieba_lock = threading.Lock()
_jieba: ModuleType | None = None
_jieba_posseg: Any = None


def load_jieba() -> ModuleType:
    """The ``jieba`` module, dictionary loaded; first call takes ~0.5 s, later calls are free."""
    global _jieba
    if _jieba is None:
        with _jieba_lock:
            if _jieba is None:
                with warnings.catch_warnings():
                    # jieba 0.42 imports pkg_resources, which warns on new setuptools; not our business.
                    warnings.simplefilter("ignore")
                    import jieba
                jieba.setLogLevel(logging.WARNING)
                jieba.initialize()
                _jieba = jieba
    return _jieba


def load_jieba_posseg() -> Any:
    """jieba's part-of-speech tagger (``.lcut(text)`` → pairs of word and flag) on the default dictionary,
    its HMM decoded with numpy (:mod:`sag_pg.text.posseg`: jieba's results, several times faster)."""
    global _jieba_posseg
    if _jieba_posseg is None:
        load_jieba()
        with _jieba_lock:
            if _jieba_posseg is None:
                import jieba.posseg

                from .posseg import fast_posseg

                _jieba_posseg = fast_posseg(jieba.posseg)
    return _jieba_posseg


# -------------------------------------------------------------------------------------------- tokens


_MARKS = frozenset(("Mn", "Mc", "Me"))


def _words(text: str) -> list[str]:
    """Runs of letters and digits, with combining marks kept inside a word (NFKC-normalised input).

    Python's ``\\w`` lacks marks (it would cut हिन्दी into ह, न, द) but has "other numbers" such as
    ৴ or ꠰, which PostgreSQL's parser drops; PostgreSQL also drops a mark after a space ("Rogers´s" is
    "Rogers ́s" under NFKC), so a word may not start with one. Such characters are rare, so the fast
    regex is used unless the text's own alphabet contains one.
    """
    special = {ch: unicodedata.category(ch) for ch in set(text) if not ch.isascii()}
    special = {ch: category for ch, category in special.items() if category in _MARKS or category == "No"}
    if not special:
        return _WORD_RE.findall(text)
    words: list[str] = []
    current: list[str] = []
    for ch in text:
        category = special.get(ch)
        if (category is None and ch.isalnum()) or (category in _MARKS and current):  # a mark only inside
            current.append(ch)
        elif current:
            words.append("".join(current))
            current = []
    if current:
        words.append("".join(current))
    return words


def _tokens(text: str, *, for_search: bool) -> list[str]:
    if not text:
        return []
    if text.isascii():
        return [t for t in _ASCII_WORD_RE.findall(text.lower()) if len(t) <= MAX_TOKEN_CHARS]
    # NFKC first: full-width letters, ligatures and superscripts become plain letters and digits.
    text = unicodedata.normalize("NFKC", text).lower()
    tokens: list[str] = []
    for run in _words(text):
        if _HAN_RE.search(run) is None:
            if len(run) <= MAX_TOKEN_CHARS:
                tokens.append(run)
            continue
        # Only the Han part goes to jieba: jieba splits "café" into "caf" + "é" and would be slower.
        for han, other in _HAN_OR_OTHER_RE.findall(run):
            if other:
                if len(other) <= MAX_TOKEN_CHARS:
                    tokens.append(other)
                continue
            jieba = load_jieba()
            words = jieba.lcut_for_search(han) if for_search else jieba.lcut(han)
            tokens.extend(w for w in words if w and not w.isspace())
    return tokens


def search_tokens(text: str) -> list[str]:
    """Lower-cased tokens for full-text search and BM25.

    Chinese uses ``jieba.lcut_for_search``: besides each word it emits the dictionary words inside it
    (中国科学院 → 中国, 科学, 学院, 科学院, 中国科学院), so a query segmented as "官渡" still meets a document
    segmented as "官渡之战"; exact-word ``lcut`` would miss every such pair.
    """
    return _tokens(text, for_search=True)


def word_tokens(text: str) -> list[str]:
    """Lower-cased words (no sub-word expansion): for sentence similarity in summaries and rules."""
    return _tokens(text, for_search=False)


def tokens_to_text(tokens: list[str]) -> str:
    """Space-joined tokens, ready for ``to_tsvector('simple', ...)``; each token stays one lexeme."""
    return " ".join(t for t in tokens if t)


# ----------------------------------------------------------------------------------------- sentences

# Words before "." that never end a sentence (titles, "e.g.", "vs.") ...
_TITLE_ABBREVIATIONS = frozenset(
    str.split(
        """mr mrs ms mx dr prof sr st mt ft gen col lt sgt capt cmdr adm gov sen rep rev hon pres fr messrs
        mme mlle vs v cf viz approx ca dept univ assn bros ave blvd rd est"""
    )
)
# ... and words before "." that do not end one when a number follows ("No. 5", "Fig. 3", "Jan. 1").
_NUMBER_ABBREVIATIONS = frozenset(
    str.split(
        """no nos fig figs vol vols pp p ch chap sec art eq ed eds op jan feb mar apr jun jul aug sep sept
        oct nov dec"""
    )
)
# A sentence end: CJK terminators always; ASCII ones only if followed by space/end (checked below).
_TERMINATOR_RE = re.compile(r"(?:[。！？；]+|…+|[.!?]+)[”’\"'」』）)\]]*")
_INITIAL_OR_ACRONYM_RE = re.compile(r"(?:[A-Za-z]\.)*[A-Za-z]")
_LIST_NUMBER_RE = re.compile(r"\(?(?:\d{1,3}|[ivxIVX]{1,4})\)?")
_BLOCK_START_RE = re.compile(r"\s*(?:[-*+>|#]\s|\d{1,3}[.)]\s|\|)")
_WHITESPACE_RE = re.compile(r"\s+")
_NEXT_NON_SPACE_RE = re.compile(r"\s*(\S)")
_WORD_CHAR_RE = re.compile(r"[^\W_]")
_SOFT_WRAP_MIN_CHARS = 40


def _is_cjk_char(ch: str) -> bool:
    # Han, kana, hangul and CJK punctuation: text in these scripts does not wrap lines mid-sentence.
    return "\u2e80" <= ch <= "\u9fff" or "\uac00" <= ch <= "\ud7af" or "\uf900" <= ch <= "\uffef"


def _line_break_ends_sentence(line: str, next_line: str) -> bool:
    """Whether the newline between two non-blank lines is a sentence break or a soft wrap."""
    stripped, next_stripped = line.rstrip(), next_line.lstrip()
    if _is_cjk_char(stripped[-1]) or _is_cjk_char(next_stripped[0]):
        return True
    if _BLOCK_START_RE.match(next_line):
        return True
    # Hard-wrapped prose: long lines that run on; a short line ("Name: John") stands alone.
    return len(stripped) < _SOFT_WRAP_MIN_CHARS and not next_stripped[0].islower()


def _blocks(text: str) -> list[tuple[int, int]]:
    """Spans of runs of lines that may hold one sentence across line breaks."""
    blocks: list[tuple[int, int]] = []
    offset = 0
    block_start = -1
    previous_line = ""
    for line in text.split("\n"):
        line_end = offset + len(line)
        if not line.strip():
            if block_start >= 0:
                blocks.append((block_start, offset - 1))
                block_start = -1
        elif block_start < 0:
            block_start = offset
        elif _line_break_ends_sentence(previous_line, line):
            blocks.append((block_start, offset - 1))
            block_start = offset
        previous_line = line
        offset = line_end + 1
    if block_start >= 0:
        blocks.append((block_start, len(text)))
    return blocks


def _is_sentence_end(text: str, match: re.Match[str], sentence_start: int, block_end: int) -> bool:
    terminator = match.group()
    end = match.end()
    if any(c in "。！？；" for c in terminator):
        return True
    if end >= block_end:
        return True
    following = text[end]
    if _is_cjk_char(following):
        return True
    if not following.isspace():
        return False  # 3.14, e.g., U.S.A, www.x.com, Yahoo!Inc
    next_word = _NEXT_NON_SPACE_RE.match(text, end, block_end)
    if next_word is None:
        return True
    following = next_word.group(1)
    if following.islower() or following in ",;:":
        return False  # "approx. five", "Apple Inc. announced"
    if terminator.startswith(".") and not terminator.startswith(".."):
        # A bounded look-back keeps pathological inputs ("Dr. Dr. Dr. ...") linear.
        words_before = text[max(sentence_start, match.start() - 32) : match.start()].split()
        word = words_before[-1].lstrip("(\"'“‘") if words_before else ""
        if _INITIAL_OR_ACRONYM_RE.fullmatch(word):
            return False  # J. R. R. Tolkien, U.S. Army, e.g. Paris
        lowered = word.lower()
        if lowered in _TITLE_ABBREVIATIONS:
            return False
        if lowered in _NUMBER_ABBREVIATIONS and following.isdigit():
            return False
        if match.start() - sentence_start <= 16 and _LIST_NUMBER_RE.fullmatch(
            text[sentence_start : match.start()].strip()
        ):
            return False  # "1. Introduction" is a list item, not a sentence "1."
    return True


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` offsets of the sentences of ``text``, whitespace trimmed, in order.

    Sentences end at 。！？； (always), at . ! ? followed by whitespace and a non-lowercase word
    (minus abbreviations, initials, dotted acronyms and list numbers), at blank lines, and at line
    breaks next to CJK text, before list items/quotes/tables, or after short lines. Long lines of prose
    that run on are treated as one hard-wrapped paragraph. Pieces without any letter or digit
    ("……", "---") are attached to the previous sentence.
    """
    spans: list[tuple[int, int]] = []
    for block_start, block_end in _blocks(text):
        start = block_start
        for match in _TERMINATOR_RE.finditer(text, block_start, block_end):
            if _is_sentence_end(text, match, start, block_end):
                _append_span(text, spans, start, match.end())
                start = match.end()
        _append_span(text, spans, start, block_end)
    # Only possible when the whole text has no letter or digit ("……", control characters).
    return [span for span in spans if _WORD_CHAR_RE.search(text, span[0], span[1])]


def _append_span(text: str, spans: list[tuple[int, int]], start: int, end: int) -> None:
    piece = text[start:end]
    stripped = piece.strip()
    if not stripped:
        return
    start += len(piece) - len(piece.lstrip())
    end = start + len(stripped)
    if spans and _WORD_CHAR_RE.search(stripped) is None:
        spans[-1] = (spans[-1][0], end)
    elif spans and _WORD_CHAR_RE.search(text[spans[-1][0] : spans[-1][1]]) is None:
        spans[-1] = (spans[-1][0], end)  # a leading "……" joins the sentence after it
    else:
        spans.append((start, end))


def split_sentences(text: str) -> list[str]:
    """Sentences of English, Chinese or mixed text (see :func:`sentence_spans`), whitespace collapsed."""
    return [_WHITESPACE_RE.sub(" ", text[start:end]) for start, end in sentence_spans(text)]

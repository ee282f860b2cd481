"""The offline rule extractor: events and keys without an LLM, deterministic and fast.

Events are the sentences of the chunk's prose (Markdown markup and code removed; a long English sentence
is split at ";"; a tiny fragment joins its neighbour; the title is the sentence's head, prefixed with the
subject when the sentence starts with a pronoun; ``time`` is set from an explicit full date only).
Keys are what cheap rules can find reliably:

* English: capitalised phrases ("Carl Rogers", "University of Copenhagen", "J. R. R. Tolkien"), typed as
  organization (suffix/head words like University, Inc, Party), location (gazetteer, "in X", "city of
  X", "X, Illinois", place prefixes like New/San/Fort), person (2–4 title-case words, or a word after an
  honorific such as Dr./President; a lone surname maps to a full name already seen) or topic; years →
  ``time`` keys with float values; "quoted titles" → topic. Lower-case words are never keys, nor are
  other numbers (amounts, measures): without the noun they count they would only be noise.
* Chinese (jieba.posseg): nr → person, ns → location, nt → organization, nz/j/n → topic, v/vn → action,
  t and N年 → time (numeric when the year is parseable).
* Both: the document title and the chunk title are topic keys of every event of the chunk: the "subject"
  that links facts from the same page even when a sentence only says "he".  A Chinese title that is one
  name as a whole (北溟大学, 林晚秋, 临川) is a key of that name's type, as the name is in a sentence.

Keys are deduplicated by normalized name (one type per name within an event, the first found wins) and
capped per event, most specific first: subject, named entities, times, quoted titles, phrases, words,
common nouns, actions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from sag_pg.extract.chinese_lexicon import JIEBA_NOT_PLACES
from sag_pg.extract.chinese_names import chinese_names, is_generic
from sag_pg.extract.english_names import _FUNCTION_WORDS, _GAZETTEER, _TOKEN_RE, _analyse, _words
from sag_pg.text.chunking import markdown_to_prose
from sag_pg.text.normalize import find_date, find_years, normalize_key, parse_year
from sag_pg.text.tokenize import contains_han, load_jieba, load_jieba_posseg, split_sentences
from sag_pg.types import Chunk, EventDraft, KeyDraft

__all__ = ["RuleExtractor"]


# ---------------------------------------------------------------------------------------- lexicons
_ARTICLES = _words("the a an")
_PRONOUN_STARTS = _words("he she it they his her its their this these those we")
_CHINESE_PRONOUN_STARTS = ("他", "她", "它", "其", "此", "该")
# Key priorities when an event has more keys than the cap: most specific first.
_SUBJECT, _NAMED, _TIME, _QUOTED, _PHRASE, _WORD, _COMMON_NOUN, _ACTION = range(8)
_CHINESE_TAG_TYPES = {
    "nr": ("person", _NAMED), "nrfg": ("person", _NAMED), "nrt": ("person", _NAMED),
    "ns": ("location", _NAMED), "nt": ("organization", _NAMED), "nz": ("topic", _PHRASE),
    "j": ("topic", _PHRASE), "n": ("topic", _COMMON_NOUN), "vn": ("action", _ACTION),
}  # fmt: skip
# Plain verbs (jieba's v: 展开, 举办, 推出) are not keys, as English verbs are not: a key is something events
# share that says what they are about, and every news story "holds" or "launches" something.  They were a
# quarter of rgb-zh's key links; without them its sag R@2/5 went 85.7/96.0 -> 86.7/96.7 (hash, fresh
# ingest).  Verbal nouns (vn: 比赛, 改革) name an event and stay actions.
_CHINESE_STOP_WORDS = _words(
    """进行 成为 没有 可以 开始 使用 认为 表示 需要 具有 通过 出现 发生 包括 作为 属于 得到 觉得 知道
    希望 应该 能够 可能 不能 已经 还是 就是 只是 时候 问题 情况 方面 东西 事情 地方 时间 人们 部分 方式"""
)
_CHINESE_RELATIVE_TIMES = _words(
    """去年 今年 明年 当年 近年 多年 每年 前年 后年 往年 早年 晚年 同年 次年 翌年 当时 今天 昨天 明天 现在
    以前 以后 目前 昨日 今日 明日 近日 日前 此前 此后 当日 次日 当代 当今 如今 现今 近期 最近 今后 将来"""
)
_LOCATIVE_PREPOSITIONS = frozenset("在于到至往赴抵从自")
_CHINESE_PLACE_SUFFIXES = tuple("城州郡县省市镇村关")
# Chinese heads right after a Latin name ("Silk Road Archive项目", "Rotterdam港"): they say what it names.
_CHINESE_PROJECT_HEADS = frozenset(("项目", "工程"))  # not 计划: "Aramco计划在…" is the verb "plans"
_CHINESE_PLACE_HEADS = frozenset("港市省州岛")

# ------------------------------------------------------------------------------------------ patterns
_QUOTED_RE = re.compile(r"“([^”\n]{2,60})”|\"([^\"\n]{2,60})\"|《([^》\n]{1,40})》|「([^」\n]{1,40})」")
_SENTENCE_ENDS = tuple(".!?。！？…")
_CLAUSE_SPLIT_RE = re.compile(r"(?<=;)\s+")
_PARENTHETICAL_RE = re.compile(r"\s*\([^)]*\)\s*$")
_TIME_WORD_RE = re.compile(r"[\d年月日世纪朝代]")
_ERA_YEAR_RE = re.compile(r"[元一二三四五六七八九十]+年")
_ATTRIBUTE_ENDS = tuple("性型式")
# Generations, not times, though tagged as times: 三代 (渔民), 新一代, 第三代, 世代.
_GENERATION_RE = re.compile(r"(?:[第新]?[一二两三四五六七八九十百千几数]+|世)代")
_TWO_HAN_RE = re.compile(r"[\u4e00-\u9fff]{2}")
_MONTH_DAY_RE = re.compile(r"(?<![年\d])\d{1,2}月\d{1,2}[日号]")  # 3月12日 (a year before it is find_years')


@lru_cache(maxsize=256)
def _evidence(text: str) -> tuple[frozenset[str], tuple[str, ...]]:
    """Capitalised words and person names of a summary or title (cached: shared by a document's events)."""
    _, capitalized, persons = _analyse(text)
    return capitalized, persons


@lru_cache(maxsize=256)
def _subject(title: str) -> tuple[str, str]:
    """The subject key of a title, and its disambiguator: "The Prestige (film)" -> ("Prestige", "film").

    The name is written as running text would write it, so that a page's subject and the mentions of it on
    other pages are one key: the parenthesised disambiguator of a Wikipedia-style title goes, so does a
    place after a comma ("Rochester, New York" -> "Rochester", "New York": the phrase rules split there
    too), and so do the leading words that the phrase rules strip from a mention ("The", "A"; not when
    nothing else is left).
    """
    qualifiers: list[str] = []
    match = _PARENTHETICAL_RE.search(title)
    name = title
    if match is not None and match.start() > 0:
        name, qualifiers = title[: match.start()].strip(), [match.group().strip()[1:-1].strip()]
    head, comma, tail = name.partition(", ")
    if comma and head and tail.rsplit(", ", 1)[-1].lower() in _GAZETTEER:
        name, qualifiers = head, [tail, *qualifiers]  # "Rochester, New York": text writes "Rochester"
    words = name.split()
    # Only an article goes ("The Prestige"): "Later life" is a heading, not the key "life".
    while len(words) > 1 and words[0].lower() in _ARTICLES and words[1].lower() not in _FUNCTION_WORDS:
        words.pop(0)
    return " ".join(words), ", ".join(qualifiers)


@lru_cache(maxsize=256)
def _subject_variants(title: str) -> frozenset[str]:
    bare = _PARENTHETICAL_RE.sub("", title).strip()
    variants = {title, bare}
    for variant in (title, bare):
        if variant.lower().startswith("the "):
            variants.add(variant[4:])
    return frozenset(normalize_key(v) for v in variants if v)


@lru_cache(maxsize=4096)
def _subject_type(name: str) -> str:
    """The type of a title's subject key: a Chinese title that is one name as a whole is a key of that name's
    type (北溟大学 organization, 林晚秋 person, 临川 location), the type the same name gets in a sentence.
    As a topic, the page about a university and the sentences naming it were two keys (one per type), and a
    question could not name it (sag.named_keys takes a Han span for a name by its key's type).  Any other
    title (候鸟南飞, 三国志, 青岚计划) and every title without Han characters stays a topic: capitals name
    things in other scripts, and an English page's type is no business of its title."""
    if not contains_han(name):
        return "topic"
    pairs = _tagged(name)
    spans = chinese_names(name, pairs, load_jieba().dt.FREQ)
    if len(spans) == 1 and (spans[0].start, spans[0].end) == (0, len(name)) and spans[0].name == name:
        return spans[0].type
    return "topic"


@lru_cache(maxsize=256)
def _title_evidence(doc_title: str, chunk_title: str) -> tuple[frozenset[str], tuple[str, ...]]:
    """In titles every capitalised word counts as evidence ("Rogers" of "Carl Rogers")."""
    words, persons = _evidence(f"{doc_title}\n{chunk_title}")
    return words | {w for w in _TOKEN_RE.findall(f"{doc_title} {chunk_title}") if w[0].isupper()}, persons


# --------------------------------------------------------------------------------------- extraction
@dataclass
class _Candidates:
    """Keys with their priority, in order of discovery, deduplicated by normalized name."""

    items: list[tuple[int, KeyDraft]]
    seen: set[str]  # normalized names: one key (one type) per name, the first found wins

    def add(self, priority: int, key_type: str, name: str, value: str | float | None = None) -> None:
        name = name.strip()
        normalized = normalize_key(name)
        if not normalized or normalized in self.seen:
            return
        self.seen.add(normalized)
        self.items.append((priority, KeyDraft(key_type, name, name if value is None else value)))


def _english_keys(
    text: str,
    candidates: _Candidates,
    evidence: frozenset[str],
    persons: tuple[str, ...],
    quoted_spans: list[tuple[int, int]],
) -> None:
    found, own_evidence, own_persons = _analyse(text)
    evidence = evidence | own_evidence
    known_persons = own_persons + persons
    for phrase, name, key_type, uncleaned in found:
        start = phrase.tokens[0][1]
        if any(begin < start < end for begin, end in quoted_spans):
            continue  # inside a quoted title, which is already the key
        if normalize_key(uncleaned) in candidates.seen:
            continue  # "Need Is Love" is what is left of the subject "All You Need Is Love"
        single = len(phrase.tokens) == 1
        word = phrase.words[0]
        after = text[phrase.tokens[-1][2] : phrase.tokens[-1][2] + 2]
        if single and len(word) == 1 and contains_han(text[max(0, start - 1) : phrase.tokens[0][2] + 1]):
            continue  # the B of B站, the A of A股: a letter that is part of a Chinese word
        next_to_han = contains_han(text[max(0, start - 1) : start]) or contains_han(after[:1])
        initial_only = (
            single and phrase.sentence_initial and word.isalpha() and not word.isupper() and not next_to_han
        )  # "Born", "Critics"; but in Chinese text a capital is a name's: Tesla上海, Kronborg号
        if initial_only and word not in evidence:
            continue  # "Born", "Critics": capitalised only because a sentence starts there
        if key_type in ("topic", "person") and single:
            full = next((p for p in known_persons if name in (p.split()[-1], p.split()[0])), None)
            if full is not None:
                key_type, name = "person", full  # "Rogers" after "Carl Rogers"
        if after[:1] == "号":
            key_type, name = "topic", name + "号"  # Sea Falcon号: a ship, as 长风号 is
        elif after in _CHINESE_PROJECT_HEADS:
            candidates.add(_PHRASE, "topic", name + after)  # Gemini项目: the project, and Gemini below
        elif after[:1] in _CHINESE_PLACE_HEADS and key_type in ("topic", "person"):
            key_type = "location"  # Rotterdam港
        elif key_type == "topic" and next_to_han and all(w.isalpha() and not w.isupper() for w in phrase.words):
            # A capitalised Latin name in Chinese prose (Tesla, Reuters, Google DeepMind): Chinese writes places
            # and people in Han, and leaves companies, brands and media in Latin.  Not acronyms: GDP, CPI, IPO.
            key_type = "organization"
        priority = _NAMED if key_type != "topic" else (_WORD if single else _PHRASE)
        candidates.add(priority, key_type, name)


def _quoted_keys(text: str, candidates: _Candidates) -> list[tuple[int, int]]:
    """Quoted titles ("Hello Love", 《三国演义》) as topics; returns their spans. Quoted speech is skipped."""
    spans: list[tuple[int, int]] = []
    for match in _QUOTED_RE.finditer(text):
        quoted = next(g for g in match.groups() if g is not None).strip()
        is_title = (
            quoted[:1].isupper() or quoted[:1].isdigit() or contains_han(quoted[:1])
        ) and ";" not in quoted
        if is_title and quoted[-1] not in ".,!?;:。，！？；" and len(quoted.split()) <= 8:
            candidates.add(_QUOTED, "topic", quoted)
            spans.append(match.span())
    return spans


# A noun jieba counts this often is a common word: after 在 it is no place name (国家 79,520, 市场 26,927; the
# places the rule is for are rarer: 赤壁 945, 街亭 45).  As a location it had been a "named" key, and one such
# sentence made the key of every event naming it a location (keys of several types take the first).
_COMMON_NOUN_FREQ = 1000


def _tagged(text: str) -> list[tuple[str, str]]:
    """jieba's (word, flag) pairs, its place tag taken off the common words its dictionary calls places."""
    return [(p.word, JIEBA_NOT_PLACES.get(p.word, p.flag) if p.flag == "ns" else p.flag)
            for p in load_jieba_posseg().lcut(text)]


def _chinese_keys(text: str, candidates: _Candidates, quoted_spans: list[tuple[int, int]]) -> None:
    for match in _MONTH_DAY_RE.finditer(text):  # last in rank: a date without its year must not push a name
        candidates.add(_ACTION, "time", match.group())  # or a topic out of the event's capped keys
    pairs = _tagged(text)
    freq = load_jieba().dt.FREQ
    starts: list[int] = []
    offset = 0
    for word, _ in pairs:
        starts.append(offset)
        offset += len(word)
    spans = chinese_names(text, pairs, freq)
    taken = [False] * len(text)
    for begin, end in quoted_spans:  # 《候鸟南飞》 is the key, not 候鸟 nor the person 南飞
        for i in range(begin, end):
            taken[i] = True
    spans = [span for span in spans if not any(taken[span.start : span.end])]
    for span in spans:
        for i in range(span.start, span.end):
            taken[i] = True
    index_at = {start: index for index, start in enumerate(starts)}
    for span in spans:
        key_type, name = span.type, span.name
        if name in _CHINESE_STOP_WORDS:
            continue  # 东西 ("thing"), tagged as a place
        index = index_at.get(span.start)
        following = next((i for i, s in enumerate(starts) if s >= span.end), None)
        following_flag = pairs[following][1] if following is not None else "x"
        after_locative = (
            span.start > 0
            and text[span.start - 1] in _LOCATIVE_PREPOSITIONS
            and (index is None or index == 0 or len(pairs[index - 1][0]) == 1)
        )
        if key_type == "person" and (
            name.endswith(_CHINESE_PLACE_SUFFIXES)
            or (after_locative and (following_flag.startswith("v") or following_flag == "x"))
        ):
            key_type = "location"  # 在官渡展开, 病逝于白帝城: jieba says name, grammar says place
        candidates.add(_PHRASE if key_type == "topic" else _NAMED, key_type, name)
    for index, (word, flag) in enumerate(pairs):
        start = starts[index]
        if flag == "t":
            if word in _CHINESE_RELATIVE_TIMES or not _TIME_WORD_RE.search(word) or _GENERATION_RE.fullmatch(word):
                continue
            previous = pairs[index - 1][0] if index else ""
            if _ERA_YEAR_RE.fullmatch(word) and _TWO_HAN_RE.fullmatch(previous):
                word = previous + word  # era year: 建安五年
            year = parse_year(word)
            candidates.add(_TIME, "time", word, float(year) if year is not None else None)
            continue
        mapped = _CHINESE_TAG_TYPES.get(flag)
        if mapped is None or len(word) < 2 or word in _CHINESE_STOP_WORDS or not contains_han(word):
            continue
        if mapped[0] in ("person", "location", "organization") or any(taken[start : start + len(word)]):
            continue  # names are the spans above; a word inside one (大学 of 北溟大学) is not a key
        following_word, following_flag = pairs[index + 1] if index + 1 < len(pairs) else ("", "x")
        if following_flag == "t" and _ERA_YEAR_RE.fullmatch(following_word):
            continue  # 建安 of 建安五年: the era year is the key
        key_type, priority = mapped
        if is_generic(word):
            continue  # 总部, 工程师, 所长, the action 工作: roles and parts of anything, edges to everything
        if len(word) == 3 and word.endswith(_ATTRIBUTE_ENDS):
            continue  # 综合性, 研究型, 开放式 (大学): an attribute, not a subject
        after_locative = index > 0 and pairs[index - 1][0] in _LOCATIVE_PREPOSITIONS
        if key_type == "topic" and after_locative and following_flag == "v" and freq.get(word, 0) < _COMMON_NOUN_FREQ:
            key_type, priority = "location", _NAMED  # 在赤壁迎战; not 在国家速滑馆, 在市场上涨
        candidates.add(priority, key_type, word)


def _is_fragment(sentence: str) -> bool:
    if contains_han(sentence):
        return sum(1 for ch in sentence if "\u4e00" <= ch <= "\u9fff") < 6
    return len(sentence) < 12 or len(_TOKEN_RE.findall(sentence)) < 3


def _join(left: str, right: str) -> str:
    return left + right if contains_han(left[-1:]) or contains_han(right[:1]) else f"{left} {right}"


class RuleExtractor:
    """Deterministic events and keys from text, for offline use and as the LLM extractor's fallback."""

    def __init__(
        self, *, max_keys_per_event: int = 12, long_sentence_chars: int = 200, title_chars: int = 60
    ):
        self.max_keys_per_event = max_keys_per_event
        self.long_sentence_chars = long_sentence_chars
        self.title_chars = title_chars

    def events(self, chunk: Chunk, *, summary: str = "", doc_title: str = "") -> list[EventDraft]:
        """One event per sentence of the chunk (code blocks skipped; a chunk with no prose is one event)."""
        pieces: list[str] = []
        for sentence in split_sentences(markdown_to_prose(chunk.content)):
            if len(sentence) > self.long_sentence_chars and ";" in sentence:
                pieces.extend(p for p in _CLAUSE_SPLIT_RE.split(sentence) if p.strip())
            else:
                pieces.append(sentence)
        merged: list[str] = []
        carry = ""  # a fragment waiting for the next piece: "Yes.", a table header, "Notes:"
        for index, piece in enumerate(pieces):
            piece = _join(carry, piece) if carry else piece
            carry = ""
            last = index == len(pieces) - 1
            if not _is_fragment(piece):
                merged.append(piece)
            elif merged and (last or piece.endswith(_SENTENCE_ENDS)):
                merged[-1] = _join(merged[-1], piece)  # "He died." after a sentence goes with it
            elif not last:
                carry = piece
            else:
                merged.append(piece)
        if not merged and chunk.content.strip():  # only code or symbols: keep the chunk reachable anyway
            printable = "".join(ch for ch in chunk.content if ch.isprintable() or ch.isspace())
            merged = [" ".join(printable.split())[:2000]] if printable.strip() else []
        subject = doc_title.strip() or chunk.title.rsplit(" > ", 1)[-1].strip()
        return [EventDraft(self._title(text, subject), text, find_date(text)) for text in merged]

    def _title(self, sentence: str, subject: str) -> str:
        head = sentence.rstrip("。！？；.!?;… ")
        limit = self.title_chars // 2 if contains_han(head) else self.title_chars
        if len(head) > limit:
            cut = head[:limit]
            space = cut.rfind(" ")
            head = (cut[:space] if space > limit // 2 else cut).rstrip(" ,;:，、") + "…"
        first_word = head.split(" ", 1)[0].lower()
        if subject and (first_word in _PRONOUN_STARTS or head.startswith(_CHINESE_PRONOUN_STARTS)):
            return f"{subject}: {head}"  # "He moved to Chicago" says nothing without its subject
        return head

    def keys(
        self, event: EventDraft, *, summary: str = "", doc_title: str = "", chunk_title: str = ""
    ) -> list[KeyDraft]:
        """Keys of one event, subject (document/chunk title) first, at most ``max_keys_per_event``."""
        candidates = _Candidates([], set())
        # A chunk title is a heading path ("三国 > 官渡之战"); its last heading is the chunk's own subject.
        qualifiers: list[str] = []
        for title in (doc_title, chunk_title.rsplit(" > ", 1)[-1]):
            if title.strip():
                name, qualifier = _subject(title.strip())
                candidates.add(_SUBJECT, _subject_type(name), name)
                candidates.seen.update(_subject_variants(title))  # "The Prestige (film)" covers "Prestige"
                if qualifier:
                    qualifiers.append(qualifier)
        text = event.content
        title_words, title_persons = _title_evidence(doc_title, chunk_title)
        for qualifier in qualifiers:  # "Alexandria International Airport (Louisiana)": Louisiana is a key
            _english_keys(qualifier, candidates, title_words, title_persons, [])
        summary_words, summary_persons = _evidence(summary) if summary else (frozenset(), ())
        quoted_spans = _quoted_keys(text, candidates)
        _english_keys(
            text, candidates, title_words | summary_words, title_persons + summary_persons, quoted_spans
        )
        for surface, year in find_years(text):
            candidates.add(_TIME, "time", surface, year)
        if contains_han(text):
            _chinese_keys(text, candidates, quoted_spans)
        ranked = sorted(candidates.items, key=lambda item: item[0])  # stable: discovery order within a rank
        return [key for _, key in ranked[: self.max_keys_per_event]]

    def extract(self, chunk: Chunk, *, summary: str = "", doc_title: str = "") -> list[EventDraft]:
        """Events with their keys filled in: ``events`` then ``keys`` for each."""
        events = self.events(chunk, summary=summary, doc_title=doc_title)
        for event in events:
            event.keys = self.keys(event, summary=summary, doc_title=doc_title, chunk_title=chunk.title)
        return events

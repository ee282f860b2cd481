"""Chinese names in running text, without a model: jieba's tags, corrected by suffixes and grammar.

jieba.posseg alone gets Chinese names wrong in ways that break keys (measured on tests/data/key_gold.jsonl,
see docs/extraction.md): a preposition glued to a name ("毕业于北溟大学" -> ``于北溟``), an organization cut
from its head noun (``红杉`` + ``公司``), a given name cut from its surname (``陆`` + ``行舟``).  This module
finds the spans first and lets the tags fill in what the spans do not cover:

* organizations, places and projects by their head noun: a suffix (…大学, …研究所, …博物馆, …公司, …集团,
  …银行, …医院, …省/市/县/村/路, …计划/项目) and the name before it, scanned back to a function character
  (于 在 与 和 向 从 对 被 由 的 了 …), a clause verb or punctuation.  The suffix alone (大学) is not a key;
* ships: the name after 船/轮/舰/艇 up to 号;
* persons: a surname (single or compound) joined to the given name jieba split off, or a word jieba's
  dictionary does not know that starts with a surname (``顾听澜``), besides jieba's own ``nr``.

Only the lexicon of jieba's default dictionary is read (word frequencies); nothing is added to it, so the
tokens BM25 sees (:mod:`sag_pg.text.tokenize`) do not change.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sag_pg.extract.chinese_lexicon import (
    _BAD_CONTINUATIONS,
    _COMMON_SURNAMES,
    _COMMON_VERB_FREQ,
    _COMPOUND_SURNAMES,
    _GENERIC_PREFIX_FREQ,
    _GIVEN_NAME_MAX_FREQ,
    _GOVERNMENT_ENDS,
    _HAN_RE,
    _LOCATION_SUFFIXES,
    _NOT_IN_PERSON_NAMES,
    _OBJECT_VERBS,
    _ONE_CHARACTER_VERB_FREQ,
    _ORGANIZATION_CHARS,
    _ORGANIZATION_SUFFIXES,
    _PLACE_CHARS,
    _PLACE_HEAD_WORD_FREQ,
    _PLACE_PREFIX_MAX_FREQ,
    _PLACE_SIDE_RE,
    _PLACE_VERBS,
    _PREPOSITION_CHARS,
    _PROJECT_SUFFIXES,
    _RARE_SURNAMES,
    _ROLE_WORDS,
    _SHIP_CUES,
    _STOP_CHARS,
    _TENURE_VERBS,
    _TOWARDS_CHARS,
    GENERIC_WORDS,
    is_generic,
    is_role,
)

__all__ = ["GENERIC_WORDS", "NameSpan", "chinese_names", "is_generic"]


@dataclass(frozen=True)
class NameSpan:
    start: int
    end: int
    type: str  # person, organization, location, topic
    name: str


@dataclass
class _Token:
    word: str
    flag: str
    start: int

    @property
    def end(self) -> int:
        return self.start + len(self.word)


def _is_han(ch: str) -> bool:
    return bool(_HAN_RE.match(ch))


def _suffix_re() -> re.Pattern[str]:
    words = sorted([*_ORGANIZATION_SUFFIXES, *_LOCATION_SUFFIXES, *_PROJECT_SUFFIXES], key=len, reverse=True)
    return re.compile("|".join(map(re.escape, words)) + f"|[{_PLACE_CHARS}{_ORGANIZATION_CHARS}]")


_SUFFIX_RE = _suffix_re()
_SHIP_RE = re.compile(
    f"(?<=[{_SHIP_CUES}])([\u4e00-\u9fff]{{2,4}}?号)"  # 科考船雪鸮号
    f"|(?<![\u4e00-\u9fff])([\u4e00-\u9fff]{{2,4}}?号)(?=[\u4e00-\u9fff]{{0,2}}[{_SHIP_CUES}])"  # 海燕号科考船
)
# Spacecraft and series: a two-character name, a Chinese numeral, 号 (嫦娥七号, 神舟十三号, 天宫二号).
_NUMBERED_RE = re.compile("([\u4e00-\u9fff]{2})[一二三四五六七八九十]{1,3}号")
_NOT_IN_NUMBERED = frozenset("年月日周第每一二三四五六七八九十百千万")


class _Text:
    """The sentence with its jieba tokens, indexed by character."""

    def __init__(self, text: str, tokens: list[_Token], freq: dict[str, int]):
        self.text = text
        self.tokens = tokens
        self.freq = freq
        self.token_at: list[_Token | None] = [None] * len(text)
        for token in tokens:
            for i in range(token.start, min(token.end, len(text))):
                self.token_at[i] = token

    def frequency(self, word: str) -> int:
        return self.freq.get(word) or 0

    def clause_start(self, position: int) -> bool:
        return position == 0 or not _is_han(self.text[position - 1])

    def verb_ends_at(self, position: int, *, any_verb: bool = False) -> bool:
        """A clause verb (担任, 进入) or a generic word (现任) ends right before ``position``: a name does not
        reach over it.  ``any_verb``: every verb does (places and projects; 远航物流集团 needs the default)."""
        token = self.token_at[position - 1] if position > 0 else None
        if token is None or token.end != position:
            return False
        if len(token.word) < 2:  # 代表作有岳城图书馆: only the commonest one-character verbs (有 说 来 要 去)
            return token.flag == "v" and self.frequency(token.word) >= _ONE_CHARACTER_VERB_FREQ
        if token.word in _OBJECT_VERBS or token.word in _ROLE_WORDS:
            return True
        return token.flag.startswith("v") and (any_verb or self.frequency(token.word) >= _COMMON_VERB_FREQ)


def _scan_back(text: _Text, end: int, limit: int, *, any_verb: bool = False) -> int:
    """Where a name that ends at ``end`` starts: back over Han characters to a stop, at most ``limit``."""
    start = end
    while start > 0 and end - start < limit:
        ch = text.text[start - 1]
        # A verb right before the head is part of the name (海川制造集团, 丰收项目), one further is not.
        verb = start < end and text.verb_ends_at(start, any_verb=any_verb)
        if not _is_han(ch) or ch in _STOP_CHARS or verb:
            break
        start -= 1
    token = text.token_at[start] if start < end else None
    if token is not None and token.start < start and end - start >= limit > 2:
        # The scan reached its limit inside a word: 中国科学院… cut after 中 is 中国科学院 whole when jieba
        # knows it as a name, else the name starts after that word (the 国科学院 of a limit is no name).
        if token.flag in ("nt", "ns", "nz") and start - token.start <= 4:
            start = token.start
        else:
            start = min(token.end, end)
    if not any_verb and end - start == 1 and start > 0 and text.text[start - 1] in _PREPOSITION_CHARS:
        # 和光基金会 at a clause start, 与向海集团: a one-character name with a preposition is the name
        before = start - 1
        if text.clause_start(before) or text.text[before - 1] in _PREPOSITION_CHARS:
            start = before
    return start


_KIND_ENDS = tuple("性型式类")  # what makes an attribute of a noun: 综合性, 研究型, 开放式, 理工类


def _generic_prefix(text: _Text, start: int, end: int) -> bool:
    """The part before the suffix is one frequent common word (社区医院, 研究项目), a verb that takes the
    organization as object (创办公司), or prefix and suffix are one common word (合作项目): not a name."""
    prefix = text.text[start:end]
    token = text.token_at[start]
    if prefix in _OBJECT_VERBS or prefix in GENERIC_WORDS:
        return True  # 古城遗址: a kind of place, not a name
    if 2 <= len(prefix) <= 3 and prefix.endswith(_KIND_ENDS) and token is not None and token.word == prefix:
        return True  # (一所)综合性大学, 研究型大学, 开放式博物馆: an attribute names a kind, not one of them
    if token is not None and token.start == start and token.end > end:
        whole = token.flag not in ("nr", "ns", "nt", "nz") and text.frequency(token.word) > 0
        return whole and token.end <= end + 2  # 合作项目, 重点项目: the dictionary's own compound
    if token is None or token.start != start or token.end != end:
        return False
    return (
        token.flag[:1] in ("n", "v", "a")
        and token.flag not in ("nr", "ns", "nt", "nz")
        and (text.frequency(prefix) >= _GENERIC_PREFIX_FREQ or prefix in GENERIC_WORDS)
    )


def _suffix_spans(text: _Text) -> list[NameSpan]:
    spans: list[NameSpan] = []
    for match in _SUFFIX_RE.finditer(text.text):
        suffix, begin, end = match.group(), match.start(), match.end()
        following = text.text[end : end + 1]
        if following and following in _BAD_CONTINUATIONS.get(suffix, ""):
            continue
        if len(suffix) == 1:
            if suffix in _PLACE_CHARS:
                span = _place_span(text, begin, end)
                spans.extend([span] if span is not None else [])
            else:
                spans.extend(_organization_char_span(text, begin, end))
            continue
        if suffix in _PROJECT_SUFFIXES:
            key_type, limit = "topic", 8  # 白鹭洲书院重建工程
        elif suffix in _LOCATION_SUFFIXES:
            key_type, limit = "location", 7  # 黄河三角洲湿地保护区
        else:
            key_type, limit = "organization", 16
        start = _scan_back(text, begin, limit, any_verb=key_type != "organization")
        whole = text.token_at[begin]
        if whole is not None and whole.flag in ("nt", "ns") and whole.end == end and whole.start < start:
            start = whole.start  # 国家自然科学基金委员会: jieba knows the whole name (家 is no stop there)
        if begin - start < 2 or _generic_prefix(text, start, begin):
            continue
        if key_type == "location" and "级" in text.text[start:begin]:
            continue  # 省级自然保护区, 国家级风景区: a rank, not a name
        spans.append(NameSpan(start, end, key_type, text.text[start:end]))
        if key_type == "organization":
            spans.extend(_without_place(text, start, begin, end))
    return spans


def _without_place(text: _Text, start: int, begin: int, end: int) -> list[NameSpan]:
    """The organization without the place it starts with: 乌瓦尔德市罗伯小学 -> 罗伯小学, 美国硅谷银行 -> 硅谷银行.

    The place itself (东海省 of 东海省博物馆) is not made a key: measured, it cost precision on the key gold set.

    Not the organization when what is left is generic: 商业银行 of 长江商业银行, 中级人民法院, 规划局, an
    ordinal (第一中学 of 青州市第一中学)."""
    for cut in range(begin - 2, start, -1):
        token = text.token_at[cut - 1]
        after_place = text.text[cut - 1] in "省市县区州" or (
            token is not None and token.flag == "ns" and token.end == cut and token.start >= start
        )
        if not after_place:
            continue
        first = text.token_at[cut]
        common = (
            first is not None
            and (
                first.flag == "b"
                or (first.end > begin and text.frequency(first.word) > 0)  # 商业银行: one dictionary word
                or (
                    first.flag[:1] in ("n", "v", "a")
                    and first.flag not in ("nr", "ns", "nt", "nz")
                    and text.frequency(first.word) >= _GENERIC_PREFIX_FREQ
                )
            )
        )
        ordinal = text.text[cut] == "第"
        if common or ordinal or _generic_prefix(text, cut, begin) or text.text[cut] in _PLACE_CHARS:
            return []
        return [NameSpan(cut, end, "organization", text.text[cut:end])]
    return []


def _place_span(text: _Text, begin: int, end: int) -> NameSpan | None:
    """临川市, 白露湖, 长安路: two characters and a one-character place head (or jieba's own ns word)."""
    token = text.token_at[begin]
    if (
        token is not None
        and token.end == end
        and token.flag == "ns"
        and len(token.word) >= 3
        and token.word not in GENERIC_WORDS
        and _name_boundary(text, token.start)
    ):
        return NameSpan(token.start, end, "location", token.word)  # 石家庄市: jieba knows it whole
    start = _scan_back(text, begin, 2, any_verb=True)
    if begin - start != 2 or not _name_boundary(text, start):
        return None  # a longer run: 沿海地区 is not 海地 + 区
    if text.frequency(text.text[begin - 1 : end]) >= _PLACE_HEAD_WORD_FREQ:
        return None  # 地区, 社区, 市区: a common word ends there
    if token is not None and token.end > end and text.frequency(token.word):
        return None  # the head is inside a dictionary word: 市中心, 亚历山大, 山县 of 碧山县
    first = text.token_at[start]
    inside = first is not None and first.start != start and text.text[start - 1] not in _STOP_CHARS
    if inside and text.text[max(0, start - 2) : start] not in _TENURE_VERBS:
        return None  # the name would start inside a word: 口赛 of 港口赛区
    if (
        first is not None
        and first.end == begin
        and first.flag not in ("ns", "nr", "nz")
        and text.frequency(first.word) >= _PLACE_PREFIX_MAX_FREQ
    ):
        return None  # 人生路, 东西湖: a common word before the head
    digits = any(ch.isdigit() or ch in "一二三四五六七八九十百千万" for ch in text.text[start:begin])
    if digits or _generic_prefix(text, start, begin):
        return None
    return NameSpan(start, end, "location", text.text[start:end])


def _organization_char_span(text: _Text, begin: int, end: int) -> list[NameSpan]:
    """金陵机械厂, 广州市规划局: a one-character head that ends a word (not 局长), with a name before it."""
    token = text.token_at[begin]
    if token is None or token.end != end:
        return []  # 局长, 厂房: the head is inside a word
    if token.flag == "nt" and len(token.word) >= 3:
        return [NameSpan(token.start, end, "organization", token.word)]  # 国家海洋局: jieba knows it whole
    start = _scan_back(text, begin, 9, any_verb=True)
    if begin - start < 2 or _generic_prefix(text, start, begin):
        return []  # 规划局, 工厂: a common word and the head
    return [
        NameSpan(start, end, "organization", text.text[start:end]),
        *_without_place(text, start, begin, end),
    ]


def _name_boundary(text: _Text, position: int) -> bool:
    """Nothing of a name can be right before ``position``: a clause start, a stop, a place head, a verb."""
    if text.clause_start(position) or text.text[max(0, position - 2) : position] in _TENURE_VERBS:
        return True
    ch = text.text[position - 1]
    before = text.token_at[position - 1]
    place_before = before is not None and before.end == position and before.flag == "ns"  # 苏州 + 平江路
    return ch in _STOP_CHARS or ch in _PLACE_CHARS or place_before or text.verb_ends_at(position, any_verb=True)


def _ship_spans(text: _Text) -> list[NameSpan]:
    spans = []
    for match in _SHIP_RE.finditer(text.text):
        start = match.start()
        first = text.token_at[start]
        if (
            first is not None
            and first.start == start
            and match.end() - 1 - first.end >= 2
            and first.flag not in ("nr", "ns", "nz", "nt")
            and text.frequency(first.word) >= 100
        ):
            start = first.end  # 海军破浪号: the navy is not part of the ship's name
        spans.append(NameSpan(start, match.end(), "topic", text.text[start : match.end()]))
    for match in _NUMBERED_RE.finditer(text.text):
        start = match.start()
        if any(ch in _NOT_IN_NUMBERED for ch in match.group(1)) or not _name_boundary(text, start):
            continue
        spans.append(NameSpan(start, match.end(), "topic", match.group()))
    return spans


_NAME_DOTS = frozenset("·•・‧")
# Industry words that end a company's short name and open its full one: 星澜科技 of 星澜科技公司 is no
# second organization (东岳大学 of 东岳大学法学院 and 凌霄通信公司 of 凌霄通信公司研究院 are).
_INDUSTRY_SUFFIXES = ("科技", "保险", "证券", "资本", "信托")
_PERSON_FLAGS = ("nr", "nrt", "nrfg")


def _transliterated_spans(text: _Text) -> list[NameSpan]:
    """Foreign names written in Han with a middle dot (玛雅·奥卡福, 英格丽·索尔贝格): the person-tagged words
    (nr/nrt, up to two a side: 索尔 + 贝格) joined by the dots, one person.  Without this rule only a piece
    became a key (贝格), and the name could not be linked to its Latin spelling (sag.key_aliases)."""
    tokens = text.tokens
    spans: list[NameSpan] = []
    index = 0
    while index < len(tokens):
        if tokens[index].word not in _NAME_DOTS:
            index += 1
            continue
        first = index
        while first - 1 >= 0 and index - first < 2 and tokens[first - 1].flag in _PERSON_FLAGS:
            first -= 1
        last = index
        while True:  # parts after each dot; a further dot continues the name (a·b·c)
            stop = last
            while stop + 1 < len(tokens) and stop - last < 2 and tokens[stop + 1].flag in _PERSON_FLAGS:
                stop += 1
            if stop == last:
                break
            last = stop
            if last + 2 < len(tokens) and tokens[last + 1].word in _NAME_DOTS \
                    and tokens[last + 2].flag in _PERSON_FLAGS:
                last += 1
                continue
            break
        if first < index and last > index:
            start, end = tokens[first].start, tokens[last].end
            spans.append(NameSpan(start, end, "person", text.text[start:end]))
        index = max(index + 1, last + 1)
    return spans


def _given_name_end(text: _Text, start: int) -> int:
    """End of a given name starting at ``start``: one or two Han characters, not over a stop or a word."""
    end = start
    while end < len(text.text) and end - start < 2:
        ch = text.text[end]
        token = text.token_at[end]
        if not _is_han(ch) or ch in _STOP_CHARS:
            break
        if end > start and token is not None and token.start == end and len(token.word) >= 2:
            break  # 钟离川 + 来自: the next word is a word of its own
        if (
            token is not None
            and token.start == end
            and text.verb_ends_at(token.end)
            and len(token.word) >= 2
            and token.word in _OBJECT_VERBS
        ):
            break
        end += 1
    return end


def _person_spans(text: _Text) -> list[NameSpan]:
    spans: list[NameSpan] = []
    tokens = text.tokens
    for index, token in enumerate(tokens):
        word = token.word
        compound = next((s for s in _COMPOUND_SURNAMES if word.startswith(s)), None)
        following = tokens[index + 1] if index + 1 < len(tokens) else None
        one_char_given = (
            len(word) == 2
            and following is not None
            and len(following.word) == 1
            and following.flag in ("nr", "ng", "g", "j")
            and following.word not in _STOP_CHARS
        )  # 南宫/ns 瑾/nr: jieba reads the surname as the place
        if compound is not None and (len(word) > 2 or token.flag in ("nr", "n", "nrfg", "j") or one_char_given):
            end = _given_name_end(text, token.start + 2)
            if end > token.start + 2:
                spans.append(NameSpan(token.start, end, "person", text.text[token.start : end]))
            continue
        surname = word in _COMMON_SURNAMES or (word in _RARE_SURNAMES and token.flag == "nr")
        if len(word) == 1 and surname and index + 1 < len(tokens):
            given = tokens[index + 1]
            if word in _PREPOSITION_CHARS and not text.clause_start(token.start):
                continue  # 毕业于北溟: 于 is the preposition there
            if (
                given.start == token.end
                and len(given.word) == 2
                and all(_is_han(ch) and ch not in _STOP_CHARS for ch in given.word)
                and given.flag[:1] not in ("p", "c", "u", "r", "m", "q", "f", "d")
                and text.frequency(given.word) < _GIVEN_NAME_MAX_FREQ
                and given.word not in GENERIC_WORDS
            ):
                spans.append(NameSpan(token.start, given.end, "person", word + given.word))
            continue
        following = tokens[index + 1] if index + 1 < len(tokens) else None
        if (
            token.flag == "nr"
            and len(word) == 2
            and following is not None
            and len(following.word) == 1
            and (
                following.flag in ("nr", "ng", "g")
                # 顾青 + 梧/ns: the HMM's tag for a rare character left over; 京, 美, 湘 are places
                or (following.flag in ("ns", "zg") and text.frequency(following.word) < _GIVEN_NAME_MAX_FREQ)
            )
            and _is_han(following.word)
            and following.word not in _STOP_CHARS
        ):
            spans.append(NameSpan(token.start, following.end, "person", word + following.word))  # 兰若 + 曦
            continue
        if len(word) == 4 and word[-1] in _PREPOSITION_CHARS and not text.frequency(word):
            word = word[:-1]  # 莫听风由: the preposition after the name, glued on
        if (
            2 <= len(word) <= 3
            and word[0] in _COMMON_SURNAMES
            and not text.frequency(word)
            and all(_is_han(ch) and ch not in _NOT_IN_PERSON_NAMES for ch in word[1:])
            and word[0] not in _PREPOSITION_CHARS
            and word[:2] not in _TENURE_VERBS  # 曾任青: 曾任 + the place that follows
            and not (index > 0 and tokens[index - 1].word in _PLACE_VERBS)  # 来自温陵: a place
            and token.flag not in ("ns", "nt", "m", "t")
        ):
            spans.append(NameSpan(token.start, token.start + len(word), "person", word))  # 顾听澜: unknown
    return spans


def chinese_names(text: str, tagged: list[tuple[str, str]], freq: dict[str, int]) -> list[NameSpan]:
    """Typed name spans of ``text`` (jieba.posseg's ``(word, flag)`` pairs of it, jieba's FREQ table).

    Spans do not overlap: a longer span wins over one inside it (白鹭大学附属医院 over 白鹭大学), a
    suffix span over a person (北溟大学 over 于北溟); then jieba's nr/ns/nt words outside every span.  The
    one exception: an organization that opens a longer one is kept too (东岳大学 of 东岳大学法学院).
    """
    tokens: list[_Token] = []
    offset = 0
    for word, flag in tagged:
        tokens.append(_Token(word, flag, offset))
        offset += len(word)
    indexed = _Text(text, tokens, freq)
    chosen: list[NameSpan] = []
    taken = [False] * len(text)
    for group in (_transliterated_spans(indexed), _ship_spans(indexed), _suffix_spans(indexed),
                  _person_spans(indexed)):
        for span in sorted(group, key=lambda s: (s.start - s.end, s.start)):  # longest first
            if not any(taken[span.start : span.end]):
                chosen.append(span)
                for i in range(span.start, span.end):
                    taken[i] = True
            elif span.type == "organization" and any(
                outer.type == "organization"
                and outer.start <= span.start
                and span.end <= outer.end
                and (outer.start == span.start or outer.end == span.end)
                and not (span.name.endswith(_INDUSTRY_SUFFIXES) and is_generic(text[span.end : outer.end]))
                for outer in chosen
            ):
                # 东岳大学 of 东岳大学法学院 (the parent institution), 罗伯小学 of 乌瓦尔德市罗伯小学 (the
                # organization without its place, as other texts and questions write it): keys too.  Not
                # 星澜科技 of 星澜科技公司: only a suffix is left.
                chosen.append(span)
    for index, token in enumerate(tokens):
        if any(taken[token.start : token.end]) or token.word in GENERIC_WORDS or len(token.word) < 2:
            continue
        word = token.word
        previous = tokens[index - 1] if index else None
        if is_role(word):
            continue  # 中学教师/nt, 博士生/nr: a kind of person, not a name
        if token.flag in ("nr", "nrfg", "nrt"):
            if previous is not None and previous.flag in ("m", "q"):
                continue  # 一方古印: after a measure word, a thing
            towards = (
                previous is not None
                and previous.word in _TOWARDS_CHARS
                and index >= 2
                and tokens[index - 2].flag == "ns"
            )  # 成都至拉萨: a route between places
            if previous is not None and (previous.word in _PLACE_VERBS or towards):
                chosen.append(NameSpan(token.start, token.end, "location", word))  # 抵达拉萨
                for i in range(token.start, token.end):
                    taken[i] = True
                continue
            if word[0] in _PREPOSITION_CHARS and len(word) == 3 and not indexed.clause_start(token.start):
                word = word[1:]  # 向临江: the preposition jieba glued on
            if word[:2] in _TENURE_VERBS:
                continue  # 曾任青 of 曾任青禾县县长
            if any(ch in _NOT_IN_PERSON_NAMES for ch in word[1:]):
                continue  # 白与罗: two names jieba glued together around 与 (于海波: 于 is the surname)
            chosen.append(NameSpan(token.end - len(word), token.end, "person", word))
        elif token.flag == "ns":
            bare = _PLACE_SIDE_RE.sub("", word)
            if len(bare) >= 2 and bare not in GENERIC_WORDS:
                chosen.append(NameSpan(token.start, token.start + len(bare), "location", bare))
        elif token.flag == "nt":
            chosen.append(NameSpan(token.start, token.end, "organization", word))
        elif (
            token.flag == "n"
            and len(word) >= 3
            and word.endswith(_GOVERNMENT_ENDS)
            and not is_generic(word)
            and (word.endswith("部") or len(word) >= 4)  # 水利部; 教育局 alone is every city's
            and indexed.frequency(word[-2:]) < _PLACE_HEAD_WORD_FREQ  # not 公司总部, 干部
        ):
            chosen.append(NameSpan(token.start, token.end, "organization", word))  # 水利部, 国土资源局
        else:
            continue
        for i in range(token.start, token.end):
            taken[i] = True
    return sorted(chosen, key=lambda s: s.start)

"""The offline rule extractor: events and keys without an LLM, deterministic and fast.

Events are sentences (a long English sentence is split at ";", a tiny fragment joins its neighbour).
Keys are what cheap rules can find reliably:

* English: capitalised phrases ("Carl Rogers", "University of Copenhagen", "J. R. R. Tolkien"), typed as
  organization (suffix/head words like University, Inc, Party), location (gazetteer, "in X", "city of
  X", "X, Illinois", place prefixes like New/San/Fort), person (2–4 title-case words, or a word after an
  honorific such as Dr./President; a lone surname maps to a full name already seen) or topic; years →
  ``time`` keys with float values; "quoted titles" → topic. Lower-case words are never keys.
* Chinese (jieba.posseg): nr → person, ns → location, nt → organization, nz/j/n → topic, v/vn → action,
  t and N年 → time (numeric when the year is parseable).
* Both: the document title and the chunk title are topic keys of every event of the chunk: the "subject"
  that links facts from the same page even when a sentence only says "he".

Keys are deduplicated by (type, normalized name) and capped per event, most specific first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache

from sag_pg.text.normalize import normalize_key, parse_chinese_numeral, parse_year
from sag_pg.text.tokenize import contains_han, load_jieba_posseg, split_sentences
from sag_pg.types import Chunk, EventDraft, KeyDraft

__all__ = ["RuleExtractor"]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# ---------------------------------------------------------------------------------------- lexicons
# Capitalised only because of their position or grammar; never the start of a name.
_FUNCTION_WORDS = _words(
    """a an the this that these those it its he she they we i you his her hers their our my your him them
    us me in on at by for from with of to into onto upon under over through between among about against
    within without despite after before during when while although though however but and or nor as if
    since because then there here today yesterday tomorrow also many some most all both each every one two
    three four five several few other another such no not what which who whom whose where why how
    according following later meanwhile thus therefore moreover furthermore yet so once finally unlike
    like per via toward towards throughout instead until near beyond whereas whether any much more less
    only even still just now currently formerly originally previously recently is was are were be been
    has had have do does did can could will would shall should may might must let see note"""
)
_MONTHS = {
    "january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6, "july": 7, "august": 8,
    "september": 9, "october": 10, "november": 11, "december": 12, "jan": 1, "feb": 2, "mar": 3, "apr": 4,
    "jun": 6, "jul": 7, "aug": 8, "sep": 9, "sept": 9, "oct": 10, "nov": 11, "dec": 12,
}  # fmt: skip
_DAY_NAMES = _words("monday tuesday wednesday thursday friday saturday sunday")
_HONORIFICS = _words(
    """mr mrs ms miss dr prof professor sir dame lord lady president king queen prince princess emperor
    empress pope general gen colonel col captain capt senator sen governor gov judge justice rev reverend
    father bishop archbishop cardinal chancellor minister rabbi sheikh sultan chairman ceo"""
)
_ORGANIZATION_WORDS = _words(
    """inc inc. corp corporation company co ltd llc plc gmbh ag sa university college institute
    institution academy school association society party church foundation council committee commission
    agency bureau department ministry bank group union league federation club museum library laboratory
    laboratories labs hospital press times journal court army navy corps orchestra band records studios
    studio airlines airways team organization organisation board parliament congress senate government
    administration network systems technologies entertainment publishing publishers pictures films
    broadcasting railway railways police brigade regiment division fc"""
)
_LOCATION_WORDS = _words(
    """city county state province river mountain mountains mount lake island islands valley street avenue
    road bay sea ocean desert kingdom republic coast peninsula district region park square hills canyon
    falls beach harbor harbour airport station bridge township village borough parish prefecture"""
)
_LOCATION_PREFIXES = _words("new san santa los las fort port mount lake cape saint st east west north south")
_LOCATION_CUES = _words("in at near outside across")
_PLACE_NOUNS = _words("city town village state province county country region island capital district")
# Title-case words that make a two-word phrase something other than a person's name.
_NON_NAME_WORDS = _words(
    """war prize award awards act treaty revolution empire dynasty age era day cup games olympics festival
    series show theory law project program programme bill battle campaign movement award trophy
    championship league conference summit expedition crisis affair agreement accord doctrine plan
    declaration constitution amendment code system model engine language languages music art film
    album song book novel magazine church party"""
)
_NAME_PARTICLES = _words("de da del della di du des van von der den la le bin ibn")
_CONNECTORS = _NAME_PARTICLES | _words("of the and for on")
_ORGANIZATION_ONLY_CONNECTORS = _words("and for on")  # "Carl Rogers and Abraham Maslow" is two names
_GAZETTEER = frozenset(
    """afghanistan|albania|algeria|argentina|armenia|australia|austria|bangladesh|belgium|bolivia|brazil|
    bulgaria|cambodia|canada|chile|china|colombia|croatia|cuba|czech republic|denmark|egypt|england|
    estonia|ethiopia|finland|france|georgia|germany|ghana|greece|hungary|iceland|india|indonesia|iran|iraq|
    ireland|israel|italy|japan|jordan|kenya|korea|north korea|south korea|latvia|lebanon|libya|lithuania|
    malaysia|mexico|mongolia|morocco|nepal|netherlands|new zealand|nigeria|norway|pakistan|peru|
    philippines|poland|portugal|romania|russia|saudi arabia|scotland|serbia|singapore|slovakia|slovenia|
    south africa|spain|sri lanka|sudan|sweden|switzerland|syria|taiwan|thailand|tunisia|turkey|ukraine|
    united kingdom|united states|united states of america|usa|uk|uruguay|venezuela|vietnam|wales|yemen|
    zimbabwe|africa|asia|europe|north america|south america|antarctica|oceania|alabama|alaska|arizona|
    arkansas|california|colorado|connecticut|delaware|florida|hawaii|idaho|illinois|indiana|iowa|kansas|
    kentucky|louisiana|maine|maryland|massachusetts|michigan|minnesota|mississippi|missouri|montana|
    nebraska|nevada|new hampshire|new jersey|new mexico|new york|north carolina|north dakota|ohio|oklahoma|
    oregon|pennsylvania|rhode island|south carolina|south dakota|tennessee|texas|utah|vermont|virginia|
    washington|west virginia|wisconsin|wyoming|ontario|quebec|british columbia|london|paris|berlin|rome|
    madrid|moscow|tokyo|beijing|shanghai|hong kong|chicago|boston|los angeles|san francisco|toronto|sydney|
    melbourne|vienna|amsterdam|brussels|copenhagen|stockholm|oslo|dublin|edinburgh|istanbul|cairo|delhi|
    mumbai|seoul|bangkok|manila|jakarta|mexico city|lisbon|athens|prague|warsaw|budapest|hollywood""".replace(
        "\n", ""
    ).replace(" |", "|").replace("| ", "|").split("|")
)
_PRONOUN_STARTS = _words("he she it they his her its their this these those we")
_CHINESE_PRONOUN_STARTS = ("他", "她", "它", "其", "此", "该")
_CHINESE_TAG_TYPES = {
    "nr": ("person", 1), "nrfg": ("person", 1), "nrt": ("person", 1), "ns": ("location", 1),
    "nt": ("organization", 1), "nz": ("topic", 4), "j": ("topic", 4), "n": ("topic", 6),
    "vn": ("action", 7), "v": ("action", 7),
}  # fmt: skip
_CHINESE_STOP_WORDS = _words(
    """进行 成为 没有 可以 开始 使用 认为 表示 需要 具有 通过 出现 发生 包括 作为 属于 得到 觉得 知道
    希望 应该 能够 可能 不能 已经 还是 就是 只是 时候 问题 情况 方面 东西 事情 地方 时间 人们 部分 方式"""
)
_CHINESE_RELATIVE_TIMES = _words(
    "去年 今年 明年 当年 近年 多年 每年 前年 后年 往年 早年 晚年 同年 次年 翌年 当时 今天 昨天 明天 现在 以前 以后 目前"
)
_LOCATIVE_PREPOSITIONS = frozenset("在于到至往赴抵从自")

# ------------------------------------------------------------------------------------------ patterns
_TOKEN_RE = re.compile(r"[^\W_](?:\w|['’\-.&](?=[^\W_]))*")
_YEAR_RE = re.compile(r"(?<![\w.,$€£¥-])(1\d{3}|20\d{2})(s)?(?![\w%]|[.,]\d)")
_BC_YEAR_RE = re.compile(r"\b(\d{1,4})\s?(BC|BCE|B\.C\.(?:E\.)?)(?![\w])")
_AD_YEAR_RE = re.compile(r"\b(?:AD|A\.D\.)\s?(\d{1,4})\b")
_CHINESE_YEAR_RE = re.compile(r"(公元前|公元|西元前|西元)?(\d{1,4}|[〇零一二三四五六七八九]{3,4})年")
_QUOTED_RE = re.compile(r"“([^”\n]{2,60})”|\"([^\"\n]{2,60})\"|《([^》\n]{1,40})》|「([^」\n]{1,40})」")
_MONTH_PATTERN = r"(Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)"  # noqa: E501
# (pattern, which groups hold year, month, day)
_DATE_PATTERNS: tuple[tuple[re.Pattern[str], tuple[int, int, int]], ...] = (
    (re.compile(r"(?<![\d.])(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})(?![\d.])"), (1, 2, 3)),
    (re.compile(r"(\d{4})\s*年\s*(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]"), (1, 2, 3)),
    (re.compile(r"([〇零一二三四五六七八九]{4})年([一二三四五六七八九十]{1,3})月([一二三四五六七八九十]{1,3})[日号]"), (1, 2, 3)),
    (re.compile(rf"\b{_MONTH_PATTERN}\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b"), (3, 1, 2)),
    (re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH_PATTERN}\.?,?\s+(\d{{4}})\b"), (3, 2, 1)),
)
_FENCE_RE = re.compile(r"\s{0,3}(`{3,}|~{3,})")
_TABLE_SEPARATOR_RE = re.compile(r"\s*\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)*\|?\s*")
_BLOCK_MARKER_RE = re.compile(r"\s*(?:#{1,6}\s+|>+\s?|[-*+]\s+|\d{1,3}[.)]\s+)")
_LINK_RE = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_INLINE_MARKUP_RE = re.compile(r"\*\*|__|`")
_CLAUSE_SPLIT_RE = re.compile(r"(?<=;)\s+")
_WORD_RE = re.compile(r"\w+")

_SUBJECT, _NAMED, _TIME, _QUOTED, _PHRASE, _WORD, _COMMON_NOUN, _ACTION = range(8)  # key priorities


@dataclass
class _Phrase:
    words: list[str]
    sentence_initial: bool
    after_honorific: bool
    preceding_word: str
    following_text: str


def _is_capitalized(word: str) -> bool:
    first = word[0]
    if first.isupper():
        return word.lower() not in _MONTHS and word.lower() not in _DAY_NAMES
    return first.isdigit() and any(ch.isupper() for ch in word)  # 3M, 302.AI


def _capitalized_phrases(text: str) -> list[_Phrase]:
    """Runs of capitalised words joined by spaces, inner connectors (of, the, de, ...) and '&'."""
    tokens = [(m.group(), m.start(), m.end()) for m in _TOKEN_RE.finditer(text)]
    phrases: list[_Phrase] = []
    i = 0
    while i < len(tokens):
        word, start, _ = tokens[i]
        if not _is_capitalized(word):
            i += 1
            continue
        gap_before = text[tokens[i - 1][2] : start] if i else text[:start]
        previous = tokens[i - 1][0] if i else ""
        words = [word]
        j = i + 1
        while j < len(tokens):
            gap = text[tokens[j - 1][2] : tokens[j][1]]
            candidate = tokens[j][0]
            initial = gap == ". " and len(words[-1]) == 1 and words[-1].isupper()  # J. R. R. Tolkien
            if (gap == " " or initial) and _is_capitalized(candidate):
                words.append(candidate)
                j += 1
                continue
            if gap.strip() == "&" and _is_capitalized(candidate):
                words += ["&", candidate]
                j += 1
                continue
            if gap == " " and candidate.lower() in _CONNECTORS:
                k = j
                while k < len(tokens) and k - j < 2 and tokens[k][0].lower() in _CONNECTORS:
                    k += 1
                if (
                    k < len(tokens)
                    and all(text[tokens[m - 1][2] : tokens[m][1]] == " " for m in range(j, k + 1))
                    and _is_capitalized(tokens[k][0])
                ):
                    words += [t[0] for t in tokens[j : k + 1]]
                    j = k + 1
                    continue
            break
        following = text[tokens[j - 1][2] : tokens[j - 1][2] + 40]
        initial_position = i == 0 or any(c in '.!?:;"“(\n' for c in gap_before)
        honorific = previous.lower() in _HONORIFICS and gap_before.strip() in ("", ".")
        phrases.append(_Phrase(words, initial_position, honorific, previous.lower(), following))
        i = j
    return phrases


def _clean_phrase(phrase: _Phrase) -> _Phrase | None:
    words = list(phrase.words)
    if words[-1].endswith(("'s", "’s")):
        words[-1] = words[-1][:-2]
    stripped = False
    while words and (words[0].lower() in _FUNCTION_WORDS or words[0].lower() in _HONORIFICS):
        if words[0].lower() in _HONORIFICS and len(words) > 1 and words[1].lower() not in _CONNECTORS:
            phrase.after_honorific = True
        elif words[0].lower() in _HONORIFICS:
            break  # "President of the United States": a title, keep it whole
        phrase.preceding_word = words.pop(0).lower()
        stripped = True
    while words and (words[-1].lower() in _CONNECTORS or words[-1] == "&"):
        words.pop()
    if not words or all(w.lower() in _FUNCTION_WORDS for w in words):
        return None
    phrase.words = words
    phrase.sentence_initial = phrase.sentence_initial and not stripped
    return phrase


def _classify(phrase: _Phrase, name: str) -> str:
    lowered = [w.lower().rstrip(".") for w in phrase.words]
    has_organization_word = any(w in _ORGANIZATION_WORDS for w in lowered)
    if any(w in _ORGANIZATION_ONLY_CONNECTORS for w in lowered) and not has_organization_word:
        return "topic"
    if has_organization_word:
        return "organization"
    if name.lower() in _GAZETTEER or any(w in _LOCATION_WORDS for w in lowered[1:]):
        return "location"
    if len(lowered) >= 2 and lowered[0] in _LOCATION_PREFIXES:
        return "location"
    if phrase.preceding_word in _LOCATION_CUES or phrase.preceding_word in _PLACE_NOUNS:
        return "location"
    after_comma = re.match(r",\s*([A-Z][a-z]+(?: [A-Z][a-z]+)?)", phrase.following_text)
    if after_comma is not None and after_comma.group(1).lower() in _GAZETTEER:
        return "location"  # Oak Park, Illinois
    if phrase.after_honorific:
        return "person"
    name_words = [w for w in phrase.words if w.lower() not in _NAME_PARTICLES]
    if (
        2 <= len(name_words) <= 4
        and all(w[0].isupper() and (len(w) == 1 or not w.isupper()) and w.replace("-", "").replace("'", "").isalpha() for w in name_words)  # noqa: E501
        and not any(w.lower() in _NON_NAME_WORDS for w in name_words)
    ):
        return "person"
    return "topic"


@lru_cache(maxsize=256)
def _evidence(text: str) -> tuple[frozenset[str], tuple[str, ...]]:
    """Words seen capitalised mid-sentence in ``text``, and the person names it mentions."""
    capitalized: set[str] = set()
    persons: list[str] = []
    for phrase in _capitalized_phrases(text):
        if not phrase.sentence_initial or len(phrase.words) > 1:
            capitalized.update(phrase.words)
        cleaned = _clean_phrase(phrase)
        if cleaned is not None and len(cleaned.words) >= 2:
            name = " ".join(cleaned.words)
            if _classify(cleaned, name) == "person":
                persons.append(name)
    return frozenset(capitalized), tuple(persons)


def _title_evidence(*titles: str) -> tuple[frozenset[str], tuple[str, ...]]:
    words: set[str] = set()
    persons: list[str] = []
    for title in titles:
        if not title:
            continue
        found_words, found_persons = _evidence(title)
        words.update(found_words)
        words.update(w for w in _TOKEN_RE.findall(title) if w[0].isupper())
        persons.extend(found_persons)
    return frozenset(words), tuple(persons)


# --------------------------------------------------------------------------------------- extraction
@dataclass
class _Candidates:
    """Keys in priority order, deduplicated by (type, normalized name)."""

    items: list[tuple[int, int, KeyDraft]]
    seen: set[tuple[str, str]]

    def add(self, priority: int, key_type: str, name: str, value: str | float | None = None) -> None:
        name = name.strip()
        normalized = normalize_key(name)
        if not normalized or (key_type, normalized) in self.seen:
            return
        self.seen.add((key_type, normalized))
        self.items.append((priority, len(self.items), KeyDraft(key_type, name, name if value is None else value)))


def _english_keys(text: str, candidates: _Candidates, evidence: frozenset[str], persons: tuple[str, ...]) -> None:
    found: list[tuple[str, str]] = []
    local_persons = list(persons)
    for raw in _capitalized_phrases(text):
        phrase = _clean_phrase(raw)
        if phrase is None:
            continue
        name = " ".join(phrase.words)
        single = len(phrase.words) == 1
        word = phrase.words[0]
        if single and phrase.sentence_initial and word not in evidence and word.isalpha() and not word.isupper():
            continue  # "Born", "Critics": capitalised only because a sentence starts there
        key_type = _classify(phrase, name)
        if key_type == "person" and not single:
            local_persons.append(name)
        found.append((key_type, name))
    for key_type, name in found:
        if key_type in ("topic", "person") and " " not in name:
            full = next((p for p in local_persons if p.split()[-1] == name or p.split()[0] == name), None)
            if full is not None:
                key_type, name = "person", full  # "Rogers" after "Carl Rogers"
        priority = _NAMED if key_type != "topic" else (_PHRASE if " " in name else _WORD)
        candidates.add(priority, key_type, name)


def _time_keys(text: str, candidates: _Candidates) -> None:
    for match in _BC_YEAR_RE.finditer(text):
        candidates.add(_TIME, "time", match.group(), -float(match.group(1)))
    for match in _AD_YEAR_RE.finditer(text):
        candidates.add(_TIME, "time", match.group(), float(match.group(1)))
    for match in _YEAR_RE.finditer(text):
        candidates.add(_TIME, "time", match.group(), float(match.group(1)))
    if contains_han(text):
        for match in _CHINESE_YEAR_RE.finditer(text):
            year = parse_year(match.group())
            if year is not None:
                candidates.add(_TIME, "time", match.group(), float(year))


def _quoted_keys(text: str, candidates: _Candidates) -> None:
    for match in _QUOTED_RE.finditer(text):
        quoted = next(g for g in match.groups() if g is not None).strip()
        if quoted and quoted[-1] not in ".,!?;:。，！？；" and len(quoted.split()) <= 8:
            candidates.add(_QUOTED, "topic", quoted)


def _chinese_keys(text: str, candidates: _Candidates) -> None:
    pairs = [(p.word, p.flag) for p in load_jieba_posseg().lcut(text)]
    for index, (word, flag) in enumerate(pairs):
        if flag == "t":
            if word in _CHINESE_RELATIVE_TIMES or not re.search(r"[\d年月日世纪朝代]", word):
                continue
            previous = pairs[index - 1][0] if index else ""
            if re.fullmatch(r"[元一二三四五六七八九十]+年", word) and re.fullmatch(r"[\u4e00-\u9fff]{2}", previous):
                word = previous + word  # era year: 建安五年
            year = parse_year(word)
            candidates.add(_TIME, "time", word, float(year) if year is not None else None)
            continue
        mapped = _CHINESE_TAG_TYPES.get(flag)
        if mapped is None or len(word) < 2 or word in _CHINESE_STOP_WORDS or not contains_han(word):
            continue
        key_type, priority = mapped
        if (
            key_type == "person"
            and index + 1 < len(pairs)
            and index > 0
            and pairs[index - 1][0] in _LOCATIVE_PREPOSITIONS
            and pairs[index + 1][1].startswith("v")
        ):
            key_type = "location"  # 在官渡展开: jieba tags 官渡 as a name, the grammar says place
        candidates.add(priority, key_type, word)


def _plain_text(markdown: str) -> str:
    """Markdown → text whose line structure still separates list items, quotes and table rows."""
    lines: list[str] = []
    fence: str | None = None
    for line in markdown.split("\n"):
        fence_match = _FENCE_RE.match(line)
        if fence is not None:
            if fence_match is not None and fence_match.group(1)[0] == fence:
                fence = None
            continue
        if fence_match is not None:
            fence = fence_match.group(1)[0]
            continue  # code is not prose: no events from it
        if _TABLE_SEPARATOR_RE.fullmatch(line):
            continue
        stripped = line.strip()
        block = False
        if stripped.startswith("|"):
            line = ", ".join(c.strip() for c in stripped.strip("|").split("|") if c.strip())
            block = True
        else:
            marker = _BLOCK_MARKER_RE.match(line)
            if marker is not None:
                line, block = line[marker.end() :], True
        line = _INLINE_MARKUP_RE.sub("", _LINK_RE.sub(r"\1", line))
        lines.extend(("", line, "") if block else (line,))
    return "\n".join(lines)


def _is_fragment(sentence: str) -> bool:
    if contains_han(sentence):
        return sum(1 for ch in sentence if "\u4e00" <= ch <= "\u9fff") < 6
    return len(sentence) < 12 or len(_WORD_RE.findall(sentence)) < 3


def _join(left: str, right: str) -> str:
    return left + right if contains_han(left[-1:]) or contains_han(right[:1]) else f"{left} {right}"


def _full_date(text: str) -> datetime | None:
    best: tuple[int, datetime] | None = None
    for pattern, (year_group, month_group, day_group) in _DATE_PATTERNS:
        match = pattern.search(text)
        if match is None or (best is not None and match.start() >= best[0]):
            continue
        parts = [match.group(year_group), match.group(month_group), match.group(day_group)]
        numbers: list[int] = []
        for part in parts:
            if part.isdigit():
                numbers.append(int(part))
            elif part.lower().rstrip(".") in _MONTHS:
                numbers.append(_MONTHS[part.lower().rstrip(".")])
            else:
                numbers.append(parse_chinese_numeral(part) or 0)
        try:
            best = (match.start(), datetime(numbers[0], numbers[1], numbers[2], tzinfo=UTC))
        except ValueError:
            continue
    return best[1] if best is not None else None


class RuleExtractor:
    """Deterministic events and keys from text, for offline use and as the LLM extractor's fallback."""

    def __init__(self, *, max_keys_per_event: int = 12, long_sentence_chars: int = 200, title_chars: int = 60):
        self.max_keys_per_event = max_keys_per_event
        self.long_sentence_chars = long_sentence_chars
        self.title_chars = title_chars

    def events(self, chunk: Chunk, *, summary: str = "", doc_title: str = "") -> list[EventDraft]:
        """One event per sentence of the chunk (code blocks skipped; a chunk with no prose is one event)."""
        pieces: list[str] = []
        for sentence in split_sentences(_plain_text(chunk.content)):
            if len(sentence) > self.long_sentence_chars and ";" in sentence:
                pieces.extend(p for p in _CLAUSE_SPLIT_RE.split(sentence) if p.strip())
            else:
                pieces.append(sentence)
        merged: list[str] = []
        for piece in pieces:
            if merged and (_is_fragment(piece) or _is_fragment(merged[-1])):
                merged[-1] = _join(merged[-1], piece)
            else:
                merged.append(piece)
        if not merged and chunk.content.strip():
            merged = [" ".join(chunk.content.split())[:2000]]
        subject = doc_title.strip() or chunk.title.rsplit(" > ", 1)[-1].strip()
        return [EventDraft(self._title(text, subject), text, _full_date(text)) for text in merged]

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
        for title in (doc_title, chunk_title):
            if title.strip():
                candidates.add(_SUBJECT, "topic", title)
        text = event.content
        title_words, title_persons = _title_evidence(doc_title, chunk_title)
        summary_words, summary_persons = _evidence(summary) if summary else (frozenset(), ())
        _english_keys(text, candidates, title_words | summary_words, title_persons + summary_persons)
        _time_keys(text, candidates)
        _quoted_keys(text, candidates)
        if contains_han(text):
            _chinese_keys(text, candidates)
        ranked = sorted(candidates.items, key=lambda item: (item[0], item[1]))
        return [key for _, _, key in ranked[: self.max_keys_per_event]]

    def extract(self, chunk: Chunk, *, summary: str = "", doc_title: str = "") -> list[EventDraft]:
        """Events with their keys filled in: ``events`` then ``keys`` for each."""
        events = self.events(chunk, summary=summary, doc_title=doc_title)
        for event in events:
            event.keys = self.keys(event, summary=summary, doc_title=doc_title, chunk_title=chunk.title)
        return events

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
  that links facts from the same page even when a sentence only says "he".

Keys are deduplicated by normalized name (one type per name within an event, the first found wins) and
capped per event, most specific first: subject, named entities, times, quoted titles, phrases, words,
common nouns, actions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from sag_pg.text.chunking import markdown_to_prose
from sag_pg.text.normalize import find_date, find_years, normalize_key, parse_year
from sag_pg.text.tokenize import contains_han, load_jieba_posseg, split_sentences
from sag_pg.types import Chunk, EventDraft, KeyDraft

__all__ = ["RuleExtractor"]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


def _names(text: str) -> frozenset[str]:
    return frozenset(name.strip() for name in text.split("|"))


# ---------------------------------------------------------------------------------------- lexicons
# Capitalised only because of their position or grammar; never the start of a name.
_FUNCTION_WORDS = _words(
    """a an the this that these those it its he she they we i you his her hers their our my your him them us
    me in on at by for from with of to into onto upon under over through between among about against
    within without despite after before during when while although though however but and or nor as if
    since because then there here today yesterday tomorrow also many some most all both each every one
    two three four five several few other another such no not what which who whom whose where why how
    according following later meanwhile thus therefore moreover furthermore yet so once finally unlike
    like per via toward towards throughout instead until near beyond whereas whether any much more
    less only even still just now currently formerly originally previously recently is was are were be
    been has had have do does did can could will would shall should may might must let see note"""
)
_MONTHS = _words(
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec"
)
_DAY_NAMES = _words("monday tuesday wednesday thursday friday saturday sunday")
_MONTH_FIRST_NAMES = _words("jan may june april august")
_HONORIFICS = _words(
    """mr mrs ms miss dr prof professor sir dame lord lady president king queen prince princess emperor
    empress pope gen colonel col captain capt senator sen governor gov judge rev reverend father
    bishop archbishop cardinal chancellor minister rabbi sheikh sultan chairman ceo"""
)
_ORGANIZATION_WORDS = _words(
    """inc inc. corp corporation company co ltd llc plc gmbh ag sa university college institute institution
    academy school association society party church foundation council committee commission agency
    bureau department ministry bank group union league federation club museum library laboratory
    laboratories labs hospital press times journal court army navy corps orchestra band records
    studios studio airlines airways team organization organisation board parliament congress senate
    government administration network systems technologies entertainment publishing publishers
    pictures films broadcasting railway railways police brigade regiment division fc"""
)
_LOCATION_WORDS = _words(
    """city county state province river mountain mountains mount lake island islands valley street avenue
    road bay sea ocean desert kingdom republic coast peninsula district region park square hills
    canyon falls beach harbor harbour airport station bridge township village borough parish
    prefecture"""
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
    album song book novel magazine church party factor index effect reporter review report news media
    global international national american british english french german chinese japanese european
    african asian royal general central united federal public private social modern classical ancient
    medieval red blue golden great grand little big high upper lower first second third last final
    annual world grammy oscar emmy nobel records edition version volume part chapter episode season
    tour station channel radio television tv online digital trilogy chronicles chronicle history saga
    legend legends tales tale story stories dice card cards game method algorithm syndrome disease
    principle equation theorem problem test process reaction cycle greater middle territory capital
    palisades"""
)
_NON_NAME_SUFFIXES = ("tion", "sion", "ment", "ness", "ism", "ology", "ics", "ship")
_NAME_SUFFIXES = _words("jr sr")
_ROMAN_RE = re.compile(r"[IVX]{1,5}")
_ERA_MARKERS = _words("bc bce ad ce")
_DEMONYM_SUFFIXES = ("ian", "ese", "ish", "ic")
_PLACE_OR_GROUP = _ORGANIZATION_WORDS | _LOCATION_WORDS
_NAME_PARTICLES = _words("de da del della di du des van von der den la le bin ibn")
_CONNECTORS = _NAME_PARTICLES | _words("of the and for on")
_ORGANIZATION_ONLY_CONNECTORS = _words("and for on")  # "Carl Rogers and Abraham Maslow" is two names
_GAZETTEER = _names(  # countries, continents, US states, big cities: locations without any cue
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
    mumbai|seoul|bangkok|manila|jakarta|mexico city|lisbon|athens|prague|warsaw|budapest|hollywood|us|u.s|
    u.s.a|u.k|middle east|great britain|britain"""
)
_PRONOUN_STARTS = _words("he she it they his her its their this these those we")
_CHINESE_PRONOUN_STARTS = ("他", "她", "它", "其", "此", "该")
# Key priorities when an event has more keys than the cap: most specific first.
_SUBJECT, _NAMED, _TIME, _QUOTED, _PHRASE, _WORD, _COMMON_NOUN, _ACTION = range(8)
_CHINESE_TAG_TYPES = {
    "nr": ("person", _NAMED), "nrfg": ("person", _NAMED), "nrt": ("person", _NAMED),
    "ns": ("location", _NAMED), "nt": ("organization", _NAMED), "nz": ("topic", _PHRASE),
    "j": ("topic", _PHRASE), "n": ("topic", _COMMON_NOUN), "vn": ("action", _ACTION),
    "v": ("action", _ACTION),
}  # fmt: skip
_CHINESE_STOP_WORDS = _words(
    """进行 成为 没有 可以 开始 使用 认为 表示 需要 具有 通过 出现 发生 包括 作为 属于 得到 觉得 知道
    希望 应该 能够 可能 不能 已经 还是 就是 只是 时候 问题 情况 方面 东西 事情 地方 时间 人们 部分 方式"""
)
_CHINESE_RELATIVE_TIMES = _words(
    """去年 今年 明年 当年 近年 多年 每年 前年 后年 往年 早年 晚年 同年 次年 翌年 当时 今天 昨天 明天 现在
    以前 以后 目前"""
)
_LOCATIVE_PREPOSITIONS = frozenset("在于到至往赴抵从自")
_CHINESE_PLACE_SUFFIXES = tuple("城州郡县省市镇村关")

# ------------------------------------------------------------------------------------------ patterns
_TOKEN_RE = re.compile(r"[^\W_](?:\w|['’\-.&](?=[^\W_]))*")
_QUOTED_RE = re.compile(r"“([^”\n]{2,60})”|\"([^\"\n]{2,60})\"|《([^》\n]{1,40})》|「([^」\n]{1,40})」")
_SENTENCE_ENDS = tuple(".!?。！？…")
_CLAUSE_SPLIT_RE = re.compile(r"(?<=;)\s+")
_PARENTHETICAL_RE = re.compile(r"\s*\([^)]*\)\s*$")
_NEXT_WORD_RE = re.compile(r"\s+([a-z]+)\b")
_AFTER_COMMA_RE = re.compile(r",\s*([A-Z][a-z]+(?: [A-Z][a-z]+)?)")
_TIME_WORD_RE = re.compile(r"[\d年月日世纪朝代]")
_ERA_YEAR_RE = re.compile(r"[元一二三四五六七八九十]+年")
_TWO_HAN_RE = re.compile(r"[\u4e00-\u9fff]{2}")


_Token = tuple[str, int, int]  # word, start, end


@dataclass
class _Phrase:
    tokens: list[_Token]
    sentence_initial: bool
    after_honorific: bool
    preceding: tuple[str, str]  # the two words before the phrase, lower-cased, nearest last
    following_text: str

    @property
    def words(self) -> list[str]:
        return [token[0] for token in self.tokens]

    def name(self, text: str) -> str:
        """The phrase as written ("J. R. R. Tolkien", "Johnson & Johnson"), possessive removed."""
        name = text[self.tokens[0][1] : self.tokens[-1][2]]
        return name[:-2] if name.endswith(("'s", "’s")) else name


def _is_capitalized(word: str, next_word: str = "") -> bool:
    first = word[0]
    if first.isupper():
        lowered = word.lower()
        if lowered in _ERA_MARKERS:
            return False  # "1st century BC" is a time, handled by the year rules
        if lowered in _MONTHS or lowered in _DAY_NAMES or lowered[:-1] in _DAY_NAMES:
            # "Jan Philip Solovej", "May Britt": a month that is also a first name, before a name
            return lowered in _MONTH_FIRST_NAMES and bool(next_word) and _is_capitalized(next_word)
        return True
    return first.isdigit() and any(ch.isupper() for ch in word)  # 3M, 302.AI


def _capitalized_phrases(text: str) -> list[_Phrase]:
    """Runs of capitalised words joined by spaces, inner connectors (of, the, de, ...) and '&'."""
    tokens: list[_Token] = [(m.group(), m.start(), m.end()) for m in _TOKEN_RE.finditer(text)]
    phrases: list[_Phrase] = []
    i = 0
    while i < len(tokens):
        word, start, _ = tokens[i]
        if not _is_capitalized(word, tokens[i + 1][0] if i + 1 < len(tokens) else ""):
            i += 1
            continue
        j = i + 1
        while j < len(tokens):
            previous_word = tokens[j - 1][0]
            gap = text[tokens[j - 1][2] : tokens[j][1]]
            candidate = tokens[j][0]
            initial = gap == ". " and len(previous_word) == 1 and previous_word.isupper()  # J. R. R. Tolkien
            after = tokens[j + 1][0] if j + 1 < len(tokens) else ""
            if (gap == " " or initial or gap.strip() == "&") and _is_capitalized(candidate, after):
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
                    j = k + 1
                    continue
            break
        gap_before = text[tokens[i - 1][2] : start] if i else text[:start]
        before = [t[0].lower() for t in tokens[max(0, i - 3) : i] if t[0].lower() != "the"][-2:]
        preceding = (before[-2] if len(before) >= 2 else "", before[-1] if before else "")
        honorific = preceding[1] in _HONORIFICS and gap_before.strip() in ("", ".")
        sentence_initial = i == 0 or (not honorific and any(c in '.!?:;"“(\n' for c in gap_before))
        following = text[tokens[j - 1][2] : tokens[j - 1][2] + 40]
        phrases.append(_Phrase(tokens[i:j], sentence_initial, honorific, preceding, following))
        i = j
    return phrases


def _split_phrase(phrase: _Phrase) -> list[_Phrase]:
    """Cut a capitalised run into the names it holds (see the two helpers below)."""
    return [part for piece in _split_weak_connectors(phrase) for part in _split_person_of_organization(piece)]


def _split_weak_connectors(phrase: _Phrase) -> list[_Phrase]:
    """Split at and/for/on unless the left side is an organization and the right side is not.

    "Carl Rogers and Abraham Maslow": two names; "Department of Science and Technology": one;
    "University of Chicago and Harvard University": two.
    """
    tokens = phrase.tokens
    cuts = [i for i, token in enumerate(tokens) if token[0].lower() in _ORGANIZATION_ONLY_CONNECTORS]
    if not cuts:
        return [phrase]
    groups: list[list[int]] = []
    for begin, end in zip([0] + [c + 1 for c in cuts], [*cuts, len(tokens)], strict=True):
        is_organization = any(t[0].lower() in _ORGANIZATION_WORDS for t in tokens[begin:end])
        if begin == end:
            continue
        if groups and groups[-1][2] and not is_organization:
            groups[-1][1] = end
        else:
            groups.append([begin, end, is_organization])
    return [
        _Phrase(
            tokens[begin:end],
            phrase.sentence_initial and number == 0,
            phrase.after_honorific and number == 0,
            phrase.preceding if number == 0 else ("", tokens[begin - 1][0].lower()),
            phrase.following_text if number == len(groups) - 1 else "",
        )
        for number, (begin, end, _) in enumerate(groups)
    ]


def _split_person_of_organization(phrase: _Phrase) -> list[_Phrase]:
    """ "Li Yujie of Henan University" is a person and a university; "Bank of America" is one name."""
    lowered = [w.lower() for w in phrase.words]
    if "of" not in lowered:
        return [phrase]
    head = phrase.tokens[: lowered.index("of")]
    head_words = [t[0] for t in head]
    if (
        len(head) < 2
        or not _looks_like_person_name(head_words)
        or any(w.lower() in _PLACE_OR_GROUP for w in head_words)
    ):
        return [phrase]
    tail = _Phrase(phrase.tokens[len(head) + 1 :], False, False, ("", "of"), phrase.following_text)
    return [_Phrase(head, phrase.sentence_initial, phrase.after_honorific, phrase.preceding, ""), tail]


def _clean_phrase(phrase: _Phrase) -> _Phrase | None:
    tokens = list(phrase.tokens)
    stripped = False
    while tokens and (tokens[0][0].lower() in _FUNCTION_WORDS or tokens[0][0].lower() in _HONORIFICS):
        head = tokens[0][0].lower()
        if head in _HONORIFICS:
            if len(tokens) == 1:
                return None  # "Dr" of "Dr. Carl Rogers": the name follows as its own phrase
            if tokens[1][0].lower() in _CONNECTORS:
                break  # "President of the United States": a title, keep it whole
            phrase.after_honorific = True
        phrase.preceding = (phrase.preceding[1], head)
        tokens.pop(0)
        stripped = True
    while tokens and (tokens[-1][0].lower() in _CONNECTORS or tokens[-1][0] == "&"):
        tokens.pop()
    if not tokens or all(t[0].lower() in _FUNCTION_WORDS for t in tokens):
        return None
    phrase.tokens = tokens
    phrase.sentence_initial = phrase.sentence_initial and not stripped
    return phrase


def _looks_like_person_name(words: list[str]) -> bool:
    name_words = [w for w in words if w.lower() not in _NAME_PARTICLES]
    if len(name_words) >= 2 and (
        name_words[-1].lower() in _NAME_SUFFIXES or _ROMAN_RE.fullmatch(name_words[-1])
    ):
        return True  # Blue Demon Jr., Henry VIII's son
    return (
        2 <= len(name_words) <= 4
        and not any(w.lower().endswith(_NON_NAME_SUFFIXES) for w in name_words)
        and all(
            w[0].isupper() and (len(w) == 1 or not w.isupper()) and re.sub(r"['’-]", "", w).isalpha()
            for w in name_words
        )
        and not any(w.lower() in _NON_NAME_WORDS for w in name_words)
    )


def _classify(phrase: _Phrase, name: str) -> str:
    lowered = [w.lower().rstrip(".") for w in phrase.words]
    if any(w in _ORGANIZATION_WORDS for w in lowered):
        return "organization"
    if name.lower() in _GAZETTEER or any(w in _LOCATION_WORDS for w in lowered[1:]):
        return "location"
    if len(lowered) >= 2 and (
        lowered[0] in _LOCATION_PREFIXES
        or (lowered[1] == "of" and lowered[0] in _PLACE_NOUNS | _LOCATION_WORDS)
    ):
        return "location"  # New Haven, Fort Worth, City of London, Kingdom of Denmark
    before, last = phrase.preceding
    next_word = _NEXT_WORD_RE.match(phrase.following_text)
    used_as_noun = next_word is None or next_word.group(1) in _FUNCTION_WORDS  # not "in Chinese mythology"
    demonym = len(lowered) == 1 and lowered[0].endswith(_DEMONYM_SUFFIXES)  # "in Akkadian and Sumerian myths"
    if used_as_noun and not demonym and (last in _LOCATION_CUES or (last == "of" and before in _PLACE_NOUNS)):
        return "location"  # in Chicago, the city of Chicago
    after_comma = _AFTER_COMMA_RE.match(phrase.following_text)
    if after_comma is not None and after_comma.group(1).lower() in _GAZETTEER:
        return "location"  # Oak Park, Illinois
    if phrase.after_honorific:
        return "person"
    if "&" in name:
        return "topic"  # Peace & Love, Simon & Schuster: not one person
    return "person" if _looks_like_person_name(phrase.words) else "topic"


_Found = tuple[_Phrase, str, str, str]  # cleaned phrase, name as written, key type, uncleaned name


def _analyse(text: str) -> tuple[list[_Found], frozenset[str], tuple[str, ...]]:
    """Typed phrases of ``text``, the words it capitalises other than at a sentence start, its persons."""
    found: list[_Found] = []
    capitalized: set[str] = set()
    persons: list[str] = []
    for raw in _capitalized_phrases(text):
        for phrase in _split_phrase(raw):
            if not phrase.sentence_initial or len(phrase.tokens) > 1:
                capitalized.update(phrase.words)
            uncleaned = phrase.name(text)
            cleaned = _clean_phrase(phrase)
            if cleaned is None:
                continue
            name = cleaned.name(text)
            key_type = _classify(cleaned, name)
            found.append((cleaned, name, key_type, uncleaned))
            if key_type == "person" and len(cleaned.tokens) >= 2:
                persons.append(name)
    return found, frozenset(capitalized), tuple(persons)


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
    while len(words) > 1 and words[0].lower() in _FUNCTION_WORDS and words[1].lower() not in _FUNCTION_WORDS:
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
        initial_only = single and phrase.sentence_initial and word.isalpha() and not word.isupper()
        if initial_only and word not in evidence:
            continue  # "Born", "Critics": capitalised only because a sentence starts there
        if key_type in ("topic", "person") and single:
            full = next((p for p in known_persons if name in (p.split()[-1], p.split()[0])), None)
            if full is not None:
                key_type, name = "person", full  # "Rogers" after "Carl Rogers"
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


def _chinese_keys(text: str, candidates: _Candidates) -> None:
    pairs = [(p.word, p.flag) for p in load_jieba_posseg().lcut(text)]
    for index, (word, flag) in enumerate(pairs):
        if flag == "t":
            if word in _CHINESE_RELATIVE_TIMES or not _TIME_WORD_RE.search(word):
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
        following_word, following_flag = pairs[index + 1] if index + 1 < len(pairs) else ("", "x")
        if following_flag == "t" and _ERA_YEAR_RE.fullmatch(following_word):
            continue  # 建安 of 建安五年: the era year is the key
        key_type, priority = mapped
        after_locative = index > 0 and pairs[index - 1][0] in _LOCATIVE_PREPOSITIONS
        if key_type == "person" and (
            word.endswith(_CHINESE_PLACE_SUFFIXES)
            or (after_locative and (following_flag.startswith("v") or following_flag == "x"))
        ):
            key_type, priority = (
                "location",
                _NAMED,
            )  # 在官渡展开, 病逝于白帝城: jieba says name, grammar says place
        elif key_type == "topic" and after_locative and following_flag.startswith("v"):
            key_type, priority = "location", _NAMED  # 在赤壁迎战
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
                candidates.add(_SUBJECT, "topic", name)
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
            _chinese_keys(text, candidates)
        ranked = sorted(candidates.items, key=lambda item: item[0])  # stable: discovery order within a rank
        return [key for _, key in ranked[: self.max_keys_per_event]]

    def extract(self, chunk: Chunk, *, summary: str = "", doc_title: str = "") -> list[EventDraft]:
        """Events with their keys filled in: ``events`` then ``keys`` for each."""
        events = self.events(chunk, summary=summary, doc_title=doc_title)
        for event in events:
            event.keys = self.keys(event, summary=summary, doc_title=doc_title, chunk_title=chunk.title)
        return events

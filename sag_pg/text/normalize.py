"""Key normalisation ("one key per meaning", sag-algorithm §1.3); numbers, years and dates for key values.

``normalize_key`` is the identity used to merge keys: width, case, spacing, punctuation and accent variants
of one name collapse to one string. It only removes *spelling* noise; "ai302" vs "302ai" or 曹孟德 vs 曹操
are different strings, aligned by synonym tables here or by trigram/vector similarity in SQL.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from datetime import UTC, datetime
from functools import lru_cache

__all__ = [
    "NormalizedSynonyms",
    "find_date",
    "find_years",
    "normalize_key",
    "normalize_synonyms",
    "parse_chinese_numeral",
    "parse_number",
    "parse_year",
]

_MAX_SYNONYM_HOPS = 8
_PLAIN_ASCII_RE = re.compile(r"[A-Za-z0-9 ]*")


class NormalizedSynonyms(dict[str, str]):
    """A synonym table whose keys and values are already normalised (see :func:`normalize_synonyms`)."""


def normalize_synonyms(synonyms: Mapping[str, str]) -> NormalizedSynonyms:
    """Normalise a synonym table once, so :func:`normalize_key` can use it without re-normalising."""
    table = NormalizedSynonyms()
    for variant, canonical in synonyms.items():
        key, value = _normalize_spelling(variant), _normalize_spelling(canonical)
        if key and value and key != value:
            table[key] = value
    return table


@lru_cache(maxsize=4096)
def _fold_latin(ch: str) -> str:
    """A Latin letter without its diacritics ("é" -> "e", "ō" -> "o"); any other character unchanged."""
    if not unicodedata.name(ch, "").startswith("LATIN "):
        return ch
    base = "".join(c for c in unicodedata.normalize("NFD", ch) if unicodedata.category(c)[0] != "M")
    return base or ch


def _normalize_spelling(name: str) -> str:
    if _PLAIN_ASCII_RE.fullmatch(name):
        return "".join(name.lower().split())  # the common case ("Carl Rogers"), 10x faster
    text = unicodedata.normalize("NFKC", name).casefold()
    if not text.isascii():
        text = "".join(_fold_latin(ch) if not ch.isascii() else ch for ch in text)
    kept: list[str] = []
    last = len(text) - 1
    for index, ch in enumerate(text):
        if ch.isalnum() or unicodedata.category(ch)[0] == "M":
            kept.append(ch)
        elif ch in "+#" and kept and (kept[-1].isalpha() or kept[-1] in "+#"):
            kept.append(ch)  # C++, C#, F# are not C
        elif ch == "." and kept and kept[-1].isdigit() and index < last and text[index + 1].isdigit():
            kept.append(ch)  # 3.5 is not 35 (but "1,234" is 1234 and "302.AI" is 302ai)
        elif ch == "%" and kept and kept[-1].isdigit():
            kept.append(ch)
        # everything else (whitespace of any width, punctuation, symbols, controls) is spelling noise
    return "".join(kept)


def normalize_key(name: str, synonyms: Mapping[str, str] | None = None) -> str:
    """The identity of a key name: NFKC, casefolded, Latin letters without diacritics, without whitespace and
    punctuation, synonyms applied.

    "302.AI", "302ai", "302 AI" and "３０２ＡＩ" all give ``"302ai"``; "New York" and "new-york" give
    ``"newyork"``; "Aschenbrödel" and "Aschenbrodel" give ``"aschenbrodel"`` (texts and questions often drop
    accents). Spaces are removed rather than collapsed: keeping them would make "New York" and
    "New-York" differ. Kept on purpose: letters and digits of every script (CJK included), combining
    marks (except those of Latin letters), "+"/"#" after a letter (C++, C#), "." between digits (3.5) and "%" after a digit.
    Synonyms map variant → canonical; both sides are normalised too, chains are followed.
    An input with no letters or digits gives ``""``; callers should drop such keys.
    """
    key = _normalize_spelling(name)
    if not synonyms or not key:
        return key
    table = synonyms if isinstance(synonyms, NormalizedSynonyms) else normalize_synonyms(synonyms)
    seen = {key}
    for _ in range(_MAX_SYNONYM_HOPS):
        canonical = table.get(key)
        if canonical is None or canonical in seen:
            break
        key = canonical
        seen.add(key)
    return key


# ------------------------------------------------------------------------------------------- numbers

_CHINESE_DIGITS = {
    "零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8,
    "九": 9, "壹": 1, "贰": 2, "貳": 2, "叁": 3, "參": 3, "肆": 4, "伍": 5, "陆": 6, "陸": 6, "柒": 7,
    "捌": 8, "玖": 9,
}  # fmt: skip
_CHINESE_SMALL_UNITS = {"十": 10, "拾": 10, "百": 100, "佰": 100, "千": 1000, "仟": 1000}
_CHINESE_BIG_UNITS = {"万": 10**4, "萬": 10**4, "亿": 10**8, "億": 10**8}

# Optional sign, digits with optional thousands groups (comma, space or thin space), optional fraction,
# optional exponent, then an optional 万/亿 multiplier or percent sign. No "nan"/"inf": float() would.
_ARABIC_NUMBER_RE = re.compile(
    r"([+-]?)(\d{1,3}(?:[, \u202f]\d{3})+|\d+)?(?:\.(\d+))?(?:[eE]([+-]?\d+))?\s*([万萬亿億%])?"
)


def parse_chinese_numeral(text: str) -> int | None:
    """二〇〇八 → 2008, 两千零八 → 2008, 一百二十三 → 123, 三万五千 → 35000, 十二 → 12; else None."""
    if not text:
        return None
    if len(text) > 1 and all(ch in _CHINESE_DIGITS for ch in text):
        return int("".join(str(_CHINESE_DIGITS[ch]) for ch in text))  # read digit by digit, like a year
    total = section = digit = 0
    for ch in text:
        if ch in _CHINESE_DIGITS:
            digit = _CHINESE_DIGITS[ch]
        elif ch in _CHINESE_SMALL_UNITS:
            unit = _CHINESE_SMALL_UNITS[ch]
            section += (digit or (1 if unit == 10 else 0)) * unit  # 十二 = 12: a bare 十 means 一十
            digit = 0
        elif ch in _CHINESE_BIG_UNITS:
            unit = _CHINESE_BIG_UNITS[ch]
            section += digit
            total = (total + section) * unit if unit == 10**8 else total + section * unit
            section = digit = 0
        else:
            return None
    return total + section + digit


def parse_number(text: str) -> float | None:
    """A number written as the whole of ``text``, or None.

    Accepts "1,234", "1 234", "-3.5", "1e5", "１２３" (full width), "3.5万" (×10⁴), "2亿" (×10⁸),
    Chinese numerals (二〇〇八, 一百二十三) and percentages: "45%" → 45.0, the number as written, because
    the key's name keeps the unit and a filter like ``value > 40`` reads naturally. Currency signs,
    units and ranges ("3 km", "$5", "1990-1995") are not numbers here: None.
    """
    text = unicodedata.normalize("NFKC", text).strip().replace("\u2212", "-")
    if not text:
        return None
    match = _ARABIC_NUMBER_RE.fullmatch(text)
    if match is not None and (match.group(2) or match.group(3)):
        sign, integer, fraction, exponent, suffix = match.groups()
        literal = (integer or "0").replace(",", "").replace(" ", "").replace("\u202f", "")
        if fraction:
            literal += "." + fraction
        if exponent:
            literal += "e" + exponent
        value = float(literal)
        if suffix and suffix != "%":
            value *= _CHINESE_BIG_UNITS[suffix]
        return -value if sign == "-" else value
    chinese = parse_chinese_numeral(text)
    return float(chinese) if chinese is not None else None


_CHINESE_YEAR_RE = re.compile(
    r"(公元前|西元前|公元|西元)?\s*(\d{1,4}|[〇零一二三四五六七八九两十百千]{1,6})\s*(年)?"
)
_ENGLISH_YEAR_RE = re.compile(
    r"(?:(AD|A\.D\.|CE|C\.E\.)\s*)?(\d{1,4})(?:\s*(BC|B\.C\.|BCE|B\.C\.E\.|AD|A\.D\.|CE|C\.E\.))?",
    re.IGNORECASE,
)
_BARE_YEAR_MIN, _BARE_YEAR_MAX = 1000, 2099


def parse_year(text: str) -> int | None:
    """The year written as the whole of ``text`` (negative = BC), or None.

    "1999", "1999年", "公元200年" → 200, "公元前221年" → -221, "二〇〇八年" → 2008, "200 BC" → -200,
    "AD 200" → 200. A bare number is a year only within 1000–2099 ("200" alone is just a number);
    Chinese numerals need 年 and digit-by-digit form ("五年" is "five years", not the year 5).
    """
    text = unicodedata.normalize("NFKC", text).strip()
    if not text:
        return None
    match = _CHINESE_YEAR_RE.fullmatch(text)
    if match is not None:
        era, number, nian = match.groups()
        if number.isdigit():
            year = int(number)
            marked = bool(era) or (nian is not None and len(number) >= 3)
        else:
            parsed = parse_chinese_numeral(number)
            if parsed is None:
                return None
            year = parsed
            digit_by_digit = all(ch in _CHINESE_DIGITS for ch in number) and len(number) >= 3
            marked = bool(era) or (nian is not None and digit_by_digit)
        if not marked and not (number.isdigit() and _BARE_YEAR_MIN <= year <= _BARE_YEAR_MAX):
            return None
        if year == 0:
            return None
        return -year if era and era.endswith("前") else year
    match = _ENGLISH_YEAR_RE.fullmatch(text)
    if match is None:
        return None
    before, number, after = match.groups()
    year = int(number)
    if year == 0 or (before and after):
        return None
    if not before and not after and not (_BARE_YEAR_MIN <= year <= _BARE_YEAR_MAX):
        return None
    return -year if after and after.upper().startswith("B") else year


# --------------------------------------------------------------------------------------------- dates

_MONTH_NUMBERS = {
    "january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6, "july": 7, "august": 8,
    "september": 9, "october": 10, "november": 11, "december": 12, "jan": 1, "feb": 2, "mar": 3, "apr": 4,
    "jun": 6, "jul": 7, "aug": 8, "sep": 9, "sept": 9, "oct": 10, "nov": 11, "dec": 12,
}  # fmt: skip
_MONTH = (
    r"(Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?"
    r"|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)"
)
_HAN_DIGITS = "〇零一二三四五六七八九"
# (pattern, the groups holding year, month, day)
_DATE_PATTERNS: tuple[tuple[re.Pattern[str], tuple[int, int, int]], ...] = (
    (re.compile(r"(?<![\d.])(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})(?![\d.])"), (1, 2, 3)),  # 1999-03-03
    (re.compile(r"(\d{4})\s*年\s*(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]"), (1, 2, 3)),  # 1999年3月3日
    (
        re.compile(f"([{_HAN_DIGITS}]{{4}})年([{_HAN_DIGITS}十]{{1,3}})月([{_HAN_DIGITS}十]{{1,3}})[日号]"),
        (1, 2, 3),
    ),
    (re.compile(rf"\b{_MONTH}\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b"), (3, 1, 2)),  # March 3, 1999
    (
        re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}\.?,?\s+(\d{{4}})\b"),
        (3, 2, 1),
    ),  # 3 March 1999
)


def _date_part(part: str) -> int:
    if part.isdigit():
        return int(part)
    month = _MONTH_NUMBERS.get(part.lower().rstrip("."))
    if month is not None:
        return month
    return parse_chinese_numeral(part) or 0


def find_date(text: str) -> datetime | None:
    """The first explicit full date in ``text`` as midnight UTC, or None.

    Recognised: 1999-03-03 (also / and .), 1999年3月3日, 二〇〇八年八月八日, March 3, 1999 / Mar. 3rd 1999,
    3 March 1999 / 3rd of March, 1999. Impossible dates (1999-02-30) are skipped. A bare year or a
    month and year is not a date: it stays a ``time`` key.
    """
    best: tuple[int, datetime] | None = None
    for pattern, (year_group, month_group, day_group) in _DATE_PATTERNS:
        for match in pattern.finditer(text):
            if best is not None and match.start() >= best[0]:
                break
            year, month, day = (_date_part(match.group(g)) for g in (year_group, month_group, day_group))
            try:
                best = (match.start(), datetime(year, month, day, tzinfo=UTC))
                break
            except ValueError:
                continue
    return best[1] if best is not None else None


_YEAR_IN_TEXT_RE = re.compile(
    r"(?<![\w.,$€£¥-])(1\d{3}|20\d{2})(s)?(?![\w%]|[.,]\d)"
)  # not $1999, 1999%, 1,999
_BC_YEAR_RE = re.compile(r"\b(\d{1,4})\s?(?:BC|BCE|B\.C\.(?:E\.)?)(?!\w)")
_AD_YEAR_RE = re.compile(r"\b(?:AD|A\.D\.)\s?(\d{1,4})\b")
_CHINESE_YEAR_IN_TEXT_RE = re.compile(f"(公元前|公元|西元前|西元)?(\\d{{1,4}}|[{_HAN_DIGITS}]{{3,4}})年")


def find_years(text: str) -> list[tuple[str, float]]:
    """Years mentioned in ``text`` as (surface form, value): era-marked first, then plain, then Chinese.

    "200 BC" → -200.0, "AD 14" → 14.0, "1999" → 1999.0, "the 1990s" → ("1990s", 1990.0),
    "公元200年" → 200.0, "二〇〇八年" → 2008.0. Plain numbers count only within 1000–2099 and not as
    money, percentages or parts of bigger numbers; "1200 BC" is not also the year 1200.
    """
    found: list[tuple[str, float]] = []
    era_spans: list[tuple[int, int]] = []
    for pattern, sign in ((_BC_YEAR_RE, -1.0), (_AD_YEAR_RE, 1.0)):
        for match in pattern.finditer(text):
            found.append((match.group(), sign * float(match.group(1))))
            era_spans.append(match.span())
    for match in _YEAR_IN_TEXT_RE.finditer(text):
        if not any(begin <= match.start() < end for begin, end in era_spans):
            found.append((match.group(), float(match.group(1))))
    if not text.isascii():
        for match in _CHINESE_YEAR_IN_TEXT_RE.finditer(text):
            year = parse_year(match.group())
            if year is not None:
                found.append((match.group(), float(year)))
    return found

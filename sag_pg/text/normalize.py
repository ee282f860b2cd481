"""Key normalisation ("one key per meaning", sag-algorithm §1.3) and number/year parsing for key values.

``normalize_key`` is the identity used to merge keys: width, case, spacing and punctuation variants of
one name collapse to one string. It only removes *spelling* noise; "ai302" vs "302ai" or 曹孟德 vs 曹操
are different strings, aligned by synonym tables here or by trigram/vector similarity in SQL.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping

__all__ = [
    "NormalizedSynonyms",
    "normalize_key",
    "normalize_synonyms",
    "parse_chinese_numeral",
    "parse_number",
    "parse_year",
]

_MAX_SYNONYM_HOPS = 8


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


def _normalize_spelling(name: str) -> str:
    text = unicodedata.normalize("NFKC", name).casefold()
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
    """The identity of a key name: NFKC, casefolded, without whitespace and punctuation, synonyms applied.

    "302.AI", "302ai", "302 AI" and "３０２ＡＩ" all give ``"302ai"``; "New York" and "new-york" give
    ``"newyork"``. Spaces are removed rather than collapsed: keeping them would make "New York" and
    "New-York" differ. Kept on purpose: letters and digits of every script (CJK included), combining
    marks, "+"/"#" after a letter (C++, C#), "." between digits (3.5) and "%" after a digit.
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


_CHINESE_YEAR_RE = re.compile(r"(公元前|西元前|公元|西元)?\s*(\d{1,4}|[〇零一二三四五六七八九两十百千]{1,6})\s*(年)?")
_ENGLISH_YEAR_RE = re.compile(
    r"(?:(AD|A\.D\.|CE|C\.E\.)\s*)?(\d{1,4})(?:\s*(BC|B\.C\.|BCE|B\.C\.E\.|AD|A\.D\.|CE|C\.E\.))?", re.IGNORECASE
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

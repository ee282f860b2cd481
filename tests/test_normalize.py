"""Key identity and value parsing (sag_pg.text.normalize)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from sag_pg.text.normalize import (
    NormalizedSynonyms,
    find_date,
    normalize_key,
    normalize_synonyms,
    parse_chinese_numeral,
    parse_number,
    parse_year,
)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("302.AI", "302ai"),
        ("302ai", "302ai"),
        ("302 AI", "302ai"),
        ("３０２ＡＩ", "302ai"),  # full width
        ("302\u00a0AI", "302ai"),  # no-break space
        ("ai302", "ai302"),  # a different string: aligned by similarity in SQL, not here
        ("New York", "newyork"),
        ("new-york", "newyork"),
        ("U.S.", "us"),
        ("Ｃａｒｌ\u3000Ｒｏｇｅｒｓ", "carlrogers"),
        ("曹 操", "曹操"),
        ("《三国演义》", "三国演义"),
        ("Straße", "strasse"),  # casefold
        ("C++", "c++"),
        ("C#", "c#"),
        ("#hashtag", "hashtag"),
        ("3.5", "3.5"),
        ("35", "35"),
        ("1,234", "1234"),
        ("50 %", "50%"),
        ("hindi हिन्दी", "hindiहिन्दी"),  # marks of other scripts are part of the letter
        ("Aschenbrödel", "aschenbrodel"),  # Latin diacritics go: questions often drop them
        ("Aschenbrodel", "aschenbrodel"),
        ("Akinoshū Kenji", "akinoshukenji"),
        ("Île-de-France", "iledefrance"),
        ("Jime\u0301nez", "jimenez"),  # decomposed accent
        ("Ørsted", "ørsted"),  # no decomposition: a letter of its own
        ("Ελλάδα", "ελλάδα"),  # Greek keeps its accents
        ("!!!", ""),
        ("", ""),
        ("  \t\n", ""),
        ("a\x00b\x07c", "abc"),
    ],
)
def test_normalize_key(name: str, expected: str) -> None:
    assert normalize_key(name) == expected


def test_synonyms_are_normalised_on_both_sides() -> None:
    synonyms = {"曹孟德": "曹操", "Mr. X": "X Y", "302 AI": "302.AI Inc."}
    assert normalize_key("曹孟德", synonyms) == "曹操"
    assert normalize_key("mr x", synonyms) == "xy"
    assert normalize_key("302ai", synonyms) == "302aiinc"
    assert normalize_key("刘备", synonyms) == "刘备"


def test_synonym_chains_are_followed_and_cycles_stop() -> None:
    assert normalize_key("a", {"a": "b", "b": "c"}) == "c"
    assert normalize_key("a", {"a": "b", "b": "a"}) == "b"


def test_pre_normalised_synonym_table() -> None:
    table = normalize_synonyms({"孔明": "诸葛亮", "Kong Ming": "诸葛亮", "same": "SAME", "": "x"})
    assert isinstance(table, NormalizedSynonyms)
    assert dict(table) == {"孔明": "诸葛亮", "kongming": "诸葛亮"}
    assert normalize_key("KONG-MING", table) == "诸葛亮"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1,234", 1234.0),
        ("1 234 567", 1234567.0),
        ("3.5", 3.5),
        ("-3.5", -3.5),
        ("\u22123.5", -3.5),  # minus sign
        (".5", 0.5),
        ("1e5", 100000.0),
        ("１２３", 123.0),
        ("45%", 45.0),  # the number as written; the unit stays in the key name
        ("3.5万", 35000.0),
        ("2亿", 200000000.0),
        ("二〇〇八", 2008.0),
        ("两千零八", 2008.0),
        ("一百二十三", 123.0),
        ("三万五千", 35000.0),
        ("十二", 12.0),
        ("一万亿", 1e12),
        ("nan", None),
        ("inf", None),
        ("1,23", None),
        ("1.", None),
        ("3 km", None),
        ("$5", None),
        ("1990-1995", None),
        ("", None),
        ("abc", None),
    ],
)
def test_parse_number(text: str, expected: float | None) -> None:
    assert parse_number(text) == expected


def test_parse_chinese_numeral() -> None:
    assert parse_chinese_numeral("二〇〇八") == 2008
    assert parse_chinese_numeral("十") == 10
    assert parse_chinese_numeral("零") == 0
    assert parse_chinese_numeral("曹操") is None
    assert parse_chinese_numeral("") is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1999", 1999),
        ("1999年", 1999),
        ("公元200年", 200),
        ("公元前221年", -221),
        ("二〇〇八年", 2008),
        ("208年", 208),
        ("200 BC", -200),
        ("44 B.C.", -44),
        ("AD 200", 200),
        ("五年", None),  # "five years", not the year 5
        ("200", None),  # a bare number is a year only within 1000–2099
        ("2100", None),
        ("0", None),
        ("公元0年", None),
        ("AD 200 BC", None),
        ("spring 1999", None),
        ("", None),
    ],
)
def test_parse_year(text: str, expected: int | None) -> None:
    assert parse_year(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Carl Rogers was born on January 8, 1902 in Oak Park.", (1902, 1, 8)),
        ("born 30 July 1970 in London", (1970, 7, 30)),
        ("the 3rd of March, 1999", (1999, 3, 3)),
        ("Mar. 3rd 1999", (1999, 3, 3)),
        ("released 1999-03-03", (1999, 3, 3)),
        ("released 1999/3/4", (1999, 3, 4)),
        ("2008年8月8日，北京奥运会开幕", (2008, 8, 8)),
        ("二〇〇八年八月八日开幕", (2008, 8, 8)),
        ("1999-02-30 was no day, 2000-01-05 was", (2000, 1, 5)),
        ("12 Feb 2001 and then 1999-01-01", (2001, 2, 12)),
        ("in March 1999", None),
        ("in 1999", None),
        ("version 1.2.3.4", None),
        ("", None),
    ],
)
def test_find_date(text: str, expected: tuple[int, int, int] | None) -> None:
    found = find_date(text)
    if expected is None:
        assert found is None
    else:
        assert found == datetime(*expected, tzinfo=UTC)
        assert found.tzinfo is not None

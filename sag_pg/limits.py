"""The bounds of what a user gives: numbers (CLI options, the client's arguments, MCP tool arguments), the
length of a question, the depth of JSON, and the characters a name may hold.

The SQL functions take ``integer`` parameters; a Python int above 2**31 - 1 reaches them as ``bigint`` and
matches no function (``UndefinedFunction … top_n => bigint``), so the numbers are checked before any SQL
runs and refused with the parameter's name.  ``MAX_TOP_N`` bounds the results of one search, recall or ask:
the SQL multiplies it (``sag.dataflow_search`` reads 4 × top_n candidates), and no reader pages through more.

``MAX_QUESTION_CHARS`` bounds a question (search, ask, recall, MCP's tools, psql's ``sag.search``): every step of
a search is linear in it, but a question of a whole document's size is not a question, and the statement
timeout of a search would be spent on it.  ``sag_internal._max_question_chars()`` holds the same number for
SQL (tests/test_question_limits.py checks both agree).

``MAX_JSON_DEPTH`` bounds the nesting of the JSON sag-pg reads (document metadata, synonym tables): deeper
values would exceed Python's recursion limit when printed (``show --json``) or copied.

Source names and document URIs are printed on one line in every message and listing: :func:`check_name`
refuses control characters (newline, CR, BEL, ESC, …), line and paragraph separators, and the bidirectional
formatting characters that make a printed name read as another (U+202E …).
"""

from __future__ import annotations

import re
import sys
import unicodedata
from typing import Any

from .errors import InputError, QueryError

INT4_MAX = 2**31 - 1
MAX_TOP_N = 10_000
MAX_QUESTION_CHARS = 4_000
MAX_JSON_DEPTH = 100

# Bidirectional formatting characters (Unicode's Bidi_Control): ALM, LRM, RLM, LRE..RLO, LRI..PDI.
_BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_FAST_OK = re.compile(r"[\x20-\x7e]*")


def check_int(name: str, value: object, low: int, high: int = INT4_MAX) -> int:
    """``value`` if it is a whole number from ``low`` to ``high``; else QueryError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise QueryError(f"{name} must be a whole number from {low} to {high}, got {value!r}")
    return value


def check_question(question: str, what: str = "question") -> str:
    """``question`` if it is at most :data:`MAX_QUESTION_CHARS` characters; else QueryError saying so."""
    if isinstance(question, str) and len(question) > MAX_QUESTION_CHARS:
        raise QueryError(f"the {what} is {len(question):,} characters long; the maximum is "
                         f"{MAX_QUESTION_CHARS:,} (sag_pg.limits.MAX_QUESTION_CHARS)")
    return question


def name_problem(value: str) -> str | None:
    """Why ``value`` cannot be a source name or a URI (a control, separator or bidi character), or None."""
    if _FAST_OK.fullmatch(value):
        return None
    for at, char in enumerate(value):
        if char in _BIDI_CONTROLS:
            return f"holds a bidirectional formatting character (U+{ord(char):04X} at character {at})"
        category = unicodedata.category(char)
        if category == "Cc":
            return f"holds a control character (U+{ord(char):04X} at character {at})"
        if category in ("Zl", "Zp"):
            return f"holds a line or paragraph separator (U+{ord(char):04X} at character {at})"
        if category == "Cs":
            return f"holds a lone surrogate (U+{ord(char):04X} at character {at})"
    return None


def _bad_char(char: str) -> bool:
    return char in _BIDI_CONTROLS or unicodedata.category(char) in ("Cc", "Zl", "Zp", "Cs")


def one_line(value: str) -> str:
    """``value`` with every character :func:`name_problem` refuses written as an escape (``\\n``, ``\\x07``,
    ``\\u202e``): what a listing prints of a name stored before names were checked."""
    if _FAST_OK.fullmatch(value):
        return value
    return "".join(char.encode("unicode_escape", "backslashreplace").decode("ascii") if _bad_char(char) else char
                   for char in value)


def check_name(what: str, value: str) -> str:
    """``value`` if it can be printed on one line as it reads; else InputError naming ``what``."""
    problem = name_problem(value)
    if problem is not None:
        raise InputError(f"{what} '{one_line(value)}' {problem}: names and URIs must print on one line")
    return value


def json_depth_problem(value: Any, limit: int = MAX_JSON_DEPTH) -> str | None:
    """``"nested more than N levels deep"`` when ``value`` (JSON: dicts, lists) nests deeper than ``limit``;
    walked without recursion, so any depth is measured."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        if depth >= limit:
            return f"nested more than {limit} levels deep"
        stack.extend((child, depth + 1) for child in children)
    return None


def json_number_error(exc: ValueError) -> str:
    """The message of json's ValueError for an integer beyond Python's digit limit, in our words."""
    found = re.search(r"has (\d+) digits", str(exc))
    if found is None:
        return str(exc)
    return f"a number of {int(found.group(1)):,} digits; at most {sys.get_int_max_str_digits():,} are read"


__all__ = ["INT4_MAX", "MAX_JSON_DEPTH", "MAX_QUESTION_CHARS", "MAX_TOP_N", "check_int", "check_name",
           "check_question", "json_depth_problem", "json_number_error", "name_problem", "one_line"]

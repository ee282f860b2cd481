"""The bounds of the numbers a user gives: CLI options, the client's arguments, MCP tool arguments.

The SQL functions take ``integer`` parameters; a Python int above 2**31 - 1 reaches them as ``bigint`` and
matches no function (``UndefinedFunction … top_n => bigint``), so the numbers are checked before any SQL
runs and refused with the parameter's name.  ``MAX_TOP_N`` bounds the results of one search, recall or ask:
the SQL multiplies it (``sag.dataflow_search`` reads 4 × top_n candidates), and no reader pages through more.
"""

from __future__ import annotations

from .errors import QueryError

INT4_MAX = 2**31 - 1
MAX_TOP_N = 10_000


def check_int(name: str, value: object, low: int, high: int = INT4_MAX) -> int:
    """``value`` if it is a whole number from ``low`` to ``high``; else QueryError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise QueryError(f"{name} must be a whole number from {low} to {high}, got {value!r}")
    return value


__all__ = ["INT4_MAX", "MAX_TOP_N", "check_int"]

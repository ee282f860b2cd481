"""One JSON form for everything sag-pg returns: the CLI's ``--json``, the HTTP API and the MCP tools."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["dumps", "json_default"]


def json_default(value: Any) -> Any:
    """What ``json.dumps`` cannot write by itself: paths, dates and times, numpy values."""
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


def dumps(data: Any, *, indent: int | None = 2) -> str:
    return json.dumps(data, ensure_ascii=False, indent=indent, default=json_default)

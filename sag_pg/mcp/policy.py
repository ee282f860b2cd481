"""What an MCP server may reach: its pinned sources (``--source``) and whether it may write (``--allow-writes``).

Every tool asks the policy for its sources before it calls the library, so a pinned server never names, reads
or writes a source outside its pins; a read-only server refuses every write.  Plain Python: no MCP import.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import QueryError

__all__ = ["DEFAULT_SOURCE", "Policy", "RefusedError"]

DEFAULT_SOURCE = "default"  # the library's default source, for single-source writes on an unpinned server


class RefusedError(QueryError):
    """The server's policy refuses the call: a source outside its pins, or a write on a read-only server."""


@dataclass(frozen=True)
class Policy:
    """``sources``: the pinned sources (empty: every source). ``allow_writes``: the write tools may run."""

    sources: tuple[str, ...] = ()
    allow_writes: bool = False

    @property
    def pinned(self) -> bool:
        return bool(self.sources)

    def _check(self, name: str) -> str:
        if self.pinned and name not in self.sources:
            raise RefusedError(f"source {name!r} is outside this server's sources: {', '.join(self.sources)}")
        return name

    def visible(self, name: str) -> bool:
        return not self.pinned or name in self.sources

    def many(self, asked: str | Sequence[str] | None) -> list[str] | None:
        """Sources for a call that reads several: the asked ones (each within the pins); omitted, the pinned
        ones, or None (every source) on an unpinned server."""
        if asked is None or (not isinstance(asked, str) and not asked):
            return list(self.sources) if self.pinned else None
        return [self._check(name) for name in ([asked] if isinstance(asked, str) else asked)]

    def one(self, asked: str | None) -> str | None:
        """The source for a call that reads one (None: every source, only on an unpinned server): the asked
        one within the pins; omitted, the only pinned source."""
        if asked is not None:
            return self._check(asked)
        if len(self.sources) > 1:
            raise RefusedError(f"this server has several sources ({', '.join(self.sources)}): name one")
        return self.sources[0] if self.sources else None

    def write(self, tool: str, asked: str | None) -> str:
        """The source a write goes to, if writes are allowed at all."""
        if not self.allow_writes:
            raise RefusedError(f"{tool} writes, and this server is read-only: start it with --allow-writes")
        return self.one(asked) or DEFAULT_SOURCE

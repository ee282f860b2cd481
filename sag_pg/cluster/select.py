"""Which events to cluster (sag-algorithm §4.1 "筛选出一批 event"): one SQL query with bound parameters.

An :class:`EventSelection` combines any of: a source (by name), document URIs, a time range on
``events.event_time``, a key (type and name) the events must hold, and an explicit list of event ids
(for example the events of a search's results, :meth:`EventSelection.from_search`).  All given
criteria must hold (AND); no criterion at all selects every event of every source.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..errors import InputError

if TYPE_CHECKING:
    from ..search.result import SearchResult

__all__ = ["EventSelection", "SelectedEvents", "parse_key_spec"]


def parse_key_spec(spec: str) -> tuple[str, str]:
    """``"person:曹操"`` → ``("person", "曹操")``; the name may contain further colons."""
    key_type, sep, name = spec.partition(":")
    if not sep or not key_type.strip() or not name.strip():
        raise InputError(f"a key is TYPE:NAME (for example person:Steve Jobs), got {spec!r}")
    return key_type.strip(), name.strip()


@dataclass(frozen=True)
class EventSelection:
    """Criteria for the events to cluster; every given one must hold.

    ``since`` is inclusive and ``until`` exclusive; with either, events without ``event_time`` are left
    out.  ``key`` is ``(type, name)``: the name is matched by its normalized form (as keys are merged at
    ingestion) or exactly.  ``documents`` are URIs (within ``source`` when it is given).
    """

    source: str | None = None
    documents: tuple[str, ...] = ()
    since: datetime | None = None
    until: datetime | None = None
    key: tuple[str, str] | None = None
    event_ids: tuple[int, ...] | None = None

    @classmethod
    def from_search(cls, result: SearchResult, *, source: str | None = None) -> EventSelection:
        """The events of a search's chunks (in their order, without repeats)."""
        seen: dict[int, None] = {}
        for chunk in result.chunks:
            for event in chunk.events:
                seen.setdefault(int(event["id"]), None)
        return cls(source=source, event_ids=tuple(seen))

    @classmethod
    def of_events(cls, event_ids: Iterable[int]) -> EventSelection:
        return cls(event_ids=tuple(int(e) for e in event_ids))

    def describe(self) -> dict[str, Any]:
        """The criteria that are set, JSON-ready (stored with the run)."""
        out: dict[str, Any] = {}
        if self.source is not None:
            out["source"] = self.source
        if self.documents:
            out["documents"] = list(self.documents)
        if self.since is not None:
            out["since"] = self.since.isoformat()
        if self.until is not None:
            out["until"] = self.until.isoformat()
        if self.key is not None:
            out["key"] = {"type": self.key[0], "name": self.key[1]}
        if self.event_ids is not None:
            out["event_ids"] = len(self.event_ids)
        return out


@dataclass
class SelectedEvents:
    """The chosen events: ids (ascending), their sources, and a short label each (title or content start)."""

    ids: list[int]
    source_ids: list[int]
    labels: dict[int, str] = field(default_factory=dict)

    @property
    def source_id(self) -> int | None:
        """The one source of every chosen event, or None when they span several."""
        distinct = set(self.source_ids)
        return distinct.pop() if len(distinct) == 1 else None

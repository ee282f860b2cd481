"""Reading what was ingested: documents, their chunks, events and keys, and one key with its neighbourhood.

The statements behind ``SAG.documents``, ``SAG.document``, ``SAG.chunk``, ``SAG.entity`` and ``SAG.export``
(one typed function each; the client builds no SQL).  Sources are given by id here: the client resolves names
(and says which sources exist when one does not).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from typing import Any

import psycopg

__all__ = [
    "ChunkView", "DocumentInfo", "DocumentView", "EntityView", "EventView", "ExportedDocument", "KeyView",
    "RelatedKey", "chunk_view", "document_events", "document_infos", "document_metadata", "document_sources",
    "entity_candidates", "entity_events", "export_documents", "export_some", "mark_stale", "related_keys",
    "uris_with_keys",
]

KeyValue = str | float | bool


@dataclass(frozen=True)
class KeyView:
    """A key as attached to an event: its name, type and typed value (a str, a float or a bool)."""

    name: str
    type: str
    value: KeyValue


@dataclass(frozen=True)
class EventView:
    """One event (an atomic fact) with its keys; ``chunk_id`` and ``document_uri`` say where it was read."""

    id: int
    title: str
    content: str
    time: datetime | None
    chunk_id: int
    document_uri: str
    keys: tuple[KeyView, ...] = ()

    def __repr__(self) -> str:
        return f"EventView(id={self.id}, title={self.title!r}, keys={len(self.keys)})"


@dataclass(frozen=True)
class ChunkView:
    """One chunk of a document, in reading order (``ordinal``; lines 1-based, inclusive), with its events."""

    id: int
    document_uri: str
    source: str
    ordinal: int
    title: str
    content: str
    start_line: int
    end_line: int
    events: tuple[EventView, ...] = ()

    def __repr__(self) -> str:
        return (f"ChunkView(id={self.id}, document_uri={self.document_uri!r}, ordinal={self.ordinal}, "
                f"title={self.title!r}, events={len(self.events)})")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class DocumentInfo:
    """A stored document and its size: ``created_at`` is its first ingest, ``updated_at`` its last change;
    ``key_count`` counts the distinct keys of its events."""

    uri: str
    title: str
    source: str
    content_hash: str
    created_at: datetime
    updated_at: datetime
    chunk_count: int
    event_count: int
    key_count: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, repr=False)
class DocumentView(DocumentInfo):
    """A document with its metadata and its chunks in reading order, each with its events and their keys."""

    metadata: dict[str, Any] = field(default_factory=dict)
    chunks: tuple[ChunkView, ...] = ()

    def __repr__(self) -> str:
        return f"DocumentView(uri={self.uri!r}, source={self.source!r}, title={self.title!r}, chunks={len(self.chunks)})"

    def to_dict(self) -> dict[str, Any]:
        # The metadata as loaded, not deep-copied by asdict (two frames a level: 500 levels overflowed).
        fields = asdict(replace(self, metadata={}))
        fields["metadata"] = self.metadata
        return fields


@dataclass(frozen=True)
class RelatedKey:
    """A key that shares ``shared_events`` events with another."""

    name: str
    type: str
    value: KeyValue
    shared_events: int


@dataclass(frozen=True)
class EntityView:
    """A key (entity) with its strongest events and the keys it co-occurs with most.

    ``events`` are ordered by how often the key occurs in them, then by recency; ``event_count`` is the total.
    ``others`` names the other keys that matched the name (in other types or sources) as "source/type".
    """

    name: str
    type: str
    value: KeyValue
    source: str
    description: str | None
    event_count: int
    events: tuple[EventView, ...] = ()
    related: tuple[RelatedKey, ...] = ()
    others: tuple[str, ...] = ()

    def __repr__(self) -> str:
        return (f"EntityView(name={self.name!r}, type={self.type!r}, source={self.source!r}, "
                f"event_count={self.event_count}, related={len(self.related)})")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ExportedDocument:
    """What ``sag-pg ingest`` needs to store a document again: one JSONL line of an export."""

    uri: str
    title: str
    content: str
    content_hash: str
    metadata: dict[str, Any]


def _value(string: str | None, number: float | None, flag: bool | None) -> KeyValue:
    if string is not None:
        return string
    if number is not None:
        return float(number)
    return bool(flag)


# -- documents ------------------------------------------------------------------------------------------

def document_infos(conn: psycopg.Connection, source_ids: Sequence[int] | None, *, uri_prefix: str | None,
                   uris: Sequence[str] | None = None, limit: int | None, offset: int) -> list[DocumentInfo]:
    """Documents of the sources (None: all) whose uri starts with ``uri_prefix`` (or is one of ``uris``),
    by source and uri, with their counts of chunks, events and distinct keys."""
    rows = conn.execute(
        """select d.uri, d.title, s.name, d.content_hash, d.created_at, d.updated_at,
                  (select count(*) from sag.chunks c
                    where c.source_id = d.source_id and c.document_id = d.id),
                  (select count(*) from sag.events e
                    where e.source_id = d.source_id and e.document_id = d.id),
                  (select count(distinct ek.key_id) from sag.events e
                     join sag.event_keys ek on ek.source_id = e.source_id and ek.event_id = e.id
                    where e.source_id = d.source_id and e.document_id = d.id)
             from sag.documents d join sag.sources s on s.id = d.source_id
            where (%(sources)s::bigint[] is null or d.source_id = any(%(sources)s::bigint[]))
              and (%(prefix)s::text is null or starts_with(d.uri, %(prefix)s::text))
              and (%(uris)s::text[] is null or d.uri = any(%(uris)s::text[]))
            order by s.name, d.uri
            limit %(limit)s offset %(offset)s""",
        {"sources": list(source_ids) if source_ids is not None else None, "prefix": uri_prefix,
         "uris": list(uris) if uris is not None else None, "limit": limit, "offset": offset},
    ).fetchall()
    return [DocumentInfo(*row) for row in rows]


def document_metadata(conn: psycopg.Connection, source_id: int, uri: str) -> dict[str, Any]:
    row = conn.execute("select metadata from sag.documents where source_id = %s and uri = %s",
                       [source_id, uri]).fetchone()
    return dict(row[0]) if row else {}


def _events(rows: Sequence[tuple[Any, ...]]) -> list[EventView]:
    """Rows of (chunk id, event id, title, content, time, document uri, keys json) → events, in row order."""
    return [
        EventView(event_id, title, content, time, chunk_id, uri,
                  tuple(KeyView(k["name"], k["type"], _value(k["s"], k["n"], k["b"])) for k in keys or []))
        for chunk_id, event_id, title, content, time, uri, keys in rows
    ]


_EVENT_COLUMNS = """e.chunk_id, e.id, e.title, e.content, e.event_time, d.uri,
       (select json_agg(json_build_object('name', k.name, 'type', k.type, 's', k.value_string,
                                          'n', k.value_number, 'b', k.value_bool) order by k.type, k.name)
          from sag.event_keys ek join sag.keys k on k.source_id = ek.source_id and k.id = ek.key_id
         where ek.source_id = e.source_id and ek.event_id = e.id)"""


def _chunks(conn: psycopg.Connection, where: str, params: Sequence[Any]) -> list[ChunkView]:
    chunk_rows = conn.execute(
        "select c.id, d.uri, s.name, c.ordinal, c.title, c.content, c.start_line, c.end_line"
        " from sag.chunks c join sag.documents d on d.source_id = c.source_id and d.id = c.document_id"
        " join sag.sources s on s.id = c.source_id"
        f" where {where} order by c.ordinal",
        params,
    ).fetchall()
    if not chunk_rows:
        return []
    event_rows = conn.execute(
        f"select {_EVENT_COLUMNS} from sag.events e"
        " join sag.documents d on d.source_id = e.source_id and d.id = e.document_id"
        " where e.chunk_id = any(%s) order by e.chunk_id, e.ordinal, e.id",
        [[row[0] for row in chunk_rows]],
    ).fetchall()
    per_chunk: dict[int, list[EventView]] = {}
    for event in _events(event_rows):
        per_chunk.setdefault(event.chunk_id, []).append(event)
    return [ChunkView(*row, events=tuple(per_chunk.get(row[0], ()))) for row in chunk_rows]


def document_events(conn: psycopg.Connection, source_id: int, uri: str) -> list[ChunkView]:
    """The chunks of one document in reading order, each with its events and their keys."""
    return _chunks(conn, "d.source_id = %s and d.uri = %s", [source_id, uri])


def chunk_view(conn: psycopg.Connection, chunk_id: int) -> ChunkView | None:
    """One chunk with its events and keys, None if there is no such chunk."""
    found = _chunks(conn, "c.id = %s", [chunk_id])
    return found[0] if found else None


def document_sources(conn: psycopg.Connection, uri: str) -> list[tuple[int, str]]:
    """(source id, source name) of every source holding a document with this uri."""
    rows = conn.execute(
        "select s.id, s.name from sag.documents d join sag.sources s on s.id = d.source_id"
        " where d.uri = %s order by s.name", [uri]).fetchall()
    return [(int(r[0]), str(r[1])) for r in rows]


def export_documents(conn: psycopg.Connection, source_id: int) -> Iterator[ExportedDocument]:
    """Every document of a source by uri, with its text and metadata (streamed: a server-side cursor)."""
    with conn.cursor(name="sag_export") as cursor:
        cursor.itersize = 200
        cursor.execute("select uri, title, content, content_hash, metadata from sag.documents"
                       " where source_id = %s order by uri", [source_id])
        for uri, title, content, content_hash, metadata in cursor:
            yield ExportedDocument(uri, title, content, content_hash, dict(metadata or {}))


# -- entities -------------------------------------------------------------------------------------------

def entity_candidates(conn: psycopg.Connection, source_ids: Sequence[int] | None, normalized: Sequence[str],
                      key_type: str | None) -> list[tuple[int, str, str, KeyValue, str, str | None, int]]:
    """Keys whose normalized name is one of ``normalized`` (of ``key_type`` if given), most events first:
    (id, name, type, value, source, description, event count)."""
    rows = conn.execute(
        """select k.id, k.name, k.type, k.value_string, k.value_number, k.value_bool, s.name, k.description,
                  k.event_count
             from sag.keys k join sag.sources s on s.id = k.source_id
            where k.normalized = any(%(norm)s)
              and (%(sources)s::bigint[] is null or k.source_id = any(%(sources)s::bigint[]))
              and (%(type)s::text is null or k.type = %(type)s::text)
            order by k.event_count desc, s.name, k.type, k.id""",
        {"norm": list(normalized), "sources": list(source_ids) if source_ids is not None else None,
         "type": key_type},
    ).fetchall()
    return [(int(r[0]), r[1], r[2], _value(r[3], r[4], r[5]), r[6], r[7], int(r[8])) for r in rows]


def entity_events(conn: psycopg.Connection, key_id: int, limit: int) -> list[EventView]:
    """The key's events, those that mention it most first, then the newest, at most ``limit``."""
    rows = conn.execute(
        f"select {_EVENT_COLUMNS} from sag.event_keys x"
        " join sag.events e on e.source_id = x.source_id and e.id = x.event_id"
        " join sag.documents d on d.source_id = e.source_id and d.id = e.document_id"
        " where x.source_id = (select k.source_id from sag.keys k where k.id = %s) and x.key_id = %s"
        " order by x.count desc, e.event_time desc nulls last, e.id limit %s",
        [key_id, key_id, limit],
    ).fetchall()
    return _events(rows)


def related_keys(conn: psycopg.Connection, key_id: int, limit: int) -> list[RelatedKey]:
    """The keys sharing most events with this one (ties by name), at most ``limit``."""
    rows = conn.execute(
        """select k.name, k.type, k.value_string, k.value_number, k.value_bool, count(*) as shared
             from sag.event_keys mine join sag.event_keys other
               on other.source_id = mine.source_id and other.event_id = mine.event_id
              and other.key_id <> mine.key_id
             join sag.keys k on k.source_id = other.source_id and k.id = other.key_id
            where mine.source_id = (select x.source_id from sag.keys x where x.id = %s)
              and mine.key_id = %s
            group by k.source_id, k.id order by shared desc, k.name, k.type limit %s""",

        [key_id, key_id, limit],
    ).fetchall()
    return [RelatedKey(r[0], r[1], _value(r[2], r[3], r[4]), int(r[5])) for r in rows]


def uris_with_keys(conn: psycopg.Connection, source_id: int, normalized: Sequence[str]) -> list[str]:
    """The documents of a source with an event holding a key whose normalized name is one of ``normalized``."""
    rows = conn.execute(
        """select distinct d.uri from sag.keys k
             join sag.event_keys ek on ek.source_id = k.source_id and ek.key_id = k.id

             join sag.events e on e.source_id = ek.source_id and e.id = ek.event_id
             join sag.documents d on d.source_id = e.source_id and d.id = e.document_id

            where k.source_id = %s and k.normalized = any(%s) order by d.uri""",
        [source_id, list(normalized)],
    ).fetchall()
    return [str(r[0]) for r in rows]


def export_some(conn: psycopg.Connection, source_id: int, uris: Sequence[str]) -> list[ExportedDocument]:
    """The named documents of a source with their text and metadata, by uri."""
    rows = conn.execute("select uri, title, content, content_hash, metadata from sag.documents"
                        " where source_id = %s and uri = any(%s) order by uri", [source_id, list(uris)]).fetchall()
    return [ExportedDocument(r[0], r[1], r[2], r[3], dict(r[4] or {})) for r in rows]


def mark_stale(conn: psycopg.Connection, source_id: int, uris: Sequence[str]) -> None:
    """Give the named documents a hash no content has, so the next ingest of them replaces them (atomically,
    one by one) instead of skipping them as unchanged."""
    conn.execute("update sag.documents set content_hash = 'stale' where source_id = %s and uri = any(%s)",
                 [source_id, list(uris)])

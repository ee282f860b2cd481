"""Reading the knowledge base back: documents, chunks and entities as ingested (behind ``SAG.documents``,
``SAG.document``, ``SAG.chunk``, ``SAG.entity``), and the source-name checks they share.

Unknown names are errors that say what exists: a source that is not there names the sources that are.
"""

from __future__ import annotations

from collections.abc import Sequence

import psycopg

from .db import documents as store
from .db.documents import ChunkView, DocumentInfo, DocumentView, EntityView
from .db.sources import source_ids_by_name
from .errors import NotFoundError, QueryError
from .text.normalize import normalize_key

__all__ = ["chunk", "document", "documents", "entity", "source_id", "source_ids"]


def _unknown_source(name: str, known: Sequence[str]) -> NotFoundError:
    if not known:
        return NotFoundError(f"no source named {name!r}: the database has no source yet (ingest creates one)")
    return NotFoundError(f"no source named {name!r}; sources: {', '.join(known)}")


def source_ids(conn: psycopg.Connection, names: str | Sequence[str] | None) -> list[int] | None:
    """Ids of the named sources (None: all sources); NotFoundError naming the existing ones for an unknown name."""
    if names is None:
        return None
    wanted = [names] if isinstance(names, str) else list(names)
    known = source_ids_by_name(conn)
    for name in wanted:
        if name not in known:
            raise _unknown_source(name, list(known))
    return [known[name] for name in wanted]


def source_id(conn: psycopg.Connection, name: str) -> int:
    ids = source_ids(conn, name)
    assert ids is not None
    return ids[0]


def _page(limit: int | None, offset: int) -> None:
    if limit is not None and limit < 0:
        raise QueryError(f"limit must be 0 or more, not {limit}")
    if offset < 0:
        raise QueryError(f"offset must be 0 or more, not {offset}")


def documents(conn: psycopg.Connection, *, source: str | Sequence[str] | None, uri_prefix: str | None,
              limit: int | None, offset: int) -> list[DocumentInfo]:
    _page(limit, offset)
    return store.document_infos(conn, source_ids(conn, source), uri_prefix=uri_prefix, limit=limit, offset=offset)


def _document_source(conn: psycopg.Connection, uri: str, source: str | None) -> int:
    """The id of the source holding ``uri``: the named one, or the only one that has it."""
    if source is not None:
        return source_id(conn, source)
    holders = store.document_sources(conn, uri)
    if not holders:
        raise NotFoundError(f"no document {uri!r} in any source")
    if len(holders) > 1:
        raise QueryError(f"{uri!r} is in several sources ({', '.join(n for _, n in holders)}): name one")
    return holders[0][0]


def document(conn: psycopg.Connection, uri: str, *, source: str | None) -> DocumentView:
    """The document called ``uri``, or (for a file's path) the one ``ingest`` made of that file."""
    from .ingest.uris import candidate_uris

    first_error: NotFoundError | None = None
    for candidate in candidate_uris(uri):
        try:
            return _document(conn, candidate, source=source)
        except NotFoundError as exc:
            first_error = first_error or exc
    assert first_error is not None
    raise first_error


def _document(conn: psycopg.Connection, uri: str, *, source: str | None) -> DocumentView:
    found = _document_source(conn, uri, source)
    infos = store.document_infos(conn, [found], uri_prefix=None, uris=[uri], limit=1, offset=0)
    if not infos:
        raise NotFoundError(f"no document {uri!r} in source {source!r}")
    chunks = tuple(store.document_events(conn, found, uri))
    return DocumentView(**infos[0].to_dict(), metadata=store.document_metadata(conn, found, uri), chunks=chunks)


def chunk(conn: psycopg.Connection, chunk_id: int) -> ChunkView:
    found = store.chunk_view(conn, chunk_id)
    if found is None:
        raise NotFoundError(f"no chunk {chunk_id}")
    return found


def entity(conn: psycopg.Connection, name: str, *, source: str | Sequence[str] | None, key_type: str | None,
           events: int, related: int) -> EntityView:
    """The key called ``name`` (spelling variants match: "New York" = "new-york") with most events, in the
    given sources and type; the others that matched are named in ``others``."""
    _page(events, 0)
    _page(related, 0)
    normalized = normalize_key(name)
    if not normalized:
        raise QueryError(f"{name!r} has no letter or digit: no key can have that name")
    candidates = store.entity_candidates(conn, source_ids(conn, source), [normalized],
                                         key_type.strip().lower() if key_type else None)
    if not candidates:
        where = f" of type {key_type!r}" if key_type else ""
        raise NotFoundError(f"no key {name!r}{where} in {_sources_text(source)}")
    key_id, key_name, type_, value, source_name, description, event_count = candidates[0]
    others = tuple(f"{c[4]}/{c[2]}" for c in candidates[1:])
    return EntityView(key_name, type_, value, source_name, description, event_count,
                      tuple(store.entity_events(conn, key_id, events)), tuple(store.related_keys(conn, key_id, related)),
                      others)


def _sources_text(source: str | Sequence[str] | None) -> str:
    if source is None:
        return "any source"
    names = [source] if isinstance(source, str) else list(source)
    return "source " + ", ".join(repr(n) for n in names)

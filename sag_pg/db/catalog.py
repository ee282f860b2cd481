"""Sources and their figures: the statements behind ``SAG.sources``, ``SAG.stats``, ``SAG.configure_source``
and ``SAG.delete_document`` (one typed function each; the client builds no SQL)."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.types.json import Jsonb

__all__ = ["key_type_counts", "list_sources", "source_figures", "source_id", "update_source_config"]


def source_id(conn: psycopg.Connection, name: str) -> int | None:
    """The id of the source called ``name``, None if there is none."""
    row = conn.execute("select id from sag.sources where name = %s", [name]).fetchone()
    return int(row[0]) if row else None


def update_source_config(conn: psycopg.Connection, source: int, patch: dict[str, Any], *,
                         replace: bool) -> dict[str, Any]:
    """Merge ``patch`` into the source's config (or replace it); the resulting config."""
    row = conn.execute(
        "update sag.sources set config = case when %s then %s::jsonb else config || %s::jsonb end "
        "where id = %s returning config",
        [replace, Jsonb(patch), Jsonb(patch), source],
    ).fetchone()
    return dict(row[0]) if row else {}


def list_sources(conn: psycopg.Connection) -> list[dict[str, Any]]:
    """Every source with its documents, events and keys, by name."""
    # One count per table, grouped by source (on Citus each runs on every worker at once), then joined here.
    counts = {table: dict(conn.execute(f"select source_id, count(*) from sag.{table} group by source_id").fetchall())
              for table in ("documents", "events", "keys")}
    rows = conn.execute("select s.id, s.name, s.created_at from sag.sources s order by s.name").fetchall()
    return [{"name": r[1], "created_at": r[2], "documents": counts["documents"].get(r[0], 0),
             "events": counts["events"].get(r[0], 0), "keys": counts["keys"].get(r[0], 0)} for r in rows]


def source_figures(conn: psycopg.Connection, source: str | None) -> dict[str, int]:
    """Documents, chunks, events, keys and LLM tokens of one source (None: all); P0002 if it is unknown."""
    ids = _ids(conn, source)
    documents = conn.execute(
        "select count(*), coalesce(sum(d.prompt_tokens), 0), coalesce(sum(d.completion_tokens), 0) "
        "from sag.documents d where d.source_id = any(%s)", [ids]).fetchone()
    assert documents is not None
    figures = {"documents": documents[0]}
    for table in ("chunks", "events", "keys"):
        row = conn.execute(f"select count(*) from sag.{table} where source_id = any(%s)", [ids]).fetchone()
        figures[table] = row[0] if row else 0
    figures.update(prompt_tokens=documents[1], completion_tokens=documents[2])
    return figures


def _ids(conn: psycopg.Connection, source: str | None) -> list[int]:
    """The id of ``source`` (P0002 from sag.source_ids if unknown), or of every source: resolved apart, so that
    a statement over distributed tables names its sources by value (Citus routes it by them)."""
    row = conn.execute("select coalesce(sag.source_ids(%s), array(select id from sag.sources order by id))",
                       [[source] if source else None]).fetchone()
    return list(row[0]) if row and row[0] else []


def key_type_counts(conn: psycopg.Connection, source: str | None) -> dict[str, int]:
    """Keys per type of one source (None: all), most first."""
    rows = conn.execute(
        """select k.type, count(*) from sag.keys k
            where k.source_id = any(%s)
            group by k.type order by count(*) desc""",
        [_ids(conn, source)],
    ).fetchall()
    return dict(rows)

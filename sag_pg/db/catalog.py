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
    rows = conn.execute(
        """select s.name, s.created_at,
                  (select count(*) from sag.documents d where d.source_id = s.id),
                  (select count(*) from sag.events e where e.source_id = s.id),
                  (select count(*) from sag.keys k where k.source_id = s.id)
             from sag.sources s order by s.name"""
    ).fetchall()
    return [{"name": r[0], "created_at": r[1], "documents": r[2], "events": r[3], "keys": r[4]} for r in rows]


def source_figures(conn: psycopg.Connection, source: str | None) -> dict[str, int]:
    """Documents, chunks, events, keys and LLM tokens of one source (None: all); P0002 if it is unknown."""
    row = conn.execute(
        """select count(distinct d.id), (select count(*) from sag.chunks c where c.source_id = any(ids)),
                  (select count(*) from sag.events e where e.source_id = any(ids)),
                  (select count(*) from sag.keys k where k.source_id = any(ids)),
                  coalesce(sum(d.prompt_tokens), 0), coalesce(sum(d.completion_tokens), 0)
             from (select coalesce(sag.source_ids(%s), array(select id from sag.sources)) as ids) s
             left join sag.documents d on d.source_id = any(s.ids)
            group by s.ids""",
        [[source] if source else None],
    ).fetchone()
    assert row is not None
    return {"documents": row[0], "chunks": row[1], "events": row[2], "keys": row[3],
            "prompt_tokens": row[4], "completion_tokens": row[5]}


def key_type_counts(conn: psycopg.Connection, source: str | None) -> dict[str, int]:
    """Keys per type of one source (None: all), most first."""
    rows = conn.execute(
        """select k.type, count(*) from sag.keys k
            where k.source_id = any(coalesce(sag.source_ids(%s), array(select id from sag.sources)))
            group by k.type order by count(*) desc""",
        [[source] if source else None],
    ).fetchall()
    return dict(rows)

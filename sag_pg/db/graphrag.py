"""GraphRAG's SQL (sql/idempotent/070-073, sql/incremental/008-graphrag.sql): one typed function per SQL
function, and the storage of a community hierarchy and its reports."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg
from psycopg.types.json import Jsonb

__all__ = ["Community", "NewReport", "community_digest", "community_report", "community_reports",
           "delete_older_hierarchies", "estimate_tokens", "hierarchy_levels", "hierarchy_run", "local_context",
           "membership_hash", "nearest_reports", "reduce_points", "report_batches", "reuse_community_reports",
           "store_hierarchy", "store_reports", "unreported"]


@dataclass
class Community:
    """One community of a hierarchy to store; ``parent`` is the index of its parent in the same list."""

    level: int
    ordinal: int
    title: str
    top_keys: list[dict[str, Any]]
    event_ids: list[int]
    parent: int | None = None
    id: int | None = None


@dataclass
class NewReport:
    cluster_id: int
    kind: str
    title: str
    summary: str
    findings: list[dict[str, Any]]
    rating: float
    rating_explanation: str
    full_content: str
    membership_hash: str
    embedding: npt.NDArray[np.float32] | None
    prompt_tokens: int = 0
    completion_tokens: int = 0


def estimate_tokens(conn: psycopg.Connection, content: str) -> int:
    """sag.estimate_tokens."""
    row = conn.execute("select sag.estimate_tokens(content => %s)", [content]).fetchone()
    assert row is not None
    return int(row[0])


def membership_hash(conn: psycopg.Connection, event_ids: list[int]) -> str:
    """sag.membership_hash."""
    row = conn.execute("select sag.membership_hash(event_ids => %s::bigint[])", [event_ids]).fetchone()
    assert row is not None
    return str(row[0])


def hierarchy_run(conn: psycopg.Connection, source: str | None) -> int | None:
    """sag.hierarchy_run: the latest hierarchy of a source (None: the one over every source)."""
    row = conn.execute("select sag.hierarchy_run(source => %s)", [source]).fetchone()
    return None if row is None or row[0] is None else int(row[0])


def sequential_writes(conn: psycopg.Connection) -> None:
    """For the rest of the transaction, statements over distributed tables use one connection per node: on
    Citus the community tables stay on the coordinator with a foreign key to a reference table, and Citus
    refuses to write them after a parallel read in the same transaction.  (On one PostgreSQL a placeholder
    setting, without effect.)  Call it first in a fresh transaction."""
    conn.execute("set local citus.multi_shard_modify_mode to 'sequential'")


def store_hierarchy(conn: psycopg.Connection, *, source_id: int | None, params: dict[str, Any], event_count: int,
                    modularity: float | None, communities: list[Community]) -> int:
    """Store a hierarchy run, its communities (parents before children) and their events; returns the run id
    and sets each community's ``id``.  Events deleted meanwhile are skipped."""
    levels = sorted({c.level for c in communities})
    row = conn.execute(
        "insert into sag.cluster_runs (source_id, params, event_count, cluster_count, modularity) "
        "values (%s, %s, %s, %s, %s) returning id",
        [source_id, Jsonb({**params, "kind": "hierarchy", "levels": len(levels)}), event_count,
         sum(1 for c in communities if c.level == 0), modularity],
    ).fetchone()
    assert row is not None
    run_id = int(row[0])
    for level in levels:
        todo = [c for c in communities if c.level == level]
        ids = conn.execute(
            "insert into sag.clusters (run_id, level, ordinal, title, size, top_keys, parent_id, membership_hash) "
            "select %s, %s, u.ordinal, u.title, u.size, u.top_keys, u.parent, sag.membership_hash(x.events) "
            "  from unnest(%s::int[], %s::text[], %s::int[], %s::jsonb[], %s::bigint[], %s::text[]) "
            "       as u(ordinal, title, size, top_keys, parent, events_text) "
            "  cross join lateral (select u.events_text::bigint[] as events) x(events) "
            " order by u.ordinal returning id",
            [run_id, level, [c.ordinal for c in todo], [c.title for c in todo], [len(c.event_ids) for c in todo],
             [Jsonb(c.top_keys) for c in todo],
             [communities[c.parent].id if c.parent is not None else None for c in todo],
             ["{" + ",".join(map(str, c.event_ids)) + "}" for c in todo]],
        ).fetchall()
        members_cluster: list[int] = []
        members_event: list[int] = []
        for community, (cid,) in zip(todo, ids, strict=True):
            community.id = int(cid)
            members_cluster.extend([community.id] * len(community.event_ids))
            members_event.extend(community.event_ids)
        conn.execute(
            "insert into sag.cluster_events (cluster_id, source_id, event_id) "
            "select u.c, ev.source_id, u.e from unnest(%s::bigint[], %s::bigint[]) as u(c, e) "
            "join sag.events ev on ev.id = u.e",

            [members_cluster, members_event],
        )
    return run_id


def delete_older_hierarchies(conn: psycopg.Connection, *, source_id: int | None, keep_run: int) -> int:
    """Delete the earlier hierarchies of the same source (their reports go with them); returns how many."""
    rows = conn.execute(
        "delete from sag.cluster_runs where params->>'kind' = 'hierarchy' and source_id is not distinct from %s "
        "and id <> %s returning id", [source_id, keep_run]).fetchall()
    return len(rows)


def reuse_community_reports(conn: psycopg.Connection, run_id: int) -> int:
    """sag.reuse_community_reports: copy the reports of unchanged memberships; returns how many."""
    row = conn.execute("select sag.reuse_community_reports(run_id => %s)", [run_id]).fetchone()
    assert row is not None
    return int(row[0])


def unreported(conn: psycopg.Connection, run_id: int, min_size: int) -> list[dict[str, Any]]:
    """The communities of a run of at least ``min_size`` events that have no report yet."""
    rows = conn.execute(
        "select c.id, c.level, c.ordinal, c.size, c.title, c.top_keys, c.membership_hash from sag.clusters c "
        "where c.run_id = %s and c.size >= %s "
        "and not exists (select 1 from sag.community_reports r where r.cluster_id = c.id) "
        "order by c.level, c.ordinal", [run_id, min_size]).fetchall()
    return [{"id": int(r[0]), "level": int(r[1]), "ordinal": int(r[2]), "size": int(r[3]), "title": str(r[4]),
             "top_keys": list(r[5]), "membership_hash": str(r[6])} for r in rows]


def community_digest(conn: psycopg.Connection, cluster_ids: list[int],
                     max_events: int) -> dict[int, list[tuple[int, str, str]]]:
    """sag.community_digest: {cluster id: [(event id, title, content)]}, most characteristic events first."""
    out: dict[int, list[tuple[int, str, str]]] = {c: [] for c in cluster_ids}
    for cid, eid, title, content, _ in conn.execute(
            "select cluster_id, event_id, title, content, key_hits "
            "from sag.community_digest(cluster_ids => %s::bigint[], max_events => %s)",
            [cluster_ids, max_events]):
        out[int(cid)].append((int(eid), str(title), str(content)))
    return out


def store_reports(conn: psycopg.Connection, reports: list[NewReport]) -> None:
    """Insert reports (an existing report of the same community is replaced)."""
    if not reports:
        return
    with conn.cursor() as cur:
        cur.executemany(
            "insert into sag.community_reports (cluster_id, kind, title, summary, findings, rating, "
            "rating_explanation, full_content, membership_hash, embedding, prompt_tokens, completion_tokens, "
            "created_at) values (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, now()) "
            "on conflict (cluster_id) do update set kind = excluded.kind, title = excluded.title, "
            "summary = excluded.summary, findings = excluded.findings, rating = excluded.rating, "
            "rating_explanation = excluded.rating_explanation, full_content = excluded.full_content, "
            "membership_hash = excluded.membership_hash, embedding = excluded.embedding, "
            "prompt_tokens = excluded.prompt_tokens, completion_tokens = excluded.completion_tokens, "
            # (not now() here: Citus takes only immutable functions in DO UPDATE SET)
            "created_at = excluded.created_at",
            [(r.cluster_id, r.kind, r.title, r.summary, Jsonb(r.findings), r.rating, r.rating_explanation,
              r.full_content, r.membership_hash,
              None if r.embedding is None else "[" + ",".join(f"{x:.6g}" for x in r.embedding.tolist()) + "]",
              r.prompt_tokens, r.completion_tokens) for r in reports])


def hierarchy_levels(conn: psycopg.Connection, run_id: int) -> list[dict[str, int]]:
    """sag.hierarchy_levels."""
    rows = conn.execute("select level, communities, events, reports, llm_reports "
                        "from sag.hierarchy_levels(run_id => %s)", [run_id]).fetchall()
    return [{"level": r[0], "communities": r[1], "events": r[2], "reports": r[3], "llm_reports": r[4]}
            for r in rows]


def community_reports(conn: psycopg.Connection, source: str | None, level: int | None,
                      run_id: int | None = None) -> list[dict[str, Any]]:
    """sag.community_reports."""
    cur = conn.execute(
        "select id, level, ordinal, parent_id, size, kind, title, summary, rating, findings, full_content "
        "from sag.community_reports(source => %s, level => %s, run_id => %s)", [source, level, run_id])
    names = [d.name for d in cur.description or []]
    return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


def community_report(conn: psycopg.Connection, cluster_id: int) -> dict[str, Any] | None:
    """sag.community_report (None: no such community)."""
    row = conn.execute("select sag.community_report(cluster_id => %s)", [cluster_id]).fetchone()
    return None if row is None or row[0] is None else dict(row[0])


def nearest_reports(conn: psycopg.Connection, query_embedding: npt.NDArray[np.float32], source: str | None, k: int,
                    level: int | None = None, run_id: int | None = None) -> list[dict[str, Any]]:
    """sag.nearest_reports."""
    cur = conn.execute(
        "select id, level, title, full_content, rating, similarity from sag.nearest_reports("
        "query_embedding => %s, source => %s, k => %s, level => %s, run_id => %s)",
        [_vector(query_embedding), source, k, level, run_id])
    names = [d.name for d in cur.description or []]
    return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


def local_context(conn: psycopg.Connection, query: str, query_embedding: npt.NDArray[np.float32] | None, *,
                  source: str | None, level: int | None, top_k_entities: int, oversample: float,
                  top_k_relationships: int, max_tokens: int, text_unit_prop: float,
                  community_prop: float, include_entities: Sequence[str] | None = None,
                  exclude_entities: Sequence[str] | None = None) -> dict[str, Any]:
    """sag.local_context."""
    row = conn.execute(
        "select sag.local_context(query => %s, query_embedding => %s, source => %s, level => %s, "
        "top_k_entities => %s, oversample => %s, top_k_relationships => %s, max_tokens => %s, "
        "text_unit_prop => %s, community_prop => %s, include_entities => %s, exclude_entities => %s)",
        [query, None if query_embedding is None else _vector(query_embedding), source, level, top_k_entities,
         oversample, top_k_relationships, max_tokens, text_unit_prop, community_prop,
         None if include_entities is None else list(include_entities),
         None if exclude_entities is None else list(exclude_entities)]).fetchone()
    assert row is not None
    return dict(row[0])


def default_level(conn: psycopg.Connection, source: str | None, level: int | None = None,
                  run_id: int | None = None) -> int:
    """sag.community_level: ``level``, else GraphRAG's 2 (or the deepest level there is)."""
    row = conn.execute("select sag.community_level(source => %s, level => %s, run_id => %s)",
                       [source, level, run_id]).fetchone()
    assert row is not None
    return int(row[0])


def report_batches(conn: psycopg.Connection, *, source: str | None, level: int | None, max_tokens: int,
                   run_id: int | None = None, min_rating: float = 0.0, shuffle: bool = True,
                   seed: int = 86) -> list[dict[str, Any]]:
    """sag.report_batches."""
    rows = conn.execute(
        "select batch, report_ids, context, tokens from sag.report_batches(source => %s, level => %s, "
        "max_tokens => %s, run_id => %s, min_rating => %s, shuffle => %s, seed => %s)",
        [source, level, max_tokens, run_id, min_rating, shuffle, seed]).fetchall()
    return [{"batch": r[0], "report_ids": list(r[1]), "context": r[2], "tokens": r[3]} for r in rows]


def reduce_points(conn: psycopg.Connection, points: list[dict[str, Any]], max_tokens: int) -> dict[str, Any]:
    """sag.reduce_points."""
    row = conn.execute("select sag.reduce_points(points => %s, max_tokens => %s)",
                       [Jsonb(points), max_tokens]).fetchone()
    assert row is not None
    return dict(row[0])


def _vector(values: npt.NDArray[np.float32]) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in np.asarray(values, dtype=np.float32).tolist()) + "]"

"""The clustering's SQL (sql/idempotent/040-cluster.sql and the cluster tables): one typed function per SQL
function, pair lists through binary COPY into numpy arrays, and the storage of a run."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from ..errors import InputError
from ..text.normalize import normalize_key

if TYPE_CHECKING:
    from ..cluster.select import EventSelection, SelectedEvents

__all__ = ["key_cap", "key_idf", "key_names", "key_pairs", "links", "select_events", "selection_query",
           "semantic_pairs", "snapshot_read", "store_run"]

_KEY_PAIRS = ("select event_a, event_b, w_key from sag.cluster_key_pairs(%s::bigint[], %s::text[], %s, %s)")
_SEMANTIC_PAIRS = ("select event_a, event_b, similarity from sag.cluster_semantic_pairs(%s::bigint[], %s, %s)")
_LINKS = "select event_id, key_id from sag_internal._cluster_links(%s::bigint[], %s::text[])"
_IDF = "select key_id, idf from sag.cluster_key_idf(%s::bigint[], %s::text[], %s)"
_KEY_CAP = "select sag.cluster_key_cap(%s::bigint[], %s, %s::text[], %s)"

_COPY_HEADER = 19  # PGCOPY signature (11) + flags (4) + header extension length (4)


def _copy_columns(conn: psycopg.Connection, query: str, params: list[Any],
                  kinds: tuple[str, ...]) -> list[npt.NDArray[Any]]:
    """Run ``query`` through binary COPY and parse its fixed-width, non-null columns into numpy arrays.

    ``kinds`` are numpy type codes per column, ``"i8"`` (bigint) or ``"f8"`` (double precision).
    """
    with conn.cursor() as cur, cur.copy(f"copy ({query}) to stdout (format binary)", params) as copy:
        data = b"".join(bytes(block) for block in copy)
    dtype = np.dtype([("n", ">i2")] + [item for i, kind in enumerate(kinds)
                                       for item in ((f"len{i}", ">i4"), (f"c{i}", ">" + kind))])
    body = data[_COPY_HEADER:-2]  # the trailer is a field count of -1
    if len(body) % dtype.itemsize:
        raise RuntimeError(f"unexpected binary COPY layout for {query!r}")
    rows = np.frombuffer(body, dtype=dtype)
    for i in range(len(kinds)):
        if rows.size and not np.all(rows[f"len{i}"] == 8):
            raise RuntimeError(f"NULL or non 8-byte value in column {i} of {query!r}")
    return [rows[f"c{i}"].astype(kind) for i, kind in enumerate(kinds)]


def key_idf(conn: psycopg.Connection, event_ids: list[int], key_types: list[str] | None,
            use_idf: bool) -> dict[int, float]:
    """sag.cluster_key_idf: {key_id: idf} of the keys of the chosen events."""
    return {int(k): float(v) for k, v in conn.execute(_IDF, [event_ids, key_types, use_idf]).fetchall()}


def key_cap(conn: psycopg.Connection, event_ids: list[int], max_pairs: int, key_types: list[str] | None,
            use_idf: bool) -> int:
    """sag.cluster_key_cap: the max_key_events whose key pairs fit in max_pairs."""
    row = conn.execute(_KEY_CAP, [event_ids, max_pairs, key_types, use_idf]).fetchone()
    assert row is not None
    return int(row[0])


def key_pairs(conn: psycopg.Connection, event_ids: list[int], key_types: list[str] | None, use_idf: bool,
              max_key_events: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """sag.cluster_key_pairs as arrays (event_a, event_b, w_key)."""
    a, b, w = _copy_columns(conn, _KEY_PAIRS, [event_ids, key_types, use_idf, max_key_events], ("i8", "i8", "f8"))
    return a, b, w


def semantic_pairs(conn: psycopg.Connection, event_ids: list[int], k: int,
                   exact_max: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """sag.cluster_semantic_pairs as arrays (event_a, event_b, similarity)."""
    a, b, s = _copy_columns(conn, _SEMANTIC_PAIRS, [event_ids, k, exact_max], ("i8", "i8", "f8"))
    return a, b, s


def links(conn: psycopg.Connection, event_ids: list[int],
          key_types: list[str] | None) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """sag_internal._cluster_links as arrays (event_id, key_id)."""
    ev, ky = _copy_columns(conn, _LINKS, [event_ids, key_types], ("i8", "i8"))
    return ev, ky




def snapshot_read(conn: psycopg.Connection) -> None:
    """One consistent, read-only snapshot for the whole selection and graph of a run."""
    conn.execute("set transaction isolation level repeatable read, read only")


def key_names(conn: psycopg.Connection, key_ids: list[int]) -> dict[int, tuple[str, str]]:
    """{key id: (type, name)} of the given keys."""
    rows = conn.execute("select id, type, name from sag.keys where id = any (%s::bigint[])", [key_ids]).fetchall()
    return {int(r[0]): (str(r[1]), str(r[2])) for r in rows}


def store_run(conn: psycopg.Connection, *, source_id: int | None, params: dict[str, Any], event_count: int,
              modularity: float | None,
              clusters: list[tuple[int, str, int, list[dict[str, Any]], list[int]]]) -> tuple[int, list[int]]:
    """Store a run, its clusters ``(ordinal, title, size, top keys, event ids)`` and their events; returns the
    run id and the clusters' ids in the given order.  Events deleted since the selection are skipped rather than
    failing the whole run."""
    row = conn.execute(
        "insert into sag.cluster_runs (source_id, params, event_count, cluster_count, modularity) "
        "values (%s, %s, %s, %s, %s) returning id",
        [source_id, Jsonb(params), event_count, len(clusters), modularity],
    ).fetchone()
    assert row is not None
    run_id = int(row[0])
    cluster_ids = [int(r[0]) for r in conn.execute(
        "insert into sag.clusters (run_id, ordinal, title, size, top_keys) "
        "select %s, u.ordinal, u.title, u.size, u.top_keys "
        "  from unnest(%s::int[], %s::text[], %s::int[], %s::jsonb[]) as u(ordinal, title, size, top_keys) "
        " order by u.ordinal returning id",
        [run_id, [c[0] for c in clusters], [c[1] for c in clusters], [c[2] for c in clusters],
         [Jsonb(c[3]) for c in clusters]],
    ).fetchall()]
    members_cluster: list[int] = []
    members_event: list[int] = []
    for (_, _, size, _, event_ids), cluster_id in zip(clusters, cluster_ids, strict=True):
        members_cluster.extend([cluster_id] * size)
        members_event.extend(event_ids)
    conn.execute(
        "insert into sag.cluster_events (cluster_id, source_id, event_id) "
        "select u.c, ev.source_id, u.e from unnest(%s::bigint[], %s::bigint[]) as u(c, e) "
        "join sag.events ev on ev.id = u.e",
        [members_cluster, members_event],
    )
    return run_id, cluster_ids


# -- which events --------------------------------------------------------------------------------------------


def selection_query(selection: EventSelection, source_id: int | None = None) -> tuple[sql.Composed, dict[str, Any]]:
    """The query ``(id, source_id, label)`` of the chosen events, ordered by id, and its parameters;
    ``source_id``: the id of ``selection.source`` (resolved first: on Citus a statement over distributed tables
    names its source by value, not through a function reading sag.sources)."""
    where: list[sql.Composable] = []
    params: dict[str, Any] = {}
    if selection.source is not None:
        where.append(sql.SQL("e.source_id = %(source_id)s"))
        params["source_id"] = source_id
    if selection.documents:
        where.append(sql.SQL("(e.source_id, e.document_id) in (select d.source_id, d.id from sag.documents d "
                             "where d.uri = any (%(uris)s)"
                             + (" and d.source_id = %(source_id)s)" if selection.source is not None else ")")))
        params["uris"] = list(selection.documents)
    if selection.since is not None:
        where.append(sql.SQL("e.event_time >= %(since)s"))
        params["since"] = selection.since
    if selection.until is not None:
        where.append(sql.SQL("e.event_time < %(until)s"))
        params["until"] = selection.until
    if selection.key is not None:
        where.append(sql.SQL(
            "exists (select 1 from sag.event_keys ek join sag.keys k on k.source_id = ek.source_id and k.id = ek.key_id "
            "where ek.source_id = e.source_id and ek.event_id = e.id and k.type = %(key_type)s "
            "and (k.normalized = %(key_normalized)s or k.name = %(key_name)s))"
        ))
        params.update(key_type=selection.key[0], key_name=selection.key[1],
                      key_normalized=normalize_key(selection.key[1]))
    if selection.event_ids is not None:
        where.append(sql.SQL("e.id = any (%(event_ids)s::bigint[])"))
        params["event_ids"] = list(selection.event_ids)
    query = sql.SQL(
        "select e.id, e.source_id, left(coalesce(nullif(e.title, ''), e.content), 80) "
        "from sag.events e where {} order by e.id"
    ).format(sql.SQL(" and ").join(where) if where else sql.SQL("true"))
    return query, params


def select_events(conn: psycopg.Connection, selection: EventSelection) -> SelectedEvents:
    """Run the selection; an unknown source is an :class:`InputError`, so is an empty result."""
    source_id = None
    if selection.source is not None:
        try:
            row = conn.execute("select (sag.source_ids(array[%s]::text[]))[1]", [selection.source]).fetchone()
        except psycopg.errors.NoDataFound as exc:  # P0002 from sag.source_ids
            raise InputError(exc.diag.message_primary or str(exc)) from exc
        source_id = int(row[0]) if row and row[0] is not None else None
    query, params = selection_query(selection, source_id)
    rows = conn.execute(query, params).fetchall()
    if not rows:
        described = ", ".join(f"{k}={v}" for k, v in selection.describe().items()) or "all events"
        raise InputError(f"no events to cluster ({described})")
    from ..cluster.select import SelectedEvents

    return SelectedEvents(
        ids=[int(r[0]) for r in rows],
        source_ids=[int(r[1]) for r in rows],
        labels={int(r[0]): str(r[2]) for r in rows},
    )


def prune_runs(conn: psycopg.Connection, *, keep: int, source_ids: list[int] | None) -> int:
    """Delete the clustering runs (not GraphRAG's hierarchies) of the sources (None: all) but the newest
    ``keep`` of each source (runs over several sources count as one more source); how many were deleted."""
    rows = conn.execute(
        """delete from sag.cluster_runs r using (
               select id, row_number() over (partition by source_id order by created_at desc, id desc) as age
                 from sag.cluster_runs
                where params->>'kind' is distinct from 'hierarchy'
                  and (%(sources)s::bigint[] is null or source_id = any(%(sources)s::bigint[]))) old
            where r.id = old.id and old.age > %(keep)s
           returning r.id""",
        {"sources": source_ids, "keep": keep},
    ).fetchall()
    return len(rows)

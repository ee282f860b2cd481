"""SAG retrieval from Python: the SQL stages (sql/idempotent/030-032), then PageRank, then the details.

One statement per stage, so each is timed::

    match_keys (+ keys_named), query_chunks -> activate_keys -> expand_keys -> rank_chunks (+ key-chunk edges)
    -> PageRank -> fetch

All the retrieval math runs in PostgreSQL (see docs/retrieval.md); Python only runs PageRank and builds
the result.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg
from pgvector.psycopg import register_vector
from psycopg.adapt import PyFormat

from ..errors import QueryError
from ..extract.query_names import query_names
from ..text.normalize import normalize_key
from .pagerank import rank as pagerank_rank
from .result import ChunkHit, KeyHit, SearchResult

__all__ = ["RetrievalParams", "retrieve"]


@dataclass(frozen=True)
class RetrievalParams:
    """Every knob of the retrieval, with the SQL functions' defaults (docs/retrieval.md gives the reasons).

    ``match_*``: sag.match_keys (seed keys, when none are given); ``vector_limit``, ``text_limit``,
    ``text_weight``, ``text_max_postings``: sag.query_chunks (the query's own chunks and s; the BM25 posting
    budget, None = exact); ``event_limit``, ``threshold``,
    ``key_top_n``, ``max_key_events``, ``feedback_chunks``: sag.activate_keys and sag.expand_keys
    (``key_top_n`` is their ``top_n``); ``max_step``, ``min_new_keys``: sag.expand_keys;
    ``key_chunk_limit``: sag.rank_chunks; ``pagerank_alpha``: the PageRank damping (the share of a score that
    comes from the graph rather than from the chunk's own weight_init).  ``query_names``: keys whose name is
    written in the question (sag.keys_named) join the seeds with k1 = 1; ``named_key_floor``: such a key in
    key-final weighs at least this share of the strongest key-final weight (0 = no floor).
    """

    match_top_k: int = 30
    match_min_similarity: float = 0.45
    event_limit: int = 50
    threshold: float = 0.1
    key_top_n: int = 20
    max_key_events: int = 20
    max_step: int = 3
    min_new_keys: int = 1
    vector_limit: int = 50
    text_limit: int = 50
    text_max_postings: int | None = 2000
    key_chunk_limit: int = 100
    text_weight: float = 0.85
    pagerank_alpha: float = 0.3
    feedback_chunks: int = 1
    query_names: bool = True
    named_key_floor: float = 1.0


# Query vectors go as binary (%b: pgvector's binary dumper for numpy arrays): formatting 512 floats as text
# costs about 0.3 ms per statement.
_MATCH = "select key_id, similarity from sag.match_keys(%b, %s, top_k => %s, min_similarity => %s)"
_NAMED = "select ord, key_id, hub from sag.keys_named(%s::text[], %s, %s)"
_QUERY_CHUNKS = """
select chunk_id, similarity, text_score, s, via_vector, via_text
  from sag.query_chunks(%b, %s::text[], %s, vector_limit => %s, text_limit => %s, text_weight => %s,
                        chunk_filter => %s::bigint[], text_max_postings => %s)"""
_ACTIVATE = """
select key_id, weight, step
  from sag.activate_keys(%b, %s::bigint[], %s::float8[], %s, event_limit => %s, threshold => %s, top_n => %s,
                         max_key_events => %s, chunk_ids => %s::bigint[], chunk_similarities => %s::float8[],
                         chunk_text_scores => %s::float8[], text_weight => %s, feedback_chunks => %s,
                         event_filter => %s::bigint[])"""
_EXPAND = """
select key_id, weight, step
  from sag.expand_keys(%b, %s::bigint[], %s::float8[], %s::int[], %s, max_step => %s, threshold => %s,
                       top_n => %s, min_new_keys => %s, max_key_events => %s, event_filter => %s::bigint[],
                       floor_key_ids => %s::bigint[], floor_share => %s)"""
_RANK = """
select chunk_id, similarity, text_score, s, key_score, weight_init, via_keys, via_vector, via_text
  from sag.rank_chunks(%b, %s::text[], %s::bigint[], %s::float8[], %s::int[], %s, vector_limit => %s,
                       text_limit => %s, key_chunk_limit => %s, text_weight => %s, chunk_ids => %s::bigint[],
                       chunk_similarities => %s::float8[], chunk_text_scores => %s::float8[],
                       chunk_via_vector => %s::boolean[], chunk_filter => %s::bigint[])"""
_EDGES = "select chunk_id, key_id, count from sag.chunk_keys where chunk_id = any(%s) and key_id = any(%s)"
# The top chunks with their document, events and keys (key-final weight/step when activated), and the
# details of key-final, in one round trip.
_FETCH = """
with kf as (select * from unnest(%(kf_ids)s::bigint[], %(kf_w)s::float8[], %(kf_s)s::int[]) as u(id, weight, step))
select
  (select coalesce(json_agg(json_build_object(
              'chunk_id', c.id, 'uri', d.uri, 'document_title', d.title, 'title', c.title, 'content', c.content,
              'events', (select coalesce(json_agg(json_build_object(
                                 'id', e.id, 'title', e.title, 'content', e.content, 'time', e.event_time)
                                 order by e.ordinal, e.id), '[]'::json)
                           from sag.events e where e.chunk_id = c.id),
              'keys', (select coalesce(json_agg(json_build_object(
                               'id', k.id, 'type', k.type, 'name', k.name, 'count', ck.count,
                               'weight', kf.weight, 'step', kf.step)
                               order by kf.weight desc nulls last, ck.count desc, k.id), '[]'::json)
                         from sag.chunk_keys ck join sag.keys k on k.id = ck.key_id
                         left join kf on kf.id = k.id
                        where ck.chunk_id = c.id))
          order by t.n), '[]'::json)
     from unnest(%(top)s::bigint[]) with ordinality as t(id, n)
     join sag.chunks c on c.id = t.id
     join sag.documents d on d.id = c.document_id),
  (select coalesce(json_agg(json_build_object(
              'id', k.id, 'type', k.type, 'name', k.name,
              'value', coalesce(to_json(k.value_string), to_json(k.value_number), to_json(k.value_bool))))
          , '[]'::json)
     from sag.keys k where k.id in (select id from kf))
"""


def _query_vector(embedding: npt.ArrayLike) -> npt.NDArray[np.float32]:
    vec = np.asarray(embedding, dtype=np.float32)
    if vec.ndim != 1 or vec.size == 0:
        raise QueryError(f"query_embedding must be a non-empty 1-D vector, got shape {vec.shape}")
    if not np.all(np.isfinite(vec)):
        raise QueryError("query_embedding contains NaN or infinite values")
    return np.ascontiguousarray(vec)


def _ensure_vector_dumper(conn: psycopg.Connection) -> None:
    """pgvector's binary dumper for numpy arrays, registered unless the connection has it already."""
    try:
        conn.adapters.get_dumper(np.ndarray, PyFormat.BINARY)
    except psycopg.ProgrammingError:
        register_vector(conn)


def _named_seeds(rows: Sequence[Sequence[Any]], spans: Sequence[tuple[str, int, int]]) -> list[int]:
    """The keys of the longest matched spans: a matched span takes its words, so "Nick Hexum" leaves no room
    for the key "Nick"; ties by position.  A hub's name takes its words too ("British Empire" is not the
    key "Empire") but seeds nothing."""
    found: dict[int, list[tuple[int, bool]]] = {}
    for ord_, key_id, hub in rows:
        found.setdefault(int(ord_) - 1, []).append((int(key_id), bool(hub)))
    taken: set[int] = set()
    keys: list[int] = []
    for i in sorted(found, key=lambda i: (spans[i][1] - spans[i][2], spans[i][1])):
        words = range(spans[i][1], spans[i][2] + 1)
        if taken.isdisjoint(words):
            taken.update(words)
            keys.extend(k for k, hub in found[i] if not hub and k not in keys)
    return keys


def _columns(rows: Sequence[Sequence[Any]], n: int) -> list[list[Any]]:
    """Rows -> n column lists (empty lists for no rows)."""
    return [list(col) for col in zip(*rows)] if rows else [[] for _ in range(n)]


def retrieve(
    conn: psycopg.Connection,
    query_embedding: npt.NDArray[np.floating],
    query_tokens: list[str],
    *,
    source_ids: list[int] | None,
    seed_keys: list[tuple[int, float]] | None = None,
    top_n: int = 10,
    params: RetrievalParams = RetrievalParams(),
    use_pagerank: bool = True,
    query: str | None = None,
    allowed: tuple[Sequence[int], Sequence[int]] | None = None,
) -> SearchResult:
    """Run the SAG retrieval for one query and return the ``top_n`` chunks.

    ``query_embedding`` comes from the database's embedder; ``query_tokens`` are pre-segmented, lower-cased
    tokens (as stored in ``chunks.tokens``) for BM25.  ``source_ids`` None searches every source; otherwise
    nothing outside them is used.  ``seed_keys`` are (key id, weight) pairs for stage 1; None: the keys
    most similar to the query (``sag.match_keys``).  ``allowed`` narrows the search to a pre-computed set,
    ``(event ids, chunk ids)`` as :func:`~sag_pg.search.restrict.allowed_events` returns it: only those events
    activate keys and only those chunks are returned (None: no restriction).  Without PageRank, chunks are
    ordered by weight_init.  Raises :class:`~sag_pg.errors.QueryError` for invalid parameters.
    """
    if top_n < 1:
        raise QueryError(f"top_n must be >= 1, got {top_n}")
    if not 0 <= params.named_key_floor <= 1:
        raise QueryError(f"named_key_floor must be in [0, 1], got {params.named_key_floor}")
    vec = _query_vector(query_embedding)
    _ensure_vector_dumper(conn)
    tokens = [t for t in query_tokens if t]
    event_filter: list[int] | None = None
    chunk_filter: list[int] | None = None
    if allowed is not None:
        event_filter = sorted({int(e) for e in allowed[0]})
        chunk_filter = sorted({int(c) for c in allowed[1]})
    p = params
    timings: dict[str, float] = {}
    started = time.perf_counter()

    def timed(name: str, sql: str, args: Sequence[Any] | dict[str, Any]) -> list[Any]:
        t0 = time.perf_counter()
        rows = conn.execute(sql, args).fetchall()  # type: ignore[arg-type]
        timings[name] = (time.perf_counter() - t0) * 1000.0
        return rows

    named: list[int] = []
    try:
        with conn.transaction():
            if seed_keys is None:
                seed_ids, seed_w = _columns(timed("match_keys", _MATCH, [vec, source_ids, p.match_top_k,
                                                                          p.match_min_similarity]), 2)
                spans = query_names(query) if query and p.query_names else []
                if spans:
                    rows = timed("keys_named", _NAMED, [[normalize_key(n) for n, _, _ in spans], source_ids,
                                                         p.max_key_events])
                    named = _named_seeds(rows, spans)
                    # An exact name counts fully (k1 = 1), like sag.match_named_keys' exact matches;
                    # sag.activate_keys keeps a key's largest weight when it is given twice.
                    seed_ids, seed_w = seed_ids + named, seed_w + [1.0] * len(named)
            else:
                seed_ids = [int(k) for k, _ in seed_keys]
                seed_w = [float(w) for _, w in seed_keys]
            qc = timed("query_chunks", _QUERY_CHUNKS, [vec, tokens, source_ids, p.vector_limit, p.text_limit,
                                                        p.text_weight, chunk_filter, p.text_max_postings])
            qc_ids, qc_sim, qc_ts, _, qc_vv, _ = _columns(qc, 6)
            act = timed("activate_keys", _ACTIVATE, [vec, seed_ids, seed_w, source_ids, p.event_limit, p.threshold,
                                                      p.key_top_n, p.max_key_events, qc_ids, qc_sim, qc_ts,
                                                      p.text_weight, p.feedback_chunks, event_filter])
            act_ids, act_w, act_s = _columns(act, 3)
            kf = timed("expand_keys", _EXPAND, [vec, act_ids, act_w, act_s, source_ids, p.max_step, p.threshold,
                                                 p.key_top_n, p.min_new_keys, p.max_key_events, event_filter,
                                                 named or None, p.named_key_floor])
            kf_ids, kf_w, kf_s = _columns(kf, 3)
            ranked = timed("rank_chunks", _RANK, [vec, tokens, kf_ids, kf_w, kf_s, source_ids, p.vector_limit,
                                                   p.text_limit, p.key_chunk_limit, p.text_weight, qc_ids, qc_sim,
                                                   qc_ts, qc_vv, chunk_filter])
            chunk_ids = [r[0] for r in ranked]
            weight_init = {r[0]: r[5] for r in ranked}

            if use_pagerank and ranked:
                edges = timed("edges", _EDGES, [chunk_ids, kf_ids])
                t0 = time.perf_counter()
                key_pers = {k: w / s for k, w, s in kf}
                scores = pagerank_rank(weight_init, key_pers, edges, alpha=p.pagerank_alpha)
                timings["pagerank"] = (time.perf_counter() - t0) * 1000.0
            else:
                scores = weight_init
            # Best score first; ties by weight_init, then chunk id (rank_chunks' order).
            order = sorted(range(len(ranked)), key=lambda i: (-scores[chunk_ids[i]], -ranked[i][5], chunk_ids[i]))
            top = [ranked[i] for i in order[:top_n]]

            fetched = timed("fetch", _FETCH, {"kf_ids": kf_ids, "kf_w": kf_w, "kf_s": kf_s,
                                              "top": [r[0] for r in top]})
    except psycopg.errors.InvalidParameterValue as exc:
        raise QueryError(exc.diag.message_primary or str(exc)) from exc
    timings["total"] = (time.perf_counter() - started) * 1000.0

    details, key_details = fetched[0]
    key_info = {k["id"]: k for k in key_details}
    chunks = [
        ChunkHit(
            chunk_id=r[0], document_uri=d["uri"], document_title=d["document_title"], title=d["title"],
            content=d["content"], score=float(scores[r[0]]), similarity=r[1], text_score=r[2], key_score=r[4],
            weight_init=r[5], via_keys=r[6], via_vector=r[7], via_text=r[8], events=d["events"], keys=d["keys"],
        )
        for r, d in zip(top, details)
    ]
    keys = [
        KeyHit(key_id=k, type=key_info[k]["type"], name=key_info[k]["name"], value=key_info[k]["value"],
               weight=w, step=s)
        for k, w, s in kf
        if k in key_info
    ]
    return SearchResult(query=query if query is not None else " ".join(tokens), chunks=chunks, keys=keys,
                        timings_ms=timings)

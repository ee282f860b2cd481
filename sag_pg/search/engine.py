"""One atomic search (sag-algorithm §3.1): query, optional keys, optional ``sql`` restriction."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np
import psycopg

from ..db import retrieval as db
from ..embedders.base import embed_queries
from ..errors import NotFoundError, QueryError
from ..text.normalize import normalize_key
from .result import SearchResult
from .retrieve import RetrievalParams, retrieve

if TYPE_CHECKING:
    from ..dataflow.search import DataflowParams
    from ..embedders.base import Embedder

SEARCH_TIMEOUT_MS = 30_000


@contextmanager
def cancelled_as_query_error() -> Iterator[None]:
    """A statement the search's timeout cancelled, as the QueryError that says so."""
    try:
        yield
    except psycopg.errors.QueryCanceled as exc:
        raise QueryError(f"search exceeded {SEARCH_TIMEOUT_MS / 1000:.0f} s and was cancelled") from exc


def resolve_sources(conn: psycopg.Connection, names: Sequence[str] | None) -> list[int] | None:
    """Source names to ids; None searches every source. Unknown names are a NotFoundError (a QueryError)."""
    try:
        return db.source_ids(conn, names)
    except psycopg.errors.NoDataFound as exc:
        raise NotFoundError(exc.diag.message_primary or str(exc)) from exc


def seed_keys(conn: psycopg.Connection, embedder: Embedder, keys: Sequence[str],
              source_ids: list[int] | None) -> list[tuple[int, float]]:
    names = [k.strip() for k in keys if k and k.strip()]
    if not names:
        return []
    return db.match_named_keys(conn, names, [normalize_key(n) for n in names], list(embedder.embed(names)),
                               source_ids)


def search(conn: psycopg.Connection, embedder: Embedder, query: str, *, keys: Sequence[str] | None = None,
           sql: str | None = None, sources: Sequence[str] | None = None, top_n: int = 10,
           params: RetrievalParams | None = None, use_pagerank: bool = True,
           dataflow: DataflowParams | None = None) -> SearchResult:
    """Fast mode: no LLM. ``keys`` (names) replace the query's own key matching as stage-1 seeds.
    ``dataflow``: run the DataFlow strategy instead (sag_pg.dataflow), ``keys`` as its first entities."""
    if not query or not query.strip():
        raise QueryError("the query is empty")
    if top_n < 1:
        raise QueryError(f"top_n must be at least 1, got {top_n}")
    if sql:  # pglast (0.2 s to import) only for searches with a restriction
        from ..db.restrict import allowed_events, parse_restriction
    restriction = parse_restriction(sql) if sql else None
    embedding = embed_queries(embedder, [query])[0]  # queries get the model's query prefix
    if not np.any(embedding):
        embedding = embedding.copy()  # an all-zero query vector still runs: BM25 and keys carry it
    # Searches only read: a read-only session, with a ceiling on every statement.
    db.read_only_session(conn, statement_timeout_ms=SEARCH_TIMEOUT_MS)
    source_ids = resolve_sources(conn, sources)
    conn.commit()
    if dataflow is not None:
        return _dataflow(conn, query, embedding, source_ids, keys, sql, top_n, dataflow)
    seeds = seed_keys(conn, embedder, keys, source_ids) if keys else None
    allowed = allowed_events(conn, restriction, source_ids) if restriction else None
    kwargs: dict[str, Any] = {"allowed": allowed} if allowed is not None else {}
    try:
        return retrieve(conn, query, embedding, source_ids=source_ids, seed_keys=seeds, top_n=top_n,
                        params=params or RetrievalParams(), use_pagerank=use_pagerank, **kwargs)
    except psycopg.errors.QueryCanceled as exc:
        raise QueryError(f"search exceeded {SEARCH_TIMEOUT_MS / 1000:.0f} s and was cancelled") from exc


def _dataflow(conn: psycopg.Connection, query: str, embedding: np.ndarray, source_ids: list[int] | None,
              keys: Sequence[str] | None, sql: str | None, top_n: int, params: DataflowParams) -> SearchResult:
    from ..dataflow.search import dataflow_search

    if sql:
        raise QueryError("the sql restriction is not supported by the dataflow strategy")
    try:
        return dataflow_search(conn, query, embedding, source_ids=source_ids, top_n=top_n, keys=keys, params=params)
    except psycopg.errors.QueryCanceled as exc:
        raise QueryError(f"search exceeded {SEARCH_TIMEOUT_MS / 1000:.0f} s and was cancelled") from exc

"""The retrieval SQL functions, one typed Python function each (sql/idempotent/03x-*.sql).

Every value goes as a parameter, every argument by name (``=>``), so a call reads like its SQL signature.
Query vectors go in binary (pgvector's numpy dumper): formatting 512 floats as text costs about 0.3 ms.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg
from psycopg import sql
from psycopg.adapt import PyFormat

from .connection import register_pgvector

__all__ = ["Candidates", "context_for_query", "expand_question", "fetch_hits", "match_named_keys", "read_only_session",
           "retrieve", "source_ids"]


def _ensure_vector_dumper(conn: psycopg.Connection) -> None:
    """pgvector's binary dumper for numpy arrays, registered unless the connection has it already."""
    try:
        conn.adapters.get_dumper(np.ndarray, PyFormat.BINARY)
    except psycopg.ProgrammingError:
        register_pgvector(conn)


def read_only_session(conn: psycopg.Connection, *, statement_timeout_ms: int) -> None:
    """Searches only read: the session becomes read-only (default_transaction_read_only: its transactions, and
    the statements of an autocommit connection), with a ceiling on every statement."""
    conn.execute("select set_config('statement_timeout', %s, false), "
                 "set_config('default_transaction_read_only', 'on', false)", [str(int(statement_timeout_ms))])


def source_ids(conn: psycopg.Connection, names: Sequence[str] | None) -> list[int] | None:
    """``sag.source_ids``: names to ids, None = every source; an unknown name raises NoDataFound (P0002)."""
    if names is None:
        return None
    row = conn.execute("select sag.source_ids(source_names => %s)", [list(names)]).fetchone()
    return list(row[0]) if row and row[0] else []


def expand_question(conn: psycopg.Connection, query: str, source_ids: Sequence[int] | None) -> str:
    """``sag.expand_question``: the question with the canonical names of the aliases it names appended, from the
    synonym tables of the sources (None: all)."""
    row = conn.execute("select sag.expand_question(query => %s, source_ids => %s)",
                       [query, list(source_ids) if source_ids is not None else None]).fetchone()
    return str(row[0]) if row and row[0] is not None else query


def match_named_keys(conn: psycopg.Connection, names: Sequence[str], normalized: Sequence[str],
                     embeddings: Sequence[npt.NDArray[np.floating]],
                     source_ids: Sequence[int] | None) -> list[tuple[int, float]]:
    """``sag.match_named_keys``: (key id, similarity) for caller-given key names."""
    _ensure_vector_dumper(conn)
    rows = conn.execute(
        "select key_id, similarity from sag.match_named_keys(names => %s, normalized => %s, "
        "embeddings => %b, source_ids => %s)",
        [list(names), list(normalized), list(embeddings), source_ids],
    ).fetchall()
    return [(int(k), float(s)) for k, s in rows]


@dataclass(frozen=True)
class Candidates:
    """What ``sag.retrieve`` returns: the ranked candidate graph of one question."""

    terms: list[str]
    named_keys: list[int]
    keys: list[dict[str, Any]]        # key-final: key_id, weight, step (heaviest first)
    chunks: list[dict[str, Any]]      # chunk_id, similarity, text_score, s, key_score, weight_init, via_*,
                                      # document_id
    edges: list[tuple[int, int, int]]  # (chunk_id, key_id, count), when asked for
    coverage: float                   # share of the question the best BM25 chunks hold (sag.question_coverage)
    key_weight: float                 # what the key evidence counts for in stage 3 (and in PageRank)
    direct_matches: list[int]         # best chunks by s, of named keys, the bridge: kept near the top
    timings_ms: dict[str, float]


@functools.lru_cache(maxsize=16)
def _retrieve_call(names: tuple[str, ...]) -> str:
    """``select sag.retrieve(name => %(name)s, ...)`` for these argument names, composed once: composing it
    on every search cost ~0.3 ms."""
    return sql.SQL("select sag.retrieve({})").format(sql.SQL(", ").join(
        sql.SQL("{} => {}").format(sql.Identifier(name), sql.Placeholder(name, PyFormat.BINARY)
                                   if name == "query_embedding" else sql.Placeholder(name))
        for name in names)).as_string()


def retrieve(conn: psycopg.Connection, query: str, query_embedding: npt.NDArray[np.float32], *,
             source_ids: Sequence[int] | None, params: Mapping[str, Any],
             query_tokens: Sequence[str] | None = None, seeds: Sequence[tuple[int, float]] | None = None,
             event_filter: Sequence[int] | None = None, chunk_filter: Sequence[int] | None = None,
             with_edges: bool = False) -> Candidates:
    """``sag.retrieve``: stages 1-3 in one statement.  ``params`` are its tuning arguments by name."""
    _ensure_vector_dumper(conn)
    args: dict[str, Any] = {
        "query": query, "query_embedding": query_embedding, "source_ids": source_ids,
        "query_tokens": list(query_tokens) if query_tokens is not None else None,
        "seed_key_ids": [int(k) for k, _ in seeds] if seeds is not None else None,
        "seed_weights": [float(w) for _, w in seeds] if seeds is not None else None,
        "event_filter": event_filter, "chunk_filter": chunk_filter, "with_edges": with_edges, **params,
    }
    row = conn.execute(_retrieve_call(tuple(args)), args).fetchone()
    assert row is not None
    data = row[0]
    return Candidates(terms=data["terms"], named_keys=data["named_keys"], keys=data["keys"],
                      chunks=data["chunks"], edges=[tuple(e) for e in data["edges"]],  # type: ignore[misc]
                      coverage=float(data["coverage"]), key_weight=float(data["key_weight"]),
                      direct_matches=[int(c) for c in data["direct_matches"]],
                      timings_ms=data["timings_ms"])


def fetch_hits(conn: psycopg.Connection, ranked: Sequence[tuple[int, float]], keys: Sequence[Mapping[str, Any]],
               *, top_n: int, spread_documents: bool = True, pinned: Sequence[int] = (), pinned_within: int = 3,
               document_ids: Mapping[int, int] | None = None, query_terms: Sequence[str] | None = None,
               source_ids: Sequence[int] | None = None,
               ) -> tuple[list[dict[str, Any]], dict[int, dict[str, Any]]]:
    """``sag_internal._search_hits``: the first ``top_n`` of ``ranked`` ((chunk id, score), best first) in the
    final order -- spread over documents by ``sag.spread_documents``, ``pinned`` kept among the first
    ``pinned_within`` places, unless ``spread_documents`` is false; with ``query_terms`` (the question's BM25
    terms, as :func:`retrieve` returns them), ordered by ``sag.cover_question`` over ``source_ids`` -- each with
    its final score, document, events and keys; and key-final's key details by id.  ``document_ids`` (chunk id
    -> document id, as :func:`retrieve` returns them) spares the server looking them up."""
    ids = [int(c) for c, _ in ranked]
    docs = [document_ids.get(c) for c in ids] if document_ids is not None else None
    # Arrays in binary: psycopg writes a list as text one element at a time (0.4 ms for the ~200 candidates).
    row = conn.execute(
        "select hits, keys from sag_internal._search_hits(chunk_ids => %b::bigint[], scores => %b::float8[], "
        "document_ids => %b::bigint[], key_ids => %b::bigint[], key_weights => %b::float8[], "
        "key_steps => %b::integer[], top_n => %s, spread => %s, pinned => %b::bigint[], pinned_within => %s, "
        "query_terms => %s::text[], source_ids => %s::bigint[], cover => %s)",
        [ids, [float(s) for _, s in ranked], docs, [k["key_id"] for k in keys], [float(k["weight"]) for k in keys],
         [int(k["step"]) for k in keys], top_n, spread_documents, [int(c) for c in pinned], pinned_within,
         list(query_terms) if query_terms is not None else None,
         list(source_ids) if source_ids is not None else None, query_terms is not None],
    ).fetchone()
    assert row is not None
    details, key_details = row
    return details, {k["id"]: k for k in key_details}


def context_for_query(conn: psycopg.Connection, query_embedding: npt.NDArray[np.floating],
                      source_ids: Sequence[int] | None) -> dict[str, Any]:
    """``sag.context_for_query``: the events and keys nearest to a question and the sources' key types."""
    _ensure_vector_dumper(conn)
    row = conn.execute("select sag.context_for_query(query_embedding => %b, source_ids => %s)",
                       [query_embedding, source_ids]).fetchone()
    return dict(row[0]) if row and row[0] else {"events": [], "keys": [], "key_types": []}

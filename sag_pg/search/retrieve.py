"""SAG retrieval from Python: one call of ``sag.retrieve`` (stages 1-3 in SQL), PageRank, the details.

::

    sag.retrieve (question terms and named keys, seeds, query_chunks -> activate_keys -> expand_keys
                  -> rank_chunks, the key-chunk edges) -> PageRank -> fetch

All the retrieval math runs in PostgreSQL (see docs/retrieval.md); Python only runs PageRank and builds the
result.  Without PageRank the chunks keep sag.retrieve's order by weight_init, which is what ``sag.search``
returns in psql.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, fields

import numpy as np
import numpy.typing as npt
import psycopg

from ..db import retrieval as db
from ..errors import QueryError
from .pagerank import rank as pagerank_rank
from .result import ChunkHit, KeyHit, SearchResult

__all__ = ["PROFILES", "RetrievalParams", "retrieve"]

PROFILES = ("default", "seed")  # seed: sag-algorithm's formulas as written (docs/retrieval.md)


@dataclass(frozen=True)
class RetrievalParams:
    """Every knob of the retrieval: the named arguments of ``sag.retrieve`` with its defaults, and PageRank's.

    ``match_*``: sag.match_keys (seed keys, when none are given); ``vector_limit``, ``text_limit``,
    ``text_weight``, ``text_max_postings``: sag.query_chunks (the query's own chunks and s; the BM25 posting
    budget, None = exact); ``event_limit``, ``threshold``, ``key_top_n``, ``max_key_events``,
    ``feedback_chunks``: sag.activate_keys and sag.expand_keys (``key_top_n`` is their ``top_n``);
    ``max_step``, ``min_new_keys``: sag.expand_keys; ``key_chunk_limit``: sag.rank_chunks.  ``use_names``: keys
    whose name is written in the question (sag.named_keys) join the seeds with k1 = 1 (a hub: its key weight); ``named_key_floor``:
    such a key in key-final weighs at least this share of the strongest key-final weight (0 = no floor).
    ``soft_hubs``: a hub (more than ``max_key_events`` events) can be activated, never expanded, its activation
    times (max_key_events / events)²; False: hubs never enter key-final.
    ``pagerank_alpha`` (Python only): the PageRank damping, the share of a score that comes from the graph
    rather than from the chunk's own weight_init.  ``spread_documents`` (final order): the n-th best chunk of a
    document counts 1/n of its score (``sag.spread_documents``), so the top holds more documents than one
    document's repeats.
    ``direct_within``: the question's direct matches (the chunks of highest ``s`` from distinct documents, one
    per independent witness: BM25, and the cosine when the embedder's redundancy is under 0.5; then, for each
    key the question names, its page (a document titled with its name) or its best chunk; then its bridges,
    the pages about the keys its best passage adds) whose document is not in the first ``direct_within``
    places move up to place ``direct_within`` (0: no move).  ``cover_question`` (the order within the top
    ``top_n``): from place 2, each place goes to the chunk that adds most of the question's words the places
    above do not hold (``sag.cover_question``); the same chunks either way.
    ``profile``: ``"default"`` (all of the above) or ``"seed"``: sag-algorithm's formulas as written, every
    addition off (``sag.retrieve(profile => 'seed')``: plain cosines, no hubs, no key specificity or type weights,
    no named or feedback seeds, e1 = the events' cosine, raw key weights, s = the cosine, the key term at full
    weight, no direct matches), PageRank at damping 0.85 with the keys' own weights as their restart weights,
    and its order as the final one (``spread_documents``, ``direct_within`` and ``cover_question`` do not
    apply).  ``None`` for ``match_min_similarity`` and ``pagerank_alpha`` means the profile's value (0.45 and
    0.3; the seed's 0 and 0.85).
    docs/retrieval.md gives the reasons for each default and every deviation from the seed with its measurement.
    """

    match_top_k: int = 30
    match_min_similarity: float | None = None
    event_limit: int = 50
    threshold: float = 0.1
    key_top_n: int = 20
    max_key_events: int | None = None
    max_step: int = 3
    min_new_keys: int = 1
    vector_limit: int = 50
    text_limit: int = 50
    text_max_postings: int | None = 2000
    key_chunk_limit: int = 100
    text_weight: float | None = None
    feedback_chunks: int = 1
    use_names: bool = True
    named_key_floor: float = 1.0
    specificity: bool = True
    adaptive_keys: bool = True
    soft_hubs: bool = True
    pagerank_alpha: float | None = None
    spread_documents: bool = True
    direct_within: int = 3
    cover_question: bool = True
    profile: str = "default"

    @property
    def seed(self) -> bool:
        """True for the seed profile (sag-algorithm's formulas as written)."""
        return self.profile == "seed"

    def alpha(self) -> float:
        """PageRank's damping: as given, else the profile's (0.3; the seed's usual 0.85)."""
        return self.pagerank_alpha if self.pagerank_alpha is not None else (0.85 if self.seed else 0.3)

    def final_order(self) -> tuple[bool, int, bool]:
        """(spread_documents, direct_within, cover_question); the seed profile has none of them."""
        if self.seed:
            return False, 0, False
        return self.spread_documents, self.direct_within, self.cover_question

    def sql_arguments(self) -> dict[str, object]:
        """The named arguments of sag.retrieve (everything but PageRank's damping and the final order)."""
        return {name: value for name, value in _values(self).items()
                if name not in ("pagerank_alpha", "spread_documents", "direct_within", "cover_question")}


def _values(params: RetrievalParams) -> dict[str, object]:
    """The fields by name (dataclasses.asdict deep-copies every value: 0.4 ms a search)."""
    return {f.name: getattr(params, f.name) for f in fields(params)}


_INT_LIMIT = 2**31 - 1


def _check(params: RetrievalParams) -> None:
    """What SQL would refuse with a less helpful message (an int4 overflow is 'function does not exist')."""
    for name, value in _values(params).items():
        if isinstance(value, int) and not isinstance(value, bool) and not -_INT_LIMIT <= value <= _INT_LIMIT:
            raise QueryError(f"{name} must be at most {_INT_LIMIT}, got {value}")
    if params.profile not in PROFILES:
        raise QueryError(f"profile must be one of {', '.join(PROFILES)}, got {params.profile!r}")
    if not 0 <= params.alpha() < 1:
        raise QueryError(f"pagerank_alpha must be in [0, 1), got {params.pagerank_alpha}")
    if params.direct_within < 0:
        raise QueryError(f"direct_within must be >= 0, got {params.direct_within}")


def _query_vector(embedding: npt.ArrayLike) -> npt.NDArray[np.float32]:
    vec = np.asarray(embedding, dtype=np.float32)
    if vec.ndim != 1 or vec.size == 0:
        raise QueryError(f"query_embedding must be a non-empty 1-D vector, got shape {vec.shape}")
    if not np.all(np.isfinite(vec)):
        raise QueryError("query_embedding contains NaN or infinite values")
    return np.ascontiguousarray(vec)


def _one_transaction(conn: psycopg.Connection) -> AbstractContextManager[object]:
    """The search's two statements in one transaction, unless the connection commits each by itself: under
    READ COMMITTED a transaction gives them no common snapshot, and its BEGIN and COMMIT are two more round
    trips."""
    return nullcontext() if conn.autocommit else conn.transaction()


def retrieve(
    conn: psycopg.Connection,
    query: str,
    query_embedding: npt.NDArray[np.floating],
    *,
    source_ids: list[int] | None,
    query_tokens: list[str] | None = None,
    seed_keys: list[tuple[int, float]] | None = None,
    top_n: int = 10,
    params: RetrievalParams = RetrievalParams(),
    use_pagerank: bool = True,
    allowed: tuple[Sequence[int], Sequence[int]] | None = None,
) -> SearchResult:
    """Run the SAG retrieval for one query and return the ``top_n`` chunks.

    ``query_embedding`` comes from the database's embedder.  ``query_tokens``: the BM25 terms, None = the
    question's own (``sag.query_terms``).  ``source_ids`` None searches every source; otherwise nothing outside
    them is used.  ``seed_keys`` are (key id, weight) pairs for stage 1; None: the keys most similar to the
    query (``sag.match_keys``) and the keys it names (``sag.named_keys``).  ``allowed`` narrows the search to a
    pre-computed set, ``(event ids, chunk ids)`` as :func:`~sag_pg.db.restrict.allowed_events` returns it:
    only those events activate keys and only those chunks are returned (None: no restriction).  Without
    PageRank, chunks are ordered by weight_init.  Raises :class:`~sag_pg.errors.QueryError` for invalid
    parameters.
    """
    if top_n < 1:
        raise QueryError(f"top_n must be >= 1, got {top_n}")
    _check(params)
    vec = _query_vector(query_embedding)
    event_filter = chunk_filter = None
    if allowed is not None:
        event_filter = sorted({int(e) for e in allowed[0]})
        chunk_filter = sorted({int(c) for c in allowed[1]})
    started = time.perf_counter()
    try:
        with _one_transaction(conn):
            t0 = time.perf_counter()
            found = db.retrieve(conn, query, vec, source_ids=source_ids, params=params.sql_arguments(),
                                query_tokens=query_tokens, seeds=seed_keys, event_filter=event_filter,
                                chunk_filter=chunk_filter, with_edges=use_pagerank)
            timings = {"retrieve": (time.perf_counter() - t0) * 1000.0,
                       **{f"sql_{k}": v for k, v in found.timings_ms.items()}}
            weight_init = {c["chunk_id"]: c["weight_init"] for c in found.chunks}
            if use_pagerank and found.chunks:
                t0 = time.perf_counter()
                # The seed: every key and chunk restarts from its own initial weight (sag-algorithm §2.4 step 5).
                key_pers = {k["key_id"]: k["weight"] if params.seed else k["weight"] / k["step"] for k in found.keys}
                # The graph's share of a score is key evidence too: it counts as much as in stage 3 (1 in the seed).
                scores = pagerank_rank(weight_init, key_pers, found.edges, alpha=params.alpha() * found.key_weight)
                timings["pagerank"] = (time.perf_counter() - t0) * 1000.0
            else:
                scores = weight_init
            # Best score first; ties by sag.retrieve's order (weight_init, then chunk id).
            order = sorted(range(len(found.chunks)), key=lambda i: (-scores[found.chunks[i]["chunk_id"]], i))
            t0 = time.perf_counter()
            spread, within, cover = params.final_order()
            details, key_info = db.fetch_hits(
                conn, [(found.chunks[i]["chunk_id"], scores[found.chunks[i]["chunk_id"]]) for i in order],
                found.keys, top_n=top_n, spread_documents=spread,
                pinned=found.direct_matches, pinned_within=within,
                document_ids={c["chunk_id"]: c["document_id"] for c in found.chunks},
                query_terms=found.terms if cover else None, source_ids=source_ids)
            timings["fetch"] = (time.perf_counter() - t0) * 1000.0
            by_id = {c["chunk_id"]: c for c in found.chunks}
            top = [by_id[d["chunk_id"]] for d in details]
    except psycopg.errors.InvalidParameterValue as exc:
        raise QueryError(exc.diag.message_primary or str(exc)) from exc
    timings["total"] = (time.perf_counter() - started) * 1000.0

    chunks = [
        ChunkHit(
            chunk_id=c["chunk_id"], document_uri=d["uri"], document_title=d["document_title"], title=d["title"],
            content=d["content"], score=float(d["score"]), similarity=c["similarity"],
            text_score=c["text_score"], key_score=c["key_score"], weight_init=c["weight_init"],
            via_keys=c["via_keys"], via_vector=c["via_vector"], via_text=c["via_text"], events=d["events"],
            keys=d["keys"], direct_match=c["chunk_id"] in found.direct_matches,
        )
        for c, d in zip(top, details)
    ]
    keys = [
        KeyHit(key_id=k["key_id"], type=key_info[k["key_id"]]["type"], name=key_info[k["key_id"]]["name"],
               value=key_info[k["key_id"]]["value"], weight=k["weight"], step=k["step"])
        for k in found.keys
        if k["key_id"] in key_info
    ]
    return SearchResult(query=query, chunks=chunks, keys=keys, timings_ms=timings, terms=found.terms,
                        named_keys=found.named_keys)

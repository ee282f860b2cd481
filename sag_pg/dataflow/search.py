"""One DataFlow search from Python: entities, one call of ``sag.dataflow_search``, the chunks' details.

::

    question -> entities (rule extractor) -> sag.dataflow_search (entities, structured + vector lists,
    weighted RRF, propagation, four-factor score, chunk recall and completion) -> chunk details

The result is a :class:`~sag_pg.search.result.SearchResult` whose chunks come in DataFlow's order (documents
by their best chunk, each document's chunks in reading order, completed chunks included) and whose ``keys`` are
the question's entities (step 0, weight = their type's weight); ``trail`` is the SQL's whole explain output.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg

from ..db import dataflow as db
from ..db.retrieval import fetch_hits
from ..errors import QueryError
from ..search.result import ChunkHit, KeyHit, SearchResult
from .entities import query_entities

__all__ = ["DataflowParams", "DataflowResult", "dataflow_search"]


@dataclass(frozen=True)
class DataflowParams:
    """The knobs of ``sag.dataflow_search`` with the seed's defaults (docs/dataflow.md).

    ``depth``, ``breadth``, ``threshold``: the BFS (seed §6: 3, 5, 0.5); ``decay``: activation kept per hop;
    ``focus``: preferred topics/tags (None: the sources' config ``focus``); ``score_weights``: relevance, vector,
    time, preference (seed §7.1); ``sql_weight``/``vector_weight``: the RRF weights (seed §8.1); ``max_gap``:
    the widest gap between two recalled chunks of a document that completion fills; ``specificity``: names
    count by their IDF in the matches (False: the seed's unweighted formulas); ``lexical_discount``: the
    score's vector weight keeps only what the embedder adds beyond the words when BM25 is fused (scaled by 1 -
    its lexical redundancy; False: ``score_weights`` as given); ``type_weights``: entity-type weights for this
    search over DataFlow's own (the seed's ENTITY_TYPE_WEIGHTS and the sources' ``dataflow_type_weights``
    setting, ``sag-pg source --dataflow-type-weight``; SAG's ``key_types`` are not used)."""

    depth: int = 3
    breadth: int = 5
    threshold: float = 0.5
    decay: float = 0.8
    focus: tuple[str, ...] | None = None
    score_weights: tuple[float, float, float, float] = (0.3, 0.3, 0.2, 0.2)
    sql_weight: float = 0.5
    vector_weight: float = 0.5
    max_frontier: int = 10
    candidate_limit: int = 10
    max_gap: int = 1
    use_terms: bool = True
    key_match_top_k: int = 5
    key_min_similarity: float = 0.6
    text_weight: float = 0.5
    time_basis: str = "own"
    text_seeds: bool = False
    specificity: bool = True
    lexical_discount: bool = False
    type_weights: Mapping[str, float] | None = None

    def sql_arguments(self) -> dict[str, Any]:
        args = asdict(self)
        del args["focus"]
        args["score_weights"] = list(self.score_weights)
        args["type_weights"] = dict(self.type_weights) if self.type_weights is not None else None
        return args


@dataclass
class DataflowResult(SearchResult):
    """A SearchResult with DataFlow's explain trail (entities, lists, fusion, hops, each factor of each score)."""

    trail: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "strategy": "dataflow", "trail": self.trail}


def _check(top_n: int, params: DataflowParams) -> None:
    if top_n < 1:
        raise QueryError(f"top_n must be >= 1, got {top_n}")
    if params.depth < 0 or params.breadth < 1:
        raise QueryError(f"depth must be >= 0 and breadth >= 1, got {params.depth} and {params.breadth}")
    if not 0 <= params.threshold <= 1:
        raise QueryError(f"threshold must be in [0, 1], got {params.threshold}")
    if not 0 < params.decay <= 1:
        raise QueryError(f"decay must be in (0, 1], got {params.decay}")


def dataflow_search(conn: psycopg.Connection, query: str, query_embedding: npt.NDArray[np.floating], *,
                    source_ids: list[int] | None, top_n: int = 10, keys: Sequence[str] | None = None,
                    params: DataflowParams | None = None) -> DataflowResult:
    """The DataFlow search of ``query``: the ``top_n`` recalled chunks plus completed ones, in reading order.

    ``keys``: entity names given by the caller (or an LLM), matched before the question's own.  Raises
    :class:`~sag_pg.errors.QueryError` for invalid parameters."""
    params = params or DataflowParams()
    _check(top_n, params)
    started = time.perf_counter()
    names, types = query_entities(query, keys)
    vec = np.ascontiguousarray(np.asarray(query_embedding, dtype=np.float32))
    try:
        with conn.transaction():
            t0 = time.perf_counter()
            found = db.dataflow_search(conn, query, vec, source_ids=source_ids, entity_names=names,
                                       entity_types=types, focus=params.focus,
                                       params={"top_n": top_n, **params.sql_arguments()})
            timings = {"dataflow": (time.perf_counter() - t0) * 1000.0,
                       **{f"sql_{k}": v for k, v in found["timings_ms"].items()}}
            entities = found["entities"]
            t0 = time.perf_counter()
            # The chunks stay in DataFlow's reading order (no spread over documents).
            details, key_info = fetch_hits(conn, [(c["chunk_id"], float(c["score"])) for c in found["chunks"]],
                                           [{"key_id": e["key_id"], "weight": e["weight"], "step": 0}
                                            for e in entities],
                                           top_n=max(len(found["chunks"]), 1), spread_documents=False,
                                           source_ids=source_ids)
            timings["fetch"] = (time.perf_counter() - t0) * 1000.0
    except psycopg.errors.InvalidParameterValue as exc:
        raise QueryError(exc.diag.message_primary or str(exc)) from exc
    timings["total"] = (time.perf_counter() - started) * 1000.0
    scored = {e["chunk_id"]: e for e in reversed(found["events"])}  # each chunk's best event
    chunks = [
        ChunkHit(chunk_id=c["chunk_id"], document_uri=d["uri"], document_title=d["document_title"], title=d["title"],
                 content=d["content"], score=float(c["score"]),
                 similarity=float(scored.get(c["chunk_id"], {}).get("similarity", 0.0)), text_score=0.0,
                 key_score=float(scored.get(c["chunk_id"], {}).get("relevance", 0.0)), weight_init=float(c["score"]),
                 via_keys=not c["completed"], via_vector=False, via_text=False, events=d["events"], keys=d["keys"])
        for c, d in zip(found["chunks"], details)
    ]
    key_hits = [KeyHit(key_id=e["key_id"], type=e["type"], name=e["name"], value=key_info[e["key_id"]]["value"],
                       weight=float(e["weight"]), step=0)
                for e in entities if e["key_id"] in key_info]
    return DataflowResult(query=query, chunks=chunks, keys=key_hits, timings_ms=timings, trail=found)

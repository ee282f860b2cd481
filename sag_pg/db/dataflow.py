"""The DataFlow SQL entry point (sql/idempotent/045-049-dataflow-*.sql), one typed Python function.

``sag.dataflow_search`` holds every formula; this only passes the arguments by name (the query vector in
binary, as sag_pg.db.retrieval does) and returns its jsonb.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg
from psycopg import sql
from psycopg.adapt import PyFormat
from psycopg.types.json import Jsonb

from .retrieval import _ensure_vector_dumper

__all__ = ["dataflow_search"]


def dataflow_search(conn: psycopg.Connection, query: str, query_embedding: npt.NDArray[np.float32], *,
                    source_ids: Sequence[int] | None, params: Mapping[str, Any],
                    entity_names: Sequence[str] | None = None, entity_types: Sequence[str] | None = None,
                    focus: Sequence[str] | None = None) -> dict[str, Any]:
    """``sag.dataflow_search``: entities, lists, fusion, propagation, scores and chunks as one jsonb.
    ``params`` are its tuning arguments by name (top_n, depth, breadth, threshold, ...)."""
    _ensure_vector_dumper(conn)
    args: dict[str, Any] = {
        "query": query, "query_embedding": query_embedding,
        "source_ids": list(source_ids) if source_ids is not None else None,
        "entity_names": list(entity_names) if entity_names is not None else None,
        "entity_types": list(entity_types) if entity_types is not None else None,
        "focus": list(focus) if focus is not None else None, **params,
    }
    if args.get("type_weights") is not None:
        args["type_weights"] = Jsonb({str(k): float(v) for k, v in dict(args["type_weights"]).items()})
    call = sql.SQL("select sag.dataflow_search({})").format(sql.SQL(", ").join(
        sql.SQL("{} => {}").format(sql.Identifier(name), sql.Placeholder(name, PyFormat.BINARY)
                                   if name == "query_embedding" else sql.Placeholder(name))
        for name in args))
    row = conn.execute(call, args).fetchone()
    assert row is not None
    return dict(row[0])

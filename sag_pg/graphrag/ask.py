"""One entry point for ``SAG.ask(mode="local" | "global" | "drift")``: checks the LLM and the source, meters
the calls, runs the search on one connection."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg

from ..answer.cited import require_llm
from ..answer.meter import MeteredLLM
from ..db.connection import Database
from ..embedders import Embedder
from ..errors import QueryError, error_for_sqlstate
from ..llm import LLM
from .drift import DriftParams, drift_search
from .global_search import GlobalParams, global_search
from .history import parse_history
from .local import LocalParams, local_search
from .result import GraphRAGAnswer

__all__ = ["MODES", "graphrag_ask", "one_source", "sql_errors"]

MODES = ("local", "global", "drift")


def one_source(source: str | Sequence[str] | None) -> str | None:
    """A community hierarchy belongs to one source (or to all): a list must name exactly one."""
    if source is None or isinstance(source, str):
        return source
    names = list(source)
    if len(names) != 1:
        raise QueryError(f"{len(names)} sources given: local, global and drift search one source (or all)")
    return names[0]


@contextmanager
def sql_errors() -> Iterator[None]:
    """The SQL functions' P0002 (no hierarchy, unknown source) and 22023 (bad parameter) as SagErrors."""
    try:
        yield
    except psycopg.Error as exc:
        message = (exc.diag.message_primary or str(exc)) if exc.diag else str(exc)
        if exc.diag and exc.diag.message_hint:
            message += f" ({exc.diag.message_hint.rstrip('.')})"
        mapped = error_for_sqlstate(exc.sqlstate, message)
        if mapped is None:
            raise
        raise mapped from exc


def graphrag_ask(db: Database, embedder: Embedder, llm: LLM | None, question: str, *, mode: str,
                 source: str | Sequence[str] | None, params: LocalParams | GlobalParams | DriftParams | None = None,
                 concurrency: int = 4, prompts_dir: Path | None = None,
                 history: Sequence[Any] | None = None) -> GraphRAGAnswer:
    """Answer with GraphRAG's local, global or DRIFT search; ConfigError naming SAG_LLM without an LLM.
    ``history``: the conversation so far, ``[{"role": "user" | "assistant", "content": ...}]``
    (:mod:`.history`)."""
    if mode not in MODES:
        raise QueryError(f"unknown GraphRAG mode {mode!r}: use {', '.join(MODES)}")
    turns = parse_history(history)
    metered = MeteredLLM(require_llm(llm, f"{mode} search"))
    name = one_source(source)
    with sql_errors(), db.connect() as conn:
        if mode == "local":
            return local_search(conn, embedder, metered, question, name, _params(params, LocalParams),
                                prompts_dir=prompts_dir, history=turns)
        if mode == "global":
            return global_search(conn, metered, question, name, _params(params, GlobalParams),
                                 concurrency=concurrency, prompts_dir=prompts_dir, history=turns)
        return drift_search(conn, embedder, metered, question, name, _params(params, DriftParams),
                            concurrency=concurrency, prompts_dir=prompts_dir, history=turns)


def _params(given: Any, kind: type) -> Any:
    if given is None:
        return kind()
    if not isinstance(given, kind):
        raise QueryError(f"{kind.__name__} expected for this mode, got {type(given).__name__}")
    return given

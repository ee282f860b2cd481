"""Local search (seed "Local Search"): the context tables come from ``sag.local_context`` (built in SQL from
keys, key co-occurrence, chunks and community reports within the token budget); with an LLM, the
``graphrag_local`` prompt answers from them.

Defaults are GraphRAG's: 10 entities from 2× oversampling, 10 relationships per entity, 12,000 tokens of
which 50 % text units (sources) and 15 % community reports, the rest entities and relationships.  The entities
are first the keys the question names (with their aliases in other languages, as ``sag.retrieve`` names them),
then ``include_entities``, then the nearest keys above the calibrated key floor; ``exclude_entities`` (and their
aliases) never (GraphRAG's include/exclude entity names).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import psycopg

from .. import prompts
from ..answer.meter import MeteredLLM
from ..db import graphrag as store
from ..embedders import Embedder
from ..embedders.base import embed_queries
from ..errors import QueryError
from .result import GraphRAGAnswer

__all__ = ["LocalParams", "build_local_context", "local_answer", "local_search"]

RESPONSE_TYPE = "multiple paragraphs"


@dataclass(frozen=True)
class LocalParams:
    level: int | None = None
    top_k_entities: int = 10
    oversample: float = 2.0
    top_k_relationships: int = 10
    max_tokens: int = 12_000
    text_unit_prop: float = 0.5
    community_prop: float = 0.15
    response_type: str = RESPONSE_TYPE
    include_entities: tuple[str, ...] = ()
    exclude_entities: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def build_local_context(conn: psycopg.Connection, embedder: Embedder, query: str, source: str | None,
                        params: LocalParams = LocalParams()) -> dict[str, Any]:
    """The context tables of ``query`` (``sag.local_context`` with the query embedded by ``embedder``)."""
    if not query.strip():
        raise QueryError("the question is empty")
    vector = embed_queries(embedder, [query])[0]
    return store.local_context(conn, query, vector, source=source, level=params.level,
                               top_k_entities=params.top_k_entities, oversample=params.oversample,
                               top_k_relationships=params.top_k_relationships, max_tokens=params.max_tokens,
                               text_unit_prop=params.text_unit_prop, community_prop=params.community_prop,
                               include_entities=params.include_entities or None,
                               exclude_entities=params.exclude_entities or None)


def local_answer(llm: MeteredLLM, query: str, context: dict[str, Any], *, response_type: str = RESPONSE_TYPE,
                 prompts_dir: Path | None = None, node: str | None = None) -> str:
    """The LLM's answer from the context tables."""
    prompt = prompts.render("graphrag_local", prompts_dir=prompts_dir, query=query, response_type=response_type,
                            context_data=context.get("context_text") or "(no data)")
    return llm.complete_text(prompt, purpose="graphrag_local", node=node).strip()


def local_search(conn: psycopg.Connection, embedder: Embedder, llm: MeteredLLM, question: str, source: str | None,
                 params: LocalParams = LocalParams(), *, prompts_dir: Path | None = None) -> GraphRAGAnswer:
    """Context tables, then the LLM's answer from them."""
    started = time.perf_counter()
    context = build_local_context(conn, embedder, question, source, params)
    text = local_answer(llm, question, context, response_type=params.response_type, prompts_dir=prompts_dir)
    return GraphRAGAnswer(question=question, mode="local", text=text, context=context, calls=list(llm.records),
                          seconds=time.perf_counter() - started)

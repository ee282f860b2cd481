"""Normal mode (sag-algorithm §3.3): background by vector search, an LLM rewrite of the question and
its keys, then the atomic search with both."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psycopg

from ..db import retrieval as db
from ..embedders.base import embed_queries
from ..prompts import bullets, render
from ..prompts.schemas import REWRITE_QUERY_SCHEMA

if TYPE_CHECKING:
    from ..embedders.base import Embedder
    from ..llm.base import LLM


@dataclass(frozen=True)
class Rewrite:
    original: str
    query: str
    keys: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"original": self.original, "query": self.query, "keys": self.keys}


def query_context(conn: psycopg.Connection, embedder: Embedder, query: str,
                  source_ids: list[int] | None) -> dict[str, Any]:
    """The events and keys nearest to the query, and the sources' key types (one SQL call)."""
    return db.context_for_query(conn, embed_queries(embedder, [query])[0], source_ids)


def rewrite_query(conn: psycopg.Connection, embedder: Embedder, llm: LLM, query: str,
                  source_ids: list[int] | None, *, prompts_dir: Path | None = None) -> Rewrite:
    started = time.perf_counter()
    context = query_context(conn, embedder, query, source_ids)
    prompt = render(
        "rewrite_query",
        prompts_dir=prompts_dir,
        query=query,
        events=bullets(f"{e['title']}: {e['content']}" for e in context["events"]),
        keys=bullets(f"{k['type']}: {k['name']}" for k in context["keys"]),
        key_types=bullets(context["key_types"]),
    )
    answer = llm.complete_json(prompt, schema=REWRITE_QUERY_SCHEMA, purpose="rewrite_query")
    keys = _key_names(answer.get("keys", []))
    return Rewrite(original=query, query=answer["query"].strip() or query, keys=keys,
                   seconds=time.perf_counter() - started)


def _key_names(keys: Sequence[dict[str, Any]]) -> list[str]:
    names: list[str] = []
    for key in keys:
        value = key.get("value")
        if isinstance(value, bool) or value is None:
            continue  # a yes/no fact names no key to match
        text = f"{value:g}" if isinstance(value, float) else str(value).strip()
        if text and text not in names:
            names.append(text)
    return names

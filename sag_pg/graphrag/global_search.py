"""Global search (seed "Global Search"): map over the community reports of one level, reduce the rated points.

Map: ``sag.report_batches`` packs the level's reports (``level`` None: GraphRAG's default 2, or the deepest
level there is) in a seeded shuffle (GraphRAG's ``shuffle_data``, random state 86; ``shuffle=False``: best rated
first) into batches whose report table stays within ``max_tokens``; the conversation history (:mod:`.history`)
goes before each batch; each batch is one ``graphrag_map`` call answering JSON points
``{"description", "score"}``.  A batch whose answer is still unusable after the client's repair round is
reported (its error in ``context.batches`` and a note) and the others go on; when every batch fails the
search fails.  Reduce: ``sag.reduce_points`` drops points scored 0, sorts the rest and keeps the best within
``reduce_max_tokens``; one ``graphrag_reduce`` call writes the answer from them (none when no point is left,
unless ``allow_general_knowledge``).  ``allow_general_knowledge`` (GraphRAG's option, off by default) adds the
seed's knowledge prompt to the reduce call: the answer may use real-world knowledge outside the dataset, marked
``[LLM: verify]``.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from .. import prompts
from ..answer.meter import MeteredLLM
from ..db import graphrag as store
from ..errors import LLMError, QueryError
from .history import HistoryParams, Turn, prefixed
from .result import GraphRAGAnswer
from .schemas import MAP_SCHEMA

__all__ = ["GENERAL_KNOWLEDGE", "NO_DATA_ANSWER", "GlobalParams", "global_search"]

NO_DATA_ANSWER = "I am sorry but I am unable to answer this question given the provided data."

# The seed's knowledge_prompt (GraphRAG's GENERAL_KNOWLEDGE_INSTRUCTION), added to the reduce prompt.
GENERAL_KNOWLEDGE = (
    "The response may also include relevant real-world knowledge outside the dataset, but it must be explicitly "
    "annotated with a verification tag [LLM: verify]. For example:\n"
    "\"This is an example sentence supported by real-world knowledge [LLM: verify].\"")


@dataclass(frozen=True)
class GlobalParams:
    """GraphRAG's global search settings: ``level`` None = 2 (or the deepest level there is); ``shuffle`` and
    ``seed`` the report order (shuffle_data, random_state 86); ``allow_general_knowledge`` the knowledge prompt;
    ``history`` how much of the conversation goes before each batch."""

    level: int | None = None
    max_tokens: int = 8_000
    reduce_max_tokens: int = 8_000
    min_rating: float = 0.0
    response_type: str = "multiple paragraphs"
    shuffle: bool = True
    seed: int = 86
    allow_general_knowledge: bool = False
    history: HistoryParams = field(default_factory=HistoryParams)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def global_search(conn: psycopg.Connection, llm: MeteredLLM, question: str, source: str | None,
                  params: GlobalParams = GlobalParams(), *, concurrency: int = 4,
                  prompts_dir: Path | None = None, history: list[Turn] | None = None) -> GraphRAGAnswer:
    """Map-reduce over the reports; see the module docstring."""
    if not question.strip():
        raise QueryError("the question is empty")
    started = time.perf_counter()
    level = store.default_level(conn, source, params.level)
    batches = store.report_batches(conn, source=source, level=level, max_tokens=params.max_tokens,
                                   min_rating=params.min_rating, shuffle=params.shuffle, seed=params.seed)
    conn.commit()
    if not batches:
        raise QueryError(f"no community reports on level {level}: run `sag-pg communities build` "
                         "(or choose another --level)")
    turns = list(history or [])

    def map_one(batch: dict[str, Any]) -> dict[str, Any]:
        prompt = prompts.render("graphrag_map", prompts_dir=prompts_dir, query=question,
                                context_data=prefixed(batch["context"], turns, params.history))
        node = f"map{batch['batch']}"
        try:
            data = llm.complete_json(prompt, schema=MAP_SCHEMA, purpose="graphrag_map", node=node)
        except LLMError as exc:
            return {**batch, "points": [], "error": str(exc)}
        return {**batch, "points": [{"description": str(p["description"]), "score": float(p["score"])}
                                    for p in data["points"]], "error": None}

    with ThreadPoolExecutor(max_workers=max(1, min(concurrency, len(batches)))) as pool:
        mapped = list(pool.map(map_one, batches))
    failed = [m for m in mapped if m["error"]]
    notes = [f"map batch {m['batch']} failed: {m['error']}" for m in failed]
    if len(failed) == len(mapped):
        raise LLMError(f"global search: every map call failed; first: {failed[0]['error']}")
    points = [{"analyst": m["batch"], "score": p["score"], "description": p["description"]}
              for m in mapped for p in m["points"]]
    reduced = store.reduce_points(conn, points, params.reduce_max_tokens)
    conn.commit()
    if not reduced["points"] and not params.allow_general_knowledge:
        text = NO_DATA_ANSWER
        notes.append("no map answer had a point scored above 0: the reduce call was not made")
    else:
        prompt = prompts.render("graphrag_reduce", prompts_dir=prompts_dir, query=question,
                                response_type=params.response_type, report_data=reduced["text"] or "(none)")
        if params.allow_general_knowledge:  # appended, as GraphRAG appends it to the reduce prompt
            prompt += "\n" + GENERAL_KNOWLEDGE
        text = llm.complete_text(prompt, purpose="graphrag_reduce", node="reduce").strip()
    context = {"params": params.to_dict(), "level": level, "history_turns": len(turns),
               "batches": [{"batch": m["batch"], "report_ids": m["report_ids"], "tokens": m["tokens"],
                            "points": m["points"], "error": m["error"]} for m in mapped],
               "reduce": reduced}
    return GraphRAGAnswer(question=question, mode="global", text=text, context=context, calls=list(llm.records),
                          notes=notes, seconds=time.perf_counter() - started)

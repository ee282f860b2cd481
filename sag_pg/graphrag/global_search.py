"""Global search (seed "Global Search"): map over the community reports of one level, reduce the rated points.

Map: ``sag.report_batches`` packs the level's reports (best rated first) into batches whose report table
stays within ``max_tokens``; each batch is one ``graphrag_map`` call answering JSON points
``{"description", "score"}``.  A batch whose answer is still unusable after the client's repair round is
reported (its error in ``context.batches`` and a note) and the others go on; when every batch fails the
search fails.  Reduce: ``sag.reduce_points`` drops points scored 0, sorts the rest and keeps the best within
``reduce_max_tokens``; one ``graphrag_reduce`` call writes the answer from them (none when no point is left).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import psycopg

from .. import prompts
from ..answer.meter import MeteredLLM
from ..db import graphrag as store
from ..errors import LLMError, QueryError
from .result import GraphRAGAnswer
from .schemas import MAP_SCHEMA

__all__ = ["NO_DATA_ANSWER", "GlobalParams", "global_search"]

NO_DATA_ANSWER = "I am sorry but I am unable to answer this question given the provided data."


@dataclass(frozen=True)
class GlobalParams:
    level: int = 0
    max_tokens: int = 8_000
    reduce_max_tokens: int = 8_000
    min_rating: float = 0.0
    response_type: str = "multiple paragraphs"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def global_search(conn: psycopg.Connection, llm: MeteredLLM, question: str, source: str | None,
                  params: GlobalParams = GlobalParams(), *, concurrency: int = 4,
                  prompts_dir: Path | None = None) -> GraphRAGAnswer:
    """Map-reduce over the reports; see the module docstring."""
    if not question.strip():
        raise QueryError("the question is empty")
    started = time.perf_counter()
    batches = store.report_batches(conn, source=source, level=params.level, max_tokens=params.max_tokens,
                                   min_rating=params.min_rating)
    conn.commit()
    if not batches:
        raise QueryError(f"no community reports on level {params.level}: run `sag-pg communities build` "
                         "(or choose another --level)")

    def map_one(batch: dict[str, Any]) -> dict[str, Any]:
        prompt = prompts.render("graphrag_map", prompts_dir=prompts_dir, query=question,
                                context_data=batch["context"])
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
    if not reduced["points"]:
        text = NO_DATA_ANSWER
        notes.append("no map answer had a point scored above 0: the reduce call was not made")
    else:
        prompt = prompts.render("graphrag_reduce", prompts_dir=prompts_dir, query=question,
                                response_type=params.response_type, report_data=reduced["text"])
        text = llm.complete_text(prompt, purpose="graphrag_reduce", node="reduce").strip()
    context = {"params": params.to_dict(),
               "batches": [{"batch": m["batch"], "report_ids": m["report_ids"], "tokens": m["tokens"],
                            "points": m["points"], "error": m["error"]} for m in mapped],
               "reduce": reduced}
    return GraphRAGAnswer(question=question, mode="global", text=text, context=context, calls=list(llm.records),
                          notes=notes, seconds=time.perf_counter() - started)

"""DRIFT search (seed "DRIFT Search"): a HyDE-primed global start, then local searches of follow-up questions.

1. Primer: the ``graphrag_hyde`` prompt writes a hypothetical answer shaped like the best-rated report (the
   seed picks a random report; the best one keeps runs reproducible); it is embedded and the ``primer_k``
   nearest reports (``sag.nearest_reports``) are split into ``primer_folds`` groups, one ``graphrag_drift_primer``
   call each (intermediate answer, score, follow-up queries).  The root action joins them: answers
   concatenated, score averaged, follow-ups in order without repeats.
2. ``n_depth`` iterations: the first ``k_followups`` unanswered actions (in the order they were asked) each get a
   local search context (``sag.local_context``) and one ``graphrag_drift_local`` call (response, score,
   follow-ups); their follow-ups become new actions one level deeper.
3. Reduce: the answered actions, best score first, within ``reduce_max_tokens`` (``sag.reduce_points``), and one
   ``graphrag_drift_reduce`` call for the answer.

The whole trace is kept: every action (query, answer, score, depth, parent, its calls and tokens) and the
edges between them, as the seed's serialized ``QueryState`` (nodes and edges).
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
from ..embedders import Embedder
from ..embedders.base import embed_queries
from ..errors import LLMError, QueryError
from .local import LocalParams, build_local_context
from .result import GraphRAGAnswer
from .schemas import DRIFT_LOCAL_SCHEMA, DRIFT_PRIMER_SCHEMA

__all__ = ["DriftAction", "DriftParams", "drift_search"]


@dataclass(frozen=True)
class DriftParams:
    n_depth: int = 3
    k_followups: int = 3
    primer_k: int = 5
    primer_folds: int = 1
    follow_ups: int = 5
    level: int | None = None
    reduce_max_tokens: int = 8_000
    response_type: str = "multiple paragraphs"
    # GraphRAG's DRIFT local searches: mostly text units, a smaller budget than a plain local search.
    local: LocalParams = field(default_factory=lambda: LocalParams(max_tokens=6_000, text_unit_prop=0.9,
                                                                   community_prop=0.1))

    def validate(self) -> None:
        for name in ("n_depth", "k_followups", "primer_k", "primer_folds", "follow_ups"):
            if getattr(self, name) < 1:
                raise QueryError(f"drift: {name} must be >= 1, got {getattr(self, name)}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class DriftAction:
    """One node of the query graph: a query, its answer and score, and what it cost."""

    id: int
    query: str
    depth: int
    parent: int | None
    answer: str | None = None
    score: float | None = None
    follow_ups: list[int] = field(default_factory=list)
    status: str = "pending"  # pending | done | failed
    error: str | None = None
    llm_calls: int = 0
    prompt_tokens: int = 0
    output_tokens: int = 0
    context_tokens: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "query": self.query, "depth": self.depth, "parent": self.parent,
                "answer": self.answer, "score": self.score, "follow_ups": self.follow_ups, "status": self.status,
                "error": self.error, "metadata": {"llm_calls": self.llm_calls, "prompt_tokens": self.prompt_tokens,
                                                  "output_tokens": self.output_tokens,
                                                  "context_tokens": self.context_tokens}}


def drift_search(conn: psycopg.Connection, embedder: Embedder, llm: MeteredLLM, question: str, source: str | None,
                 params: DriftParams = DriftParams(), *, concurrency: int = 4,
                 prompts_dir: Path | None = None) -> GraphRAGAnswer:
    """DRIFT; see the module docstring."""
    params.validate()
    if not question.strip():
        raise QueryError("the question is empty")
    started = time.perf_counter()
    actions: list[DriftAction] = []
    notes: list[str] = []

    def charge(action: DriftAction, node: str) -> None:
        for record in llm.records:
            if record.node == node:
                action.llm_calls += 1
                action.prompt_tokens += record.prompt_tokens
                action.output_tokens += record.completion_tokens

    def add_follow_ups(parent: DriftAction, queries: list[str]) -> None:
        for q in queries:
            child = DriftAction(id=len(actions), query=q.strip(), depth=parent.depth + 1, parent=parent.id)
            actions.append(child)
            parent.follow_ups.append(child.id)

    # 1. Primer.
    best = store.community_reports(conn, source, params.level)
    if not best:
        raise QueryError("drift search needs community reports: run `sag-pg communities build`")
    template = max(best, key=lambda r: (r["rating"], -r["id"]))["full_content"]
    hyde = llm.complete_text(prompts.render("graphrag_hyde", prompts_dir=prompts_dir, query=question,
                                            template=template), purpose="graphrag_hyde", node="hyde").strip()
    vector = embed_queries(embedder, [hyde or question])[0]
    primer_reports = store.nearest_reports(conn, vector, source, params.primer_k, params.level)
    conn.commit()
    folds = [primer_reports[i::params.primer_folds] for i in range(params.primer_folds)]
    folds = [f for f in folds if f]
    root = DriftAction(id=0, query=question, depth=0, parent=None)
    actions.append(root)

    def prime(i_fold: tuple[int, list[dict[str, Any]]]) -> dict[str, Any] | str:
        i, fold = i_fold
        reports = "\n\n".join(f"----Report {r['id']}----\n{r['full_content']}" for r in fold)
        prompt = prompts.render("graphrag_drift_primer", prompts_dir=prompts_dir, query=question,
                                community_reports=reports, follow_ups=params.follow_ups)
        try:
            return dict(llm.complete_json(prompt, schema=DRIFT_PRIMER_SCHEMA, purpose="graphrag_primer",
                                          node=f"primer{i}"))
        except LLMError as exc:
            return str(exc)

    with ThreadPoolExecutor(max_workers=max(1, min(concurrency, len(folds)))) as pool:
        primed = list(pool.map(prime, enumerate(folds)))
    good = [p for p in primed if isinstance(p, dict)]
    notes.extend(f"primer fold {i} failed: {p}" for i, p in enumerate(primed) if isinstance(p, str))
    if not good:
        raise LLMError(f"drift search: the primer failed: {primed[0] if primed else 'no report to start from'}")
    root.answer = "\n\n".join(str(p["intermediate_answer"]).strip() for p in good)
    root.score = sum(float(p["score"]) for p in good) / len(good)
    root.status = "done"
    add_follow_ups(root, list(dict.fromkeys(q for p in good for q in p["follow_up_queries"] if q.strip())))
    for i in range(len(folds)):
        charge(root, f"primer{i}")

    # 2. Local follow-ups.
    iterations = 0
    for depth in range(1, params.n_depth + 1):
        pending = [a for a in actions if a.status == "pending"][: params.k_followups]
        if not pending:
            break
        iterations = depth
        contexts = [build_local_context(conn, embedder, a.query, source, params.local) for a in pending]
        conn.commit()

        def step(pair: tuple[DriftAction, dict[str, Any]]) -> tuple[DriftAction, dict[str, Any] | str]:
            action, context = pair
            prompt = prompts.render("graphrag_drift_local", prompts_dir=prompts_dir, query=action.query,
                                    global_query=question, follow_ups=params.follow_ups,
                                    context_data=context.get("context_text") or "(no data)")
            try:
                return action, dict(llm.complete_json(prompt, schema=DRIFT_LOCAL_SCHEMA, purpose="graphrag_local",
                                                      node=f"action{action.id}"))
            except LLMError as exc:
                return action, str(exc)

        with ThreadPoolExecutor(max_workers=max(1, min(concurrency, len(pending)))) as pool:
            answered = list(pool.map(step, zip(pending, contexts, strict=True)))
        for (action, data), context in zip(answered, contexts, strict=True):
            action.context_tokens = int(context["tokens"]["total"])
            charge(action, f"action{action.id}")
            if isinstance(data, str):
                action.status, action.error = "failed", data
                notes.append(f"follow-up {action.id} failed: {data}")
                continue
            action.answer, action.score, action.status = str(data["response"]).strip(), float(data["score"]), "done"
            add_follow_ups(action, [q for q in data["follow_up_queries"] if q.strip()][: params.follow_ups])

    # 3. Reduce.
    done = [a for a in actions if a.status == "done"]
    points = [{"analyst": a.id, "score": a.score or 0.0,
               "description": f"Question: {a.query}\n{a.answer}"} for a in done]
    reduced = store.reduce_points(conn, points, params.reduce_max_tokens)
    conn.commit()
    prompt = prompts.render("graphrag_drift_reduce", prompts_dir=prompts_dir, query=question,
                            response_type=params.response_type, answers=reduced["text"] or root.answer)
    text = llm.complete_text(prompt, purpose="graphrag_reduce", node="reduce").strip()
    trace = {"params": params.to_dict(), "hyde": hyde,
             "primer_reports": [{"id": r["id"], "title": r["title"], "similarity": r["similarity"]}
                                for r in primer_reports],
             "iterations": iterations,
             "nodes": [a.to_dict() for a in actions],
             "edges": [{"source": a.parent, "target": a.id, "weight": 1.0} for a in actions if a.parent is not None],
             "reduce": {k: reduced[k] for k in ("tokens", "dropped_zero", "dropped_budget")}}
    return GraphRAGAnswer(question=question, mode="drift", text=text, context=trace, calls=list(llm.records),
                          notes=notes, seconds=time.perf_counter() - started)

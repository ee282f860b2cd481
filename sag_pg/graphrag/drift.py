"""DRIFT search (seed "DRIFT Search"): a HyDE-primed global start, then local searches of follow-up questions.

1. Primer: the ``graphrag_hyde`` prompt writes a hypothetical answer shaped like a report picked at random
   (as the seed's ``secrets.choice``, but from ``random.Random(seed)`` so runs repeat); it is embedded and the
   ``primer_k`` (GraphRAG: ``drift_k_followups``, 20) nearest reports (``sag.nearest_reports``) are split into
   ``primer_folds`` (5) groups, one ``graphrag_drift_primer`` call each (intermediate answer, score, follow-up
   queries).  The root action joins them: answers concatenated, score averaged, follow-ups in order without
   repeats.  Reports are those of the community level (``level`` None: GraphRAG's 2, or the deepest there is).
2. ``n_depth`` (3) iterations: the unanswered actions, shuffled (the seed's ``rank_incomplete_actions``, seeded),
   the first ``k_followups`` (20) of them each get a local search context (``sag.local_context``) and one
   ``graphrag_drift_local`` call (response, score, follow-ups); their follow-ups become new actions one level
   deeper.
3. The answer is the root node's answer (the seed: ``response = node_list[0]["answer"]``).  With
   ``reduce=True`` (GraphRAG 1.x's reduce step, not the seed's): the answered actions, best score first, within
   ``reduce_max_tokens`` (``sag.reduce_points``), and one ``graphrag_drift_reduce`` call instead.

A conversation history (:mod:`.history`) goes before the primer's reports and every local context, and the
earlier questions join each follow-up's entity matching.

The whole trace is kept: every action (query, answer, score, depth, parent, its calls and tokens) and the
edges between them, as the seed's serialized ``QueryState`` (nodes and edges).
"""

from __future__ import annotations

import itertools
import random
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
from .history import HistoryParams, Turn, prefixed, with_earlier_questions
from .local import LocalParams, build_local_context
from .result import GraphRAGAnswer
from .schemas import DRIFT_LOCAL_SCHEMA, DRIFT_PRIMER_SCHEMA

__all__ = ["DriftAction", "DriftParams", "drift_search"]


@dataclass(frozen=True)
class DriftParams:
    """GraphRAG's DRIFT defaults (n_depth 3, drift_k_followups 20, primer_folds 5, the primer over the 20
    nearest reports); ``seed`` makes the template choice and the action shuffle repeatable (``shuffle=False``:
    the actions in the order they were asked); ``reduce``: a reduce call over the answered actions instead of
    the root's answer."""

    n_depth: int = 3
    k_followups: int = 20
    primer_k: int = 20
    primer_folds: int = 5
    follow_ups: int = 5
    level: int | None = None
    seed: int = 42
    shuffle: bool = True
    reduce: bool = False
    reduce_max_tokens: int = 8_000
    response_type: str = "multiple paragraphs"
    history: HistoryParams = field(default_factory=HistoryParams)
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
                 prompts_dir: Path | None = None, history: list[Turn] | None = None) -> GraphRAGAnswer:
    """DRIFT; see the module docstring."""
    params.validate()
    if not question.strip():
        raise QueryError("the question is empty")
    started = time.perf_counter()
    actions: list[DriftAction] = []
    notes: list[str] = []
    turns = list(history or [])
    rng = random.Random(params.seed)

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
    level = store.default_level(conn, source, params.level)
    reports = [r for r in store.community_reports(conn, source, level) if r.get("full_content")]
    if not reports:
        raise QueryError("drift search needs community reports: run `sag-pg communities build`")
    template = rng.choice(sorted(reports, key=lambda r: r["id"]))["full_content"]
    hyde = llm.complete_text(prompts.render("graphrag_hyde", prompts_dir=prompts_dir, query=question,
                                            template=template), purpose="graphrag_hyde", node="hyde").strip()
    vector = embed_queries(embedder, [hyde or question])[0]
    primer_reports = store.nearest_reports(conn, vector, source, params.primer_k, level)
    conn.commit()
    # Contiguous folds as the seed's np.array_split: the nearest reports together in the first.
    size, extra = divmod(len(primer_reports), params.primer_folds)
    bounds = [i * size + min(i, extra) for i in range(params.primer_folds + 1)]
    folds = [primer_reports[a:b] for a, b in itertools.pairwise(bounds) if b > a]
    root = DriftAction(id=0, query=question, depth=0, parent=None)
    actions.append(root)

    def prime(i_fold: tuple[int, list[dict[str, Any]]]) -> dict[str, Any] | str:
        i, fold = i_fold
        text = "\n\n".join(f"----Report {r['id']}----\n{r['full_content']}" for r in fold)
        prompt = prompts.render("graphrag_drift_primer", prompts_dir=prompts_dir, query=question,
                                community_reports=prefixed(text, turns, params.history), follow_ups=params.follow_ups)
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
        pending = [a for a in actions if a.status == "pending"]
        if params.shuffle:  # the seed's rank_incomplete_actions without a scorer: a shuffle
            rng.shuffle(pending)
        pending = pending[: params.k_followups]
        if not pending:
            break
        iterations = depth
        contexts = [build_local_context(conn, embedder, with_earlier_questions(a.query, turns, params.history),
                                        source, params.local) for a in pending]
        conn.commit()

        def step(pair: tuple[DriftAction, dict[str, Any]]) -> tuple[DriftAction, dict[str, Any] | str]:
            action, context = pair
            prompt = prompts.render("graphrag_drift_local", prompts_dir=prompts_dir, query=action.query,
                                    global_query=question, follow_ups=params.follow_ups,
                                    context_data=prefixed(context.get("context_text") or "(no data)", turns,
                                                          params.history))
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

    # 3. The root's answer (the seed), or a reduce call over the answered actions.
    reduced = None
    text = root.answer or ""
    if params.reduce:
        done = [a for a in actions if a.status == "done"]
        points = [{"analyst": a.id, "score": a.score or 0.0,
                   "description": f"Question: {a.query}\n{a.answer}"} for a in done]
        reduced = store.reduce_points(conn, points, params.reduce_max_tokens)
        conn.commit()
        prompt = prompts.render("graphrag_drift_reduce", prompts_dir=prompts_dir, query=question,
                                response_type=params.response_type, answers=reduced["text"] or root.answer)
        text = llm.complete_text(prompt, purpose="graphrag_reduce", node="reduce").strip()
    trace = {"params": params.to_dict(), "level": level, "history_turns": len(turns), "hyde": hyde,
             "primer_reports": [{"id": r["id"], "title": r["title"], "similarity": r["similarity"]}
                                for r in primer_reports],
             "iterations": iterations,
             "nodes": [a.to_dict() for a in actions],
             "edges": [{"source": a.parent, "target": a.id, "weight": 1.0} for a in actions if a.parent is not None],
             "reduce": None if reduced is None else {k: reduced[k] for k in ("tokens", "dropped_zero",
                                                                              "dropped_budget")}}
    return GraphRAGAnswer(question=question, mode="drift", text=text, context=trace, calls=list(llm.records),
                          notes=notes, seconds=time.perf_counter() - started)

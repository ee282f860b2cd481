"""Deep query (sag-algorithm §3.4): plan a DAG of sub-questions, search each, check, plan further, answer.

1. Background: the events and keys nearest to the question (``sag.context_for_query``).
2. Plan: the LLM writes a DAG with the ``plan_dag`` prompt; it is validated and re-asked once if
   unusable (:mod:`sag_pg.answer.plan`); a second unusable plan is an :class:`LLMError`.
3. Execute (:func:`~sag_pg.answer.execute.run_dag`): independent nodes in parallel, a node only after
   its parents. Each node: the LLM writes the concrete sub-query and keys from the node's question and
   its parents' answers (``node_query``); ``search(sub_query, keys)``; the LLM answers the node from
   the evidence (``node_answer``) and, if the evidence falls short, writes the next sub-query and keys,
   searched in turn (up to ``searches_per_node`` searches per node).
4. ReAct check (``react_check``): can the question be answered from the findings? If not, the same
   answer carries a further DAG, executed as the next round (validated and re-asked like the first;
   if it stays unusable, the rounds stop with a note and the question is answered from what was found).
5. Final answer (``deep_answer``) from the findings and their evidence, with checked citations.

Bounds: ``max_rounds`` plans, ``max_llm_calls`` calls (one is kept for the final answer; nodes that
find the budget used up are marked ``budget`` and the query goes on to answer with what it has).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import LLMError, QueryError
from ..prompts import bullets, render
from ..search.result import ChunkHit
from .cited import DEFAULT_SOURCE, Answer, Searcher, answer_from_evidence, require_llm
from .evidence import check_citations, format_evidence, merge_chunks
from .execute import run_dag
from .meter import BudgetExhausted, MeteredLLM
from .plan import DEFAULT_MAX_NODES, Plan, PlanRefused, ask_validated, validate_plan
from .schemas import NODE_ANSWER_SCHEMA, NODE_QUERY_SCHEMA, PLAN_DAG_SCHEMA, REACT_CHECK_SCHEMA
from .trace import CheckTrace, DeepTrace, NodeTrace, RoundTrace, SubQuery

if TYPE_CHECKING:
    from ..llm.base import LLM

# The background of a question (sag.context_for_query): its nearest events and keys, for the planner.
Background = Callable[[str, "list[str] | None"], dict[str, Any]]

__all__ = ["DEFAULT_MAX_LLM_CALLS", "DEFAULT_MAX_ROUNDS", "DeepAnswer", "deep_ask"]

DEFAULT_MAX_ROUNDS = 3
DEFAULT_MAX_LLM_CALLS = 30
DEFAULT_NODE_TOP_N = 5
DEFAULT_SEARCHES_PER_NODE = 2


@dataclass(kw_only=True)
class DeepAnswer(Answer):
    """An :class:`Answer` with the trace of the deep query that produced it."""

    trace: DeepTrace

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "trace": self.trace.to_dict()}


def deep_ask(search: Searcher, background: Background, llm: LLM | None, question: str, *,
             source: str | Sequence[str] | None = DEFAULT_SOURCE, top_n: int = 10,
             sql: str | None = None, max_rounds: int = DEFAULT_MAX_ROUNDS,
             max_llm_calls: int = DEFAULT_MAX_LLM_CALLS, max_nodes: int = DEFAULT_MAX_NODES,
             node_top_n: int = DEFAULT_NODE_TOP_N, searches_per_node: int = DEFAULT_SEARCHES_PER_NODE,
             parallelism: int = 4, prompts_dir: Path | None = None) -> DeepAnswer:
    """Answer ``question`` with a deep query (see the module docstring); the trace is ``answer.trace``.

    ``search``: the knowledge base's search (``SAG.search``); ``background``: the question's nearest events
    and keys (``SAG.background``).  ``top_n``: chunks given to the final answer; ``node_top_n``: chunks per
    node search; ``sql``: a restriction applied to every node search; ``max_nodes``: per plan;
    ``parallelism``: nodes at once. Raises ConfigError without an LLM, LLMError when the
    endpoint fails or plans an unusable DAG twice, QueryError for bad parameters.
    """
    if not question or not question.strip():
        raise QueryError("the question is empty")
    for name, value, least in (("max_rounds", max_rounds, 1), ("max_llm_calls", max_llm_calls, 2),
                               ("max_nodes", max_nodes, 1), ("top_n", top_n, 1), ("node_top_n", node_top_n, 1),
                               ("searches_per_node", searches_per_node, 1)):
        if value < least:
            raise QueryError(f"{name} must be at least {least}, got {value}")
    if parallelism < 1:
        raise QueryError(f"parallelism must be at least 1, got {parallelism}")
    metered = MeteredLLM(require_llm(llm, "deep mode"), max_calls=max_llm_calls, reserve=1)
    sources = [source] if isinstance(source, str) else (list(source) if source is not None else None)
    run = _DeepRun(search=search, background=background, llm=metered, question=question.strip(), sources=sources,
                   sql=sql, node_top_n=node_top_n, searches_per_node=searches_per_node, prompts_dir=prompts_dir,
                   trace=DeepTrace(question=question.strip(), max_rounds=max_rounds, max_llm_calls=max_llm_calls),
                   parallelism=parallelism)
    return run.answer(max_nodes=max_nodes, top_n=top_n)


@dataclass
class _DeepRun:
    search: Searcher
    background: Background
    llm: MeteredLLM
    question: str
    sources: list[str] | None
    sql: str | None
    node_top_n: int
    searches_per_node: int
    prompts_dir: Path | None
    trace: DeepTrace
    parallelism: int

    def answer(self, *, max_nodes: int, top_n: int) -> DeepAnswer:
        trace, timings = self.trace, dict[str, float]()
        started = time.perf_counter()
        context = self.background(self.question, self.sources)
        trace.background = {"events": context["events"], "keys": context["keys"]}
        timings["context"] = (time.perf_counter() - started) * 1000.0

        plan, problems = self._first_plan(max_nodes)
        for number in range(1, trace.max_rounds + 1):
            rnd = self._execute(plan, number, problems)
            if self.llm.exhausted:
                trace.stopped = "max_llm_calls"
                break
            if number == trace.max_rounds:
                trace.stopped = "max_rounds"
                break
            try:
                (answerable, reason, following), problems = ask_validated(
                    partial(self._json, REACT_CHECK_SCHEMA), self._render("react_check"),
                    partial(_check, max_nodes=max_nodes), purpose="react_check", prompts_dir=self.prompts_dir)
            except BudgetExhausted:
                trace.stopped = "max_llm_calls"
                break
            except PlanRefused as exc:
                trace.notes.append(f"no further plan: {exc}")
                trace.stopped = "no_new_plan"
                break
            rnd.check = CheckTrace(answerable, reason, len(following.nodes) if following else 0)
            if answerable or following is None:
                trace.stopped = "answerable" if answerable else "no_new_plan"
                break
            plan = following
        timings["rounds"] = (time.perf_counter() - started) * 1000.0 - timings["context"]

        before_answer = time.perf_counter()
        evidence = _final_evidence(trace.nodes, top_n)
        if not evidence:  # no node got to search (the budget): the question's own search, without LLM
            evidence = list(self.search(self.question, sql=self.sql, mode="fast", source=self.sources,
                                        top_n=top_n).chunks)
            if evidence:
                trace.notes.append("no sub-question found evidence; answered from a search of the question")
        written = answer_from_evidence(self.llm, self.question, evidence, prompt="deep_answer",
                                       prompts_dir=self.prompts_dir, values={"findings": self._findings()},
                                       final=True)
        timings["answer"] = (time.perf_counter() - before_answer) * 1000.0
        timings["total"] = (time.perf_counter() - started) * 1000.0
        self._account()
        return DeepAnswer(question=self.question, mode="deep", text=written.text, sufficient=written.sufficient,
                          missing=written.missing, citations=written.citations, evidence=evidence,
                          dropped_citations=written.dropped, notes=[*written.notes, *trace.notes],
                          usage=self.llm.usage().as_dict(), timings_ms=timings, trace=trace)

    # -- planning ------------------------------------------------------------------------------------------

    def _first_plan(self, max_nodes: int) -> tuple[Plan, list[str]]:
        background = bullets([*(f"event: {e['title']}: {e['content']}" for e in self.trace.background["events"]),
                              *(f"key: {k['type']}: {k['name']}" for k in self.trace.background["keys"])])
        prompt = render("plan_dag", prompts_dir=self.prompts_dir, query=self.question, background=background)
        try:
            return ask_validated(partial(self._json, PLAN_DAG_SCHEMA), prompt,
                                 partial(validate_plan, max_nodes=max_nodes), purpose="plan_dag",
                                 prompts_dir=self.prompts_dir)
        except BudgetExhausted as exc:
            raise LLMError(f"the first plan was unusable and max_llm_calls={self.trace.max_llm_calls} leaves no "
                           "call to re-ask; raise max_llm_calls") from exc

    def _json(self, schema: dict[str, Any], prompt: str, purpose: str) -> Any:
        return self.llm.complete_json(prompt, schema=schema, purpose=purpose)

    # -- execution -----------------------------------------------------------------------------------------

    def _execute(self, plan: Plan, number: int, problems: list[str]) -> RoundTrace:
        earlier = self.trace.nodes
        nodes = {n.id: NodeTrace(round=number, id=n.id, question=n.question, parents=plan.parents(n.id))
                 for n in plan.nodes}
        rnd = RoundTrace(number=number, nodes=list(nodes.values()), edges=list(plan.edges),
                         plan_problems=problems, plan_repairs=list(plan.repairs), levels=plan.levels())
        self.trace.rounds.append(rnd)
        run_dag(plan, lambda node_id: self._run_node(nodes[node_id], nodes, earlier),
                parallelism=self.parallelism)
        return rnd

    def _run_node(self, node: NodeTrace, nodes: dict[str, NodeTrace], earlier: list[NodeTrace]) -> None:
        node.started_s = self.llm.elapsed()
        parents = bullets(f"{p.id}: {p.question} -> {_answer_of(p)}" for p in (nodes[i] for i in node.parents))
        try:
            written = self.llm.complete_json(
                self._render("node_query", question=node.question, parents=parents,
                             findings=_findings_text(earlier)),
                schema=NODE_QUERY_SCHEMA, purpose="node_query", node=node.key)
            query, keys = str(written["query"]).strip() or node.question, _names(written.get("keys"))
            for attempt in range(1, self.searches_per_node + 1):
                found = self._search(node, query, keys)
                evidence = merge_chunks(found, node.chunks, limit=2 * self.node_top_n)
                reply = self.llm.complete_json(
                    self._render("node_answer", question=node.question, parents=parents,
                                 search=_search_text(query, keys), evidence=format_evidence(evidence)),
                    schema=NODE_ANSWER_SCHEMA, purpose="node_answer", node=node.key)
                checked = check_citations(str(reply["answer"]).strip(), node.evidence_ids)
                node.answer, node.answered, node.cited = checked.text, bool(reply["answered"]), checked.cited
                node.dropped_citations.extend(i for i in checked.unknown if i not in node.dropped_citations)
                following = (str(reply.get("next_query") or "").strip(), _names(reply.get("next_keys")))
                if node.answered or not following[0] or following == (query, keys):
                    break
                query, keys = following
            node.status = "done"
        except BudgetExhausted:
            node.status = "budget"
        except Exception as exc:
            node.status, node.error = "failed", str(exc)
            raise
        finally:
            node.finished_s = self.llm.elapsed()

    def _search(self, node: NodeTrace, query: str, keys: list[str]) -> list[ChunkHit]:
        started = time.perf_counter()
        result = self.search(query, keys=keys or None, sql=self.sql, mode="fast", source=self.sources,
                             top_n=self.node_top_n)
        node.sub_queries.append(SubQuery(query, keys, [c.chunk_id for c in result.chunks],
                                         time.perf_counter() - started))
        node.chunks = merge_chunks(node.chunks, result.chunks)
        return list(result.chunks)

    # -- helpers -------------------------------------------------------------------------------------------

    def _render(self, name: str, **values: object) -> str:
        if name == "react_check":
            values.setdefault("findings", self._findings())
        return render(name, prompts_dir=self.prompts_dir, query=self.question, **values)

    def _findings(self) -> str:
        return _findings_text(self.trace.nodes)

    def _account(self) -> None:
        trace = self.trace
        trace.calls = list(self.llm.records)
        usage = self.llm.usage()
        trace.requests, trace.prompt_tokens, trace.completion_tokens = (usage.calls, usage.prompt_tokens,
                                                                        usage.completion_tokens)
        trace.seconds = self.llm.elapsed()
        for node in trace.nodes:
            mine = [c for c in trace.calls if c.node == node.key]
            node.llm_calls = len(mine)
            node.prompt_tokens = sum(c.prompt_tokens for c in mine)
            node.completion_tokens = sum(c.completion_tokens for c in mine)
            if node.dropped_citations:
                trace.notes.append(f"{node.key}: dropped citations of chunks outside its evidence: "
                                   + ", ".join(f"[{i}]" for i in node.dropped_citations))
        if not self.llm.exact_tokens:
            trace.notes.append("tokens per call are unknown: the LLM does not keep a sag_pg Usage")


def _check(data: Any, *, max_nodes: int) -> tuple[bool, str, Plan | None]:
    """The ReAct check's verdict and, when not answerable, its further plan (validated)."""
    reason = str(data.get("reason") or "").strip()
    if data.get("answerable"):
        return True, reason, None
    if not data.get("nodes"):
        return False, reason, None
    return False, reason, validate_plan(data, max_nodes=max_nodes)


def _answer_of(node: NodeTrace) -> str:
    if node.answer is None:
        return "(no answer: " + ("LLM-call budget used up)" if node.status == "budget" else "not run)")
    return node.answer if node.answered else f"{node.answer} (not confirmed by the evidence)"


def _findings_text(nodes: Sequence[NodeTrace]) -> str:
    return bullets(f"{n.key}: {n.question} -> {_answer_of(n)}" for n in nodes)


def _search_text(query: str, keys: Sequence[str]) -> str:
    return f"query: {query}\nkeys: {', '.join(keys) if keys else '(none)'}"


def _names(values: Any) -> list[str]:
    names: list[str] = []
    for value in values or []:
        if isinstance(value, bool) or value is None:
            continue
        text = f"{value:g}" if isinstance(value, float) else str(value).strip()
        if text and text not in names:
            names.append(text)
    return names


def _final_evidence(nodes: Sequence[NodeTrace], limit: int) -> list[ChunkHit]:
    """The chunks the node answers cite (in node order), then the others, best-ranked of each node first."""
    by_id = {c.chunk_id: c for n in nodes for c in n.chunks}
    cited = [by_id[i] for n in nodes for i in n.cited if i in by_id]
    depth = max((len(n.chunks) for n in nodes), default=0)
    ranked = [n.chunks[rank] for rank in range(depth) for n in nodes if rank < len(n.chunks)]
    return merge_chunks(cited, ranked, limit=limit)

"""What a deep query did, step by step: rounds, plans, nodes, sub-queries, sub-answers, evidence, calls.

Every dataclass has ``to_dict`` (for ``--json``); :func:`print_trace` draws the whole trace as a tree.
Times (``started_s``, ``finished_s``) are seconds since the deep query began.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.tree import Tree

from ..search.result import ChunkHit
from .meter import CallRecord
from .plan import PlanEdge

__all__ = ["CheckTrace", "DeepTrace", "NodeTrace", "RoundTrace", "SubQuery", "print_trace"]


@dataclass
class SubQuery:
    """One ``search(query, keys)`` of a node and the chunk ids it returned."""

    query: str
    keys: list[str]
    chunk_ids: list[int]
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return {"query": self.query, "keys": self.keys, "chunk_ids": self.chunk_ids,
                "seconds": round(self.seconds, 4)}


@dataclass
class NodeTrace:
    """A sub-question: its searches, its answer and the evidence behind it.

    ``status``: ``pending``, ``done``, ``budget`` (stopped by the LLM-call limit; the answer may be
    missing) or ``failed``.
    """

    round: int
    id: str
    question: str
    parents: list[str]
    sub_queries: list[SubQuery] = field(default_factory=list)
    answer: str | None = None
    answered: bool = False
    cited: list[int] = field(default_factory=list)
    dropped_citations: list[int] = field(default_factory=list)
    status: str = "pending"
    error: str | None = None
    started_s: float | None = None
    finished_s: float | None = None
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    chunks: list[ChunkHit] = field(default_factory=list, repr=False)

    @property
    def key(self) -> str:
        """Unique over the whole query: ``q1`` in round 1, ``r2.q1`` later."""
        return self.id if self.round == 1 else f"r{self.round}.{self.id}"

    @property
    def evidence_ids(self) -> list[int]:
        return [c.chunk_id for c in self.chunks]

    def to_dict(self) -> dict[str, Any]:
        return {
            "round": self.round, "id": self.id, "key": self.key, "question": self.question,
            "parents": self.parents, "status": self.status, "error": self.error,
            "sub_queries": [s.to_dict() for s in self.sub_queries], "answer": self.answer,
            "answered": self.answered, "cited_chunk_ids": self.cited, "evidence_chunk_ids": self.evidence_ids,
            "dropped_citations": self.dropped_citations,
            "started_s": _round(self.started_s), "finished_s": _round(self.finished_s),
            "llm_calls": self.llm_calls, "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
        }


@dataclass
class CheckTrace:
    """The ReAct check after a round: can the question be answered, and if not, why."""

    answerable: bool
    reason: str = ""
    planned_nodes: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"answerable": self.answerable, "reason": self.reason, "planned_nodes": self.planned_nodes}


@dataclass
class RoundTrace:
    """One plan and its execution. ``plan_problems``: what was wrong with the first plan (re-asked)."""

    number: int
    nodes: list[NodeTrace]
    edges: list[PlanEdge]
    plan_problems: list[str] = field(default_factory=list)
    plan_repairs: list[str] = field(default_factory=list)
    levels: list[list[str]] = field(default_factory=list)
    check: CheckTrace | None = None

    @property
    def reasked(self) -> bool:
        return bool(self.plan_problems)

    def to_dict(self) -> dict[str, Any]:
        return {"round": self.number, "nodes": [n.to_dict() for n in self.nodes],
                "edges": [e.to_dict() for e in self.edges], "levels": self.levels, "reasked": self.reasked,
                "plan_problems": self.plan_problems, "plan_repairs": self.plan_repairs,
                "check": self.check.to_dict() if self.check else None}


@dataclass
class DeepTrace:
    """The whole deep query.

    ``stopped``: why the rounds ended — ``answerable`` (the ReAct check said so), ``max_rounds``,
    ``max_llm_calls``, or ``no_new_plan`` (not answerable, and nothing more to ask).
    ``llm_calls`` counts the calls made against the ``max_llm_calls`` budget; ``requests`` and the
    tokens are what the endpoint answered (JSON repairs included).
    """

    question: str
    max_rounds: int
    max_llm_calls: int
    background: dict[str, Any] = field(default_factory=dict)
    rounds: list[RoundTrace] = field(default_factory=list)
    calls: list[CallRecord] = field(default_factory=list)
    stopped: str = ""
    notes: list[str] = field(default_factory=list)
    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0

    @property
    def llm_calls(self) -> int:
        return len(self.calls)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def nodes(self) -> list[NodeTrace]:
        return [n for r in self.rounds for n in r.nodes]

    def node(self, key: str) -> NodeTrace:
        return next(n for n in self.nodes if n.key == key)

    def to_dict(self) -> dict[str, Any]:
        return {
            "question": self.question, "stopped": self.stopped,
            "limits": {"max_rounds": self.max_rounds, "max_llm_calls": self.max_llm_calls},
            "background": self.background, "rounds": [r.to_dict() for r in self.rounds],
            "llm_calls": self.llm_calls, "requests": self.requests, "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens, "seconds": round(self.seconds, 4),
            "calls": [c.to_dict() for c in self.calls], "notes": self.notes,
        }


def print_trace(console: Console, trace: DeepTrace, *, width: int = 100) -> None:
    """The trace as a tree: rounds, their nodes (searches, answers, cost) and the ReAct checks."""
    root = Tree(f"[bold]deep query[/bold] {escape(trace.question)}")
    for rnd in trace.rounds:
        note = "  [yellow](plan re-asked: " + escape("; ".join(rnd.plan_problems)) + ")[/yellow]" \
            if rnd.reasked else ""
        branch = root.add(f"[bold]round {rnd.number}[/bold]  [dim]levels: "
                          + escape(" | ".join(", ".join(level) for level in rnd.levels)) + f"[/dim]{note}")
        for node in rnd.nodes:
            after = f" [dim]← {', '.join(node.parents)}[/dim]" if node.parents else ""
            mark = {"done": "[green]✓[/green]" if node.answered else "[yellow]?[/yellow]",
                    "budget": "[yellow]✗ budget[/yellow]", "failed": "[red]✗ failed[/red]"}.get(node.status, "·")
            cost = f"{node.llm_calls} calls, {node.prompt_tokens + node.completion_tokens} tokens"
            if node.started_s is not None and node.finished_s is not None:
                cost += f", {node.started_s:.2f}–{node.finished_s:.2f} s"
            leaf = branch.add(f"{mark} [bold]{escape(node.id)}[/bold]{after} {escape(node.question)} "
                              f"[dim]({cost})[/dim]")
            for sub in node.sub_queries:
                keys = escape(", ".join(sub.keys)) or "-"
                ids = ", ".join(map(str, sub.chunk_ids)) or "none"
                leaf.add(f"[cyan]search[/cyan] {escape(sub.query)}  [dim]keys: {keys} → chunks {ids}[/dim]")
            if node.answer is not None:
                leaf.add("[green]answer[/green] " + escape(textwrap.shorten(node.answer, width=width * 2,
                                                                             placeholder=" …")))
            if node.error:
                leaf.add(f"[red]{escape(node.error)}[/red]")
        if rnd.check is not None:
            verdict = "[green]answerable[/green]" if rnd.check.answerable else "[yellow]not yet[/yellow]"
            branch.add(f"[magenta]check[/magenta] {verdict} {escape(rnd.check.reason)}")
    console.print(root)
    console.print(f"[dim]stopped: {trace.stopped} · {trace.llm_calls}/{trace.max_llm_calls} LLM calls, "
                  f"{len(trace.rounds)}/{trace.max_rounds} rounds · {trace.prompt_tokens} prompt + "
                  f"{trace.completion_tokens} completion tokens · {trace.seconds:.1f} s[/dim]", highlight=False)
    for note in trace.notes:
        console.print(f"[yellow]note:[/yellow] {escape(note)}", highlight=False)


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)

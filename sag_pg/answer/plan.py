"""The DAG of sub-questions (sag-algorithm §3.4 step 2): parse, validate, repair, re-ask once.

:func:`validate_plan` repairs what is harmless (whitespace around ids, a node or an edge given twice
identically) and refuses the rest with a :class:`PlanError` listing every problem: duplicate ids with
different questions, edges to unknown nodes, self-loops, cycles, too many nodes. :func:`ask_validated`
sends the problems back to the model once (the ``plan_reask`` prompt) and raises :class:`LLMError`
(a :class:`PlanRefused`) if the second plan is not usable either.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from ..errors import LLMError
from ..prompts import bullets, render

__all__ = ["Plan", "PlanEdge", "PlanError", "PlanNode", "PlanRefused", "ask_validated", "validate_plan"]

DEFAULT_MAX_NODES = 8
T = TypeVar("T")


class PlanError(ValueError):
    """A plan that cannot be executed; ``problems`` says why (and is sent back to the model)."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


class PlanRefused(LLMError):
    """The model answered an unusable plan, and again after being told what was wrong."""


@dataclass(frozen=True)
class PlanNode:
    id: str
    question: str

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "question": self.question}


@dataclass(frozen=True)
class PlanEdge:
    """``target`` needs the answer of ``source``."""

    source: str
    target: str
    description: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "target": self.target, "description": self.description}


@dataclass(frozen=True)
class Plan:
    """A validated DAG: unique node ids, edges between them, no cycles. ``repairs`` lists what was fixed."""

    nodes: tuple[PlanNode, ...]
    edges: tuple[PlanEdge, ...] = ()
    repairs: tuple[str, ...] = field(default=(), compare=False)

    def parents(self, node_id: str) -> list[str]:
        return [e.source for e in self.edges if e.target == node_id]

    def children(self, node_id: str) -> list[str]:
        return [e.target for e in self.edges if e.source == node_id]

    def node(self, node_id: str) -> PlanNode:
        return next(n for n in self.nodes if n.id == node_id)

    def levels(self) -> list[list[str]]:
        """Node ids by depth: level 0 has no parents, level k needs only levels < k (plan order within)."""
        depth: dict[str, int] = {}
        for node_id in _topological([n.id for n in self.nodes], self.edges):
            depth[node_id] = max((depth[p] + 1 for p in self.parents(node_id)), default=0)
        grouped: list[list[str]] = [[] for _ in range(max(depth.values(), default=-1) + 1)]
        for n in self.nodes:
            grouped[depth[n.id]].append(n.id)
        return grouped

    def to_dict(self) -> dict[str, Any]:
        return {"nodes": [n.to_dict() for n in self.nodes], "edges": [e.to_dict() for e in self.edges]}


def validate_plan(data: Any, *, max_nodes: int = DEFAULT_MAX_NODES) -> Plan:
    """The plan in ``data`` (``{"nodes": [...], "edges": [...]}``), repaired where harmless; else PlanError."""
    if not isinstance(data, Mapping):
        raise PlanError(["the plan must be a JSON object with a nodes list and an edges list"])
    problems: list[str] = []
    repairs: list[str] = []
    nodes: list[PlanNode] = []
    questions: dict[str, str] = {}
    for i, raw in enumerate(_as_list(data.get("nodes"))):
        node_id = str(raw.get("id", "")).strip() if isinstance(raw, Mapping) else ""
        question = " ".join(str(raw.get("question", "")).split()) if isinstance(raw, Mapping) else ""
        if not node_id or not question:
            problems.append(f"node #{i + 1} needs a non-empty id and question")
            continue
        if node_id in questions:
            if questions[node_id] == question:
                repairs.append(f"dropped a repeated node {node_id}")
            else:
                problems.append(f"node id {node_id!r} is used for two different questions")
            continue
        questions[node_id] = question
        nodes.append(PlanNode(node_id, question))
    if not nodes and not problems:
        problems.append("the plan has no nodes")
    if len(nodes) > max_nodes:
        problems.append(f"the plan has {len(nodes)} nodes; use at most {max_nodes}")
    edges: list[PlanEdge] = []
    seen: set[tuple[str, str]] = set()
    for raw in _as_list(data.get("edges")):
        if not isinstance(raw, Mapping):
            problems.append(f"edge {raw!r} is not an object with source and target")
            continue
        source, target = str(raw.get("source", "")).strip(), str(raw.get("target", "")).strip()
        unknown = [x for x in (source, target) if x not in questions]
        if unknown:
            problems.append(f"edge {source or '?'} -> {target or '?'} names unknown node(s) "
                            f"{', '.join(repr(u) for u in unknown)}")
            continue
        if source == target:
            problems.append(f"edge {source} -> {target} makes {source} depend on itself")
            continue
        if (source, target) in seen:
            repairs.append(f"dropped a repeated edge {source} -> {target}")
            continue
        seen.add((source, target))
        edges.append(PlanEdge(source, target, str(raw.get("description") or "").strip()))
    if not problems:
        cycle = _cycle([n.id for n in nodes], edges)
        if cycle:
            problems.append("the dependencies form a cycle: " + " -> ".join([*cycle, cycle[0]]))
    if problems:
        raise PlanError(problems)
    return Plan(tuple(nodes), tuple(edges), tuple(repairs))


def ask_validated(call: Callable[[str, str], Any], prompt: str, validate: Callable[[Any], T], *,
                  purpose: str, prompts_dir: Path | None = None) -> tuple[T, list[str]]:
    """``validate(call(prompt))``; on a PlanError, one re-ask with the problems, then LLMError.

    Returns the validated value and the problems of the first answer (empty if it was accepted).
    """
    first = call(prompt, purpose)
    try:
        return validate(first), []
    except PlanError as exc:
        problems = exc.problems
    reask = render("plan_reask", prompts_dir=prompts_dir, prompt=prompt, problems=bullets(problems),
                   previous=json.dumps(first, ensure_ascii=False, indent=1))
    second = call(reask, f"{purpose} (re-ask)")
    try:
        return validate(second), problems
    except PlanError as exc:
        raise PlanRefused(f"the LLM planned an unusable DAG twice ({purpose}): first {'; '.join(problems)}; "
                       f"then {exc}") from exc


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else []


def _topological(ids: list[str], edges: Iterable[PlanEdge]) -> list[str]:
    """Kahn's algorithm, stable in plan order; nodes on a cycle are left out."""
    parents = {i: 0 for i in ids}
    children: dict[str, list[str]] = {i: [] for i in ids}
    for e in edges:
        parents[e.target] += 1
        children[e.source].append(e.target)
    order: list[str] = []
    ready = [i for i in ids if parents[i] == 0]
    while ready:
        current = ready.pop(0)
        order.append(current)
        for child in children[current]:
            parents[child] -= 1
            if parents[child] == 0:
                ready.append(child)
        ready.sort(key=ids.index)
    return order


def _cycle(ids: list[str], edges: list[PlanEdge]) -> list[str]:
    """One cycle as a list of node ids, or [] if the graph is acyclic."""
    left = [i for i in ids if i not in set(_topological(ids, edges))]
    if not left:
        return []
    # Every node left over has a parent left over: walk parents until a node repeats.
    parent = {e.target: e.source for e in edges if e.source in left and e.target in left}
    path: list[str] = []
    current = left[0]
    while current not in path:
        path.append(current)
        current = parent[current]
    cycle = path[path.index(current):]
    cycle.reverse()  # source -> target order
    first = min(range(len(cycle)), key=lambda i: ids.index(cycle[i]))
    return cycle[first:] + cycle[:first]  # from the node that comes first in the plan

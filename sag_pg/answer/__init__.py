"""Answers with citations, and the deep query (sag-algorithm §3.4).

    from sag_pg.answer import ask, deep_ask
    answer = ask(sag, "When was the iPhone unveiled?", mode="normal")
    answer.text, answer.citations, answer.sufficient
    deep = deep_ask(sag, "What did the founder of NeXT sell to fund Apple?", max_rounds=3, max_llm_calls=30)
    print_trace(Console(), deep.trace)

Modules: :mod:`.evidence` (evidence text, citation checks), :mod:`.cited` (:func:`ask`, :class:`Answer`),
:mod:`.plan` (the DAG: validation, one re-ask), :mod:`.execute` (parallel/ordered node runs),
:mod:`.deep` (nodes, ReAct rounds, :func:`deep_ask`), :mod:`.trace` (what happened, printable),
:mod:`.meter` (LLM-call budget and per-call tokens), :mod:`.schemas` (JSON Schemas of the answers).
"""

from __future__ import annotations

from .cited import Answer, ask
from .deep import DeepAnswer, deep_ask
from .evidence import Citation
from .plan import Plan, PlanEdge, PlanNode, validate_plan
from .trace import DeepTrace, NodeTrace, RoundTrace, print_trace

__all__ = ["Answer", "Citation", "DeepAnswer", "DeepTrace", "NodeTrace", "Plan", "PlanEdge", "PlanNode",
           "RoundTrace", "ask", "deep_ask", "print_trace", "validate_plan"]

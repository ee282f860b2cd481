"""Answers with citations, and the deep query (sag-algorithm §3.4).

    answer = sag.ask("When was the iPhone unveiled?", mode="normal")      # sag = sag_pg.SAG()
    answer.text, answer.citations, answer.sufficient
    deep = sag.ask("What did the founder of NeXT sell to fund Apple?", mode="deep", max_rounds=3, max_llm_calls=30)
    print_trace(Console(), deep.trace)

The answer layer never imports the client: it is given a search callable (``SAG.search``), an LLM and, for deep
mode, a background callable (``SAG.background``).

Modules: :mod:`.evidence` (evidence text, citation checks), :mod:`.cited` (:func:`ask`, :class:`Answer`),
:mod:`.plan` (the DAG: validation, one re-ask), :mod:`.execute` (parallel/ordered node runs),
:mod:`.deep` (nodes, ReAct rounds, :func:`deep_ask`), :mod:`.trace` (what happened, printable),
:mod:`.meter` (LLM-call budget and per-call tokens), :mod:`.schemas` (JSON Schemas of the answers).
"""

from __future__ import annotations

from .cited import Answer, Searcher, ask
from .deep import DeepAnswer, deep_ask
from .evidence import Citation
from .plan import Plan, PlanEdge, PlanNode, validate_plan
from .trace import DeepTrace, NodeTrace, RoundTrace, print_trace

__all__ = [
           "Answer",
           "Citation",
           "DeepAnswer",
           "DeepTrace",
           "NodeTrace",
           "Plan",
           "PlanEdge",
           "PlanNode",
           "RoundTrace",
           "Searcher",
           "ask",
           "deep_ask",
           "print_trace",
           "validate_plan",
]

"""What a GraphRAG query returns: the answer, its context or trace, and its LLM calls with their tokens.

The token accounting follows the seed's ``SearchResult``: ``llm_calls``, ``prompt_tokens``, ``output_tokens``
in all and per category (the prompt each call used: ``map``, ``reduce``, ``hyde``, ``primer``, ``local`` …).
The tokens are what the endpoint reported for each call (a JSON repair round included in its call).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..answer.meter import CallRecord

__all__ = ["GraphRAGAnswer", "usage_of"]


def usage_of(records: Sequence[CallRecord]) -> dict[str, Any]:
    """Calls and tokens in all and per category (the part of the purpose after ``graphrag_``)."""
    calls: dict[str, int] = {}
    prompt: dict[str, int] = {}
    output: dict[str, int] = {}
    for r in records:
        name = r.purpose.removeprefix("graphrag_")
        calls[name] = calls.get(name, 0) + 1
        prompt[name] = prompt.get(name, 0) + r.prompt_tokens
        output[name] = output.get(name, 0) + r.completion_tokens
    return {"llm_calls": len(records), "requests": sum(r.requests for r in records),
            "prompt_tokens": sum(prompt.values()), "output_tokens": sum(output.values()),
            "llm_calls_categories": calls, "prompt_tokens_categories": prompt, "output_tokens_categories": output}


@dataclass(kw_only=True)
class GraphRAGAnswer:
    """A local, global or DRIFT answer.  ``context``: local search's context tables, global search's batches
    and reduced points, DRIFT's trace.  Printable by the CLI like :class:`sag_pg.answer.Answer`."""

    question: str
    mode: str
    text: str
    context: dict[str, Any] = field(default_factory=dict)
    calls: list[CallRecord] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    sufficient: bool = True
    missing: str = ""
    citations: list[Any] = field(default_factory=list)

    @property
    def usage(self) -> dict[str, int]:
        u = usage_of(self.calls)
        return {"calls": u["requests"], "prompt_tokens": u["prompt_tokens"], "completion_tokens": u["output_tokens"]}

    def to_dict(self) -> dict[str, Any]:
        return {"question": self.question, "mode": self.mode, "answer": self.text, "context": self.context,
                **usage_of(self.calls), "calls": [c.to_dict() for c in self.calls], "notes": self.notes,
                "seconds": round(self.seconds, 4)}

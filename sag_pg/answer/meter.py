"""An LLM wrapper for one question: bounds the number of calls and records each call's tokens.

The budget counts calls made through :class:`MeteredLLM` (one per ``complete_json``/``complete_text``,
whatever the client does inside it, such as a JSON repair round); each call is reserved *before* it is
made, so the limit holds with parallel callers too. ``reserve`` calls are kept back for the final answer
(``final=True``): the search can use up its share without leaving the question unanswered.

Tokens per call: the LLM's :class:`~sag_pg.llm.base.Usage` is shared by every thread using the client,
so the cost of one call cannot be read off its totals while other calls run. A pass-through hook on
``usage.add`` (installed once, changing nothing for other users) also adds each answered request's
tokens to a per-thread tally, which is exact because the client records usage in the calling thread.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..llm.base import LLM, Usage

__all__ = ["BudgetExhausted", "CallRecord", "MeteredLLM"]

_local = threading.local()
_tee_lock = threading.Lock()


class BudgetExhausted(Exception):
    """No LLM call left in the budget (internal: the deep query stops planning and answers)."""


@dataclass(frozen=True)
class CallRecord:
    """One call: what for, which node, its tokens and requests (answered HTTP requests), its timing."""

    purpose: str
    node: str | None
    prompt_tokens: int
    completion_tokens: int
    requests: int
    started_s: float
    seconds: float
    ok: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {"purpose": self.purpose, "node": self.node, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "requests": self.requests,
                "started_s": round(self.started_s, 4), "seconds": round(self.seconds, 4), "ok": self.ok}


def _install_tee(usage: Any) -> bool:
    """Make ``usage.add`` also feed the calling thread's tally; False if ``usage`` is not a Usage."""
    if not isinstance(usage, Usage):
        return False
    with _tee_lock:
        if usage.__dict__.get("_sag_tee"):
            return True
        inner = usage.add

        def add(prompt_tokens: int = 0, completion_tokens: int = 0, calls: int = 1) -> None:
            inner(prompt_tokens, completion_tokens, calls)
            tally = getattr(_local, "tally", None)
            if tally is not None:
                tally.add(prompt_tokens, completion_tokens, calls)

        usage.add = add  # type: ignore[method-assign]
        usage.__dict__["_sag_tee"] = True
    return True


class MeteredLLM:
    """Wraps ``llm`` for one question; see the module docstring."""

    def __init__(self, llm: LLM, *, max_calls: int | None = None, reserve: int = 0) -> None:
        self.llm = llm
        self.max_calls = max_calls
        self.reserve = reserve
        self.records: list[CallRecord] = []
        self._calls = 0
        self._lock = threading.Lock()
        self._origin = time.perf_counter()
        self._start_usage = llm.usage.snapshot() if isinstance(llm.usage, Usage) else None
        self.exact_tokens = _install_tee(llm.usage)

    @property
    def name(self) -> str:
        return self.llm.name

    @property
    def calls(self) -> int:
        """Calls made (or being made) so far."""
        with self._lock:
            return self._calls

    @property
    def exhausted(self) -> bool:
        """No call left for anything but the final answer."""
        with self._lock:
            return self.max_calls is not None and self._calls >= self.max_calls - self.reserve

    def usage(self) -> Usage:
        """What the client answered since this wrapper was made (all its callers, including JSON repairs)."""
        if self._start_usage is None:
            return Usage()
        return self.llm.usage - self._start_usage

    def elapsed(self) -> float:
        return time.perf_counter() - self._origin

    def complete_json(self, prompt: str, *, schema: Mapping[str, Any], system: str | None = None,
                      purpose: str = "", node: str | None = None, final: bool = False) -> Any:
        return self._call(lambda: self.llm.complete_json(prompt, schema=schema, system=system, purpose=purpose),
                          purpose, node, final)

    def complete_text(self, prompt: str, *, system: str | None = None, purpose: str = "",
                      node: str | None = None, final: bool = False) -> str:
        return str(self._call(lambda: self.llm.complete_text(prompt, system=system, purpose=purpose),
                              purpose, node, final))

    def _call(self, make: Callable[[], Any], purpose: str, node: str | None, final: bool) -> Any:
        with self._lock:
            if self.max_calls is not None:
                limit = self.max_calls if final else self.max_calls - self.reserve
                if self._calls >= limit:
                    raise BudgetExhausted(f"LLM-call budget of {self.max_calls} used up ({purpose})")
            self._calls += 1
        tally = Usage()
        _local.tally = tally
        started = self.elapsed()
        ok = False
        try:
            answer = make()
            ok = True
            return answer
        finally:
            _local.tally = None
            record = CallRecord(purpose, node, tally.prompt_tokens, tally.completion_tokens, tally.calls,
                                started, self.elapsed() - started, ok)
            with self._lock:
                self.records.append(record)

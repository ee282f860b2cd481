"""What the pipeline needs from a language model: the :class:`LLM` protocol and token accounting."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass
class Usage:
    """Running totals of one LLM client; every answered request adds to them.

    Totals are shared by all threads using the client, so a caller that wants the cost of
    one document takes a :meth:`snapshot` before and subtracts it afterwards::

        before = llm.usage.snapshot()
        ...
        spent = llm.usage.snapshot() - before
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def add(self, prompt_tokens: int = 0, completion_tokens: int = 0, calls: int = 1) -> None:
        with self._lock:
            self.prompt_tokens += prompt_tokens
            self.completion_tokens += completion_tokens
            self.calls += calls

    def snapshot(self) -> Usage:
        """A consistent copy that later calls do not change."""
        with self._lock:
            return Usage(self.prompt_tokens, self.completion_tokens, self.calls)

    def __sub__(self, other: Usage) -> Usage:
        mine, theirs = self.snapshot(), other.snapshot()
        return Usage(
            mine.prompt_tokens - theirs.prompt_tokens,
            mine.completion_tokens - theirs.completion_tokens,
            mine.calls - theirs.calls,
        )

    def as_dict(self) -> dict[str, int]:
        snap = self.snapshot()
        return {
            "prompt_tokens": snap.prompt_tokens,
            "completion_tokens": snap.completion_tokens,
            "calls": snap.calls,
        }


@runtime_checkable
class LLM(Protocol):
    """A chat model the pipeline can call from several threads at once.

    Implementations retry transient failures themselves and raise
    :class:`sag_pg.errors.LLMError` when an answer cannot be obtained or used.
    ``purpose`` is a short label (``"extract_keys"``) for logs and error messages.
    """

    name: str
    usage: Usage

    def complete_json(
        self,
        prompt: str,
        *,
        schema: Mapping[str, Any],
        system: str | None = None,
        purpose: str = "",
    ) -> Any:
        """The answer parsed as JSON and valid against the JSON Schema ``schema``."""
        ...

    def complete_text(self, prompt: str, *, system: str | None = None, purpose: str = "") -> str:
        """The answer as plain text, stripped."""
        ...

"""Conversation history for GraphRAG's modes (seed: "给定用户的查询以及(如果有的话)会话历史记录").

As GraphRAG's ``ConversationHistory``: the turns are grouped into question-answer turns, the last
``max_qa_turns`` (5) are kept, most recent first (``recency_bias``), by default only the user's questions
(``user_turns_only``, GraphRAG's default for local and global search), and written as a table::

    -----Conversation History-----
    turn|content
    user|What are the main themes?

which is put before every context (each map batch of global search, local search's tables, DRIFT's primer and
local contexts).  Local search and DRIFT's follow-ups also add the earlier questions to the text their
entities are matched with (GraphRAG's local search: ``f"{query}\\n{pre_user_questions}"``).

A history is a list of ``{"role": "user" | "assistant", "content": str}`` (``sag-pg ask --history FILE``: that
list as JSON).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError

__all__ = ["HistoryParams", "Turn", "history_context", "load_history", "parse_history", "with_earlier_questions"]


@dataclass(frozen=True)
class Turn:
    role: str  # user | assistant
    content: str


@dataclass(frozen=True)
class HistoryParams:
    """GraphRAG's defaults: 5 question-answer turns, the user's questions only."""

    max_qa_turns: int = 5
    user_turns_only: bool = True


def parse_history(history: Iterable[Mapping[str, Any] | Turn | Sequence[str]] | None) -> list[Turn]:
    """Turns from dicts ``{"role", "content"}``, :class:`Turn` or ``(role, content)`` pairs; InputError else."""
    turns: list[Turn] = []
    for i, item in enumerate(history or []):
        if isinstance(item, Turn):
            role, content = item.role, item.content
        elif isinstance(item, Mapping):
            role, content = item.get("role"), item.get("content")
        elif isinstance(item, Sequence) and not isinstance(item, str) and len(item) == 2:
            role, content = item[0], item[1]
        else:
            raise InputError(f"history turn {i}: expected {{\"role\", \"content\"}}, got {item!r}")
        if role not in ("user", "assistant") or not isinstance(content, str):
            raise InputError(f"history turn {i}: role must be user or assistant and content a string, got "
                             f"{role!r} and {type(content).__name__}")
        turns.append(Turn(role, content.strip()))
    return turns


def load_history(path: str | Path) -> list[Turn]:
    """A history from a JSON file (a list of ``{"role", "content"}``)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: not a readable JSON file ({exc})") from exc
    if not isinstance(data, list):
        raise InputError(f"{path}: expected a JSON list of {{\"role\", \"content\"}} turns")
    return parse_history(data)


def _qa_turns(turns: list[Turn]) -> list[list[Turn]]:
    """Question-answer turns: a user turn and the assistant turns that follow it (leading answers alone)."""
    out: list[list[Turn]] = []
    for turn in turns:
        if turn.role == "user" or not out:
            out.append([turn])
        else:
            out[-1].append(turn)
    return out


def _kept(turns: list[Turn], params: HistoryParams) -> list[Turn]:
    qa = _qa_turns(turns)[-params.max_qa_turns:] if params.max_qa_turns > 0 else []
    qa.reverse()  # recency bias: the latest question first
    return [t for group in qa for t in group if t.role == "user" or not params.user_turns_only]


def history_context(turns: list[Turn], params: HistoryParams = HistoryParams()) -> str:
    """The ``-----Conversation History-----`` table, or ``""`` without turns."""
    kept = [t for t in _kept(turns, params) if t.content]
    if not kept:
        return ""
    rows = [f"{t.role}|{' '.join(t.content.split())}" for t in kept]
    return "-----Conversation History-----\nturn|content\n" + "\n".join(rows)


def with_earlier_questions(query: str, turns: list[Turn], params: HistoryParams = HistoryParams()) -> str:
    """The query followed by the earlier user questions (what local search matches entities with)."""
    earlier = [t.content for t in _kept(turns, HistoryParams(params.max_qa_turns, True)) if t.content]
    return "\n".join([query, *earlier]) if earlier else query


def prefixed(context: str, turns: list[Turn], params: HistoryParams = HistoryParams()) -> str:
    """``context`` with the history table before it (GraphRAG's ``context_prefix``)."""
    table = history_context(turns, params)
    return f"{table}\n\n{context}" if table else context

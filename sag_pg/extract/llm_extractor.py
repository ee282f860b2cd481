"""Extraction with an LLM (sag-algorithm §1.2–1.4): document summary, atomic events, typed keys.

The LLM answers JSON; this module owns the schemas of those answers and turns them into
:class:`~sag_pg.types.EventDraft` / :class:`~sag_pg.types.KeyDraft`, dropping what the
store must not receive (unknown key types, empty values, values of the wrong JSON type).
"""

from __future__ import annotations

import json
import math
import re
from datetime import datetime
from pathlib import Path
from typing import Any

from .. import prompts
from ..llm.base import LLM
from ..types import DEFAULT_KEY_TYPES, Chunk, EventDraft, KeyDraft, KeyRef, KeyValue, PreRetrieval

_SCALAR = ["string", "number", "boolean", "null"]

EVENTS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["events"],
    "properties": {
        "events": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["content"],
                "properties": {
                    "title": {"type": ["string", "null"]},
                    "content": {"type": "string"},
                    # A bare year often comes back as a number; accepted and read as 1 January.
                    "time": {"type": ["string", "integer", "null"]},
                },
            },
        }
    },
}

KEYS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["keys"],
    "properties": {
        "keys": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["type"],
                "properties": {
                    "type": {"type": "string"},
                    "value": {"type": _SCALAR},
                    # The §1.3 original calls the value 'content'; models primed on it may still do so.
                    "content": {"type": _SCALAR},
                    "name": {"type": _SCALAR},
                },
            },
        }
    },
}

_YEAR_MONTH = re.compile(r"(\d{4})(?:-(\d{1,2}))?")
_YEAR = re.compile(r"(?<!\d)(\d{4})(?!\d)")
_TITLE_LIMIT = 80


class LLMExtractor:
    """Summaries, events and keys from an :class:`~sag_pg.llm.LLM`; prompts may be overridden from ``prompts_dir``."""

    def __init__(self, llm: LLM, prompts_dir: Path | None = None) -> None:
        self.llm = llm
        self.prompts_dir = prompts_dir

    def summarize(self, sentences: list[str], *, title: str) -> str:
        """Condense the sentences sumy picked into a short summary ("" when there is nothing to condense)."""
        picked = [" ".join(s.split()) for s in sentences if s and s.strip()]
        if not picked:
            return ""
        prompt = prompts.render(
            "summary",
            prompts_dir=self.prompts_dir,
            title=title or "(untitled)",
            sentences=prompts.bullets(picked),
        )
        return self.llm.complete_text(prompt, purpose="summary").strip()

    def events(self, chunk: Chunk, *, summary: str, doc_title: str) -> list[EventDraft]:
        """The atomic events of one chunk, in the order the model gave them."""
        if not chunk.content.strip():
            return []
        prompt = prompts.render(
            "extract_events",
            prompts_dir=self.prompts_dir,
            doc_title=doc_title or "(untitled)",
            summary=summary.strip() or "(none)",
            chunk_title=chunk.title or doc_title or "(untitled)",
            content=chunk.content.strip(),
        )
        answer = self.llm.complete_json(prompt, schema=EVENTS_SCHEMA, purpose="extract_events")
        examples = prompt_examples(prompt)
        source = f"{doc_title}\n{summary}\n{chunk.title}\n{chunk.content}"
        drafts: list[EventDraft] = []
        for item in answer["events"]:
            content = _clean(item.get("content"))
            if not content or copies_example(content, examples, source):
                continue  # nothing, or the prompt's example rather than the text
            title = _clean(item.get("title"))
            if not title or copies_example(title, examples, source):
                title = _headline(content)
            raw_time = item.get("time")
            # A small model copies the example's date onto events whose text has none (issue #37 item 13).
            time = None if copies_example(raw_time, examples, source) else parse_time(raw_time)
            drafts.append(EventDraft(title=title, content=content, time=time))
        return drafts

    def keys(self, event: EventDraft, *, summary: str, pre: PreRetrieval) -> list[KeyDraft]:
        """The keys of one event (§1.3), aligned with the pre-retrieved keys and restricted to the source's types."""
        key_types = list(pre.key_types) or list(DEFAULT_KEY_TYPES)
        prompt = prompts.render(
            "extract_keys",
            prompts_dir=self.prompts_dir,
            event_content=event_text(event),
            summary=summary.strip() or "（无）",
            type=prompts.bullets(key_types, empty="（无）"),
            direct_keys=format_key_refs(pre.direct_keys),
            keys_from_events=format_key_refs(pre.keys_from_events),
        )
        answer = self.llm.complete_json(prompt, schema=KEYS_SCHEMA, purpose="extract_keys")
        examples = prompt_examples(prompt)
        source = f"{event_text(event)}\n{summary}"
        items = [item for item in answer["keys"]
                 if not copies_example(_key_value(item), examples, source)  # the example's `2007`, not the event's
                 and not invents_year(item, source)]
        return coerce_keys(items, key_types)


def prompt_examples(prompt: str) -> set[str]:
    """The values shown in a rendered prompt's output-format example (its lines that are one JSON object),
    case-folded: what a model that copies the example instead of reading the text gives back."""
    found: set[str] = set()

    def collect(value: object) -> None:
        if isinstance(value, dict):
            for item in value.values():
                collect(item)
        elif isinstance(value, list):
            for item in value:
                collect(item)
        elif isinstance(value, (str, int, float)) and not isinstance(value, bool):
            text = " ".join(str(value).split()).casefold()
            if text:
                found.add(text)

    for line in prompt.splitlines():
        line = line.strip()
        if line.startswith("{") and line.endswith("}"):
            try:
                collect(json.loads(line))
            except ValueError:
                continue
    return found


def copies_example(value: object, examples: set[str], source: str) -> bool:
    """``value`` is one of the prompt's example values and the text it was extracted from does not hold it (a
    date counts as held when its year is in the text)."""
    if value is None or isinstance(value, bool):
        return False
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    text = " ".join(str(value).split()).casefold()
    if text not in examples:
        return False
    held = source.casefold()
    year = _YEAR_MONTH.fullmatch(text) or re.fullmatch(r"(\d{4})-\d{1,2}-\d{1,2}", text)
    return (year.group(1) if year else text) not in held


def invents_year(item: object, source: str) -> bool:
    """A ``time`` key naming a year that the text it was extracted from does not hold.

    A 1.5B model on CPU (docs/extraction.md, "The LLM extractor on a local model") gave ``time: 2019`` for
    sentences with no date at all; a year of the event's own time line or of the summary counts as held."""
    if not isinstance(item, dict) or str(item.get("type", "")).strip().casefold() != "time":
        return False
    value = _key_value(item)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if value is None or isinstance(value, bool):
        return False
    years = _YEAR.findall(str(value))
    return bool(years) and not any(year in _YEAR.findall(source) for year in years)


def _key_value(item: object) -> object:
    if not isinstance(item, dict):
        return None
    for field in ("value", "content", "name"):
        if item.get(field) is not None:
            return item[field]
    return None


def event_text(event: EventDraft) -> str:
    """The event as shown to the key prompt: title, content and (if known) time."""
    lines = [event.title] if event.title and event.title != event.content else []
    lines.append(event.content)
    if event.time is not None:
        shown = (
            event.time.date().isoformat()
            if event.time.time() == datetime.min.time()
            else event.time.isoformat()
        )
        lines.append(f"时间: {shown}")
    return "\n".join(lines)


def format_key_refs(refs: list[KeyRef]) -> str:
    return prompts.bullets((f"{ref.type}: {ref.name}" for ref in refs), empty="（无）")


def coerce_keys(items: list[dict[str, Any]], key_types: list[str]) -> list[KeyDraft]:
    """KeyDrafts from the model's ``{"type", "value"}`` items.

    Types are matched case-insensitively onto ``key_types`` (others are dropped). Values keep
    their JSON type: strings stay strings even when numeric ("007" is a name, not 7), numbers
    become floats, booleans come only from JSON booleans. Empty values and duplicates go.
    """
    canonical = {t.strip().casefold(): t for t in key_types}
    drafts: list[KeyDraft] = []
    seen: set[tuple[str, str, str]] = set()
    for item in items:
        key_type = canonical.get(str(item.get("type", "")).strip().casefold())
        if key_type is None:
            continue
        raw = next((item[f] for f in ("value", "content", "name") if item.get(f) not in (None, "")), None)
        coerced = coerce_value(raw)
        if coerced is None:
            continue
        value, name = coerced
        identity = (key_type, type(value).__name__, name.casefold())
        if identity in seen:
            continue
        seen.add(identity)
        drafts.append(KeyDraft(type=key_type, name=name, value=value))
    return drafts


def coerce_value(raw: object) -> tuple[KeyValue, str] | None:
    """(value, display name) for a JSON scalar, or None when it cannot be a key value."""
    if isinstance(raw, bool):  # before numbers: bool is an int in Python
        return raw, "true" if raw else "false"
    if isinstance(raw, int | float):
        number = float(raw)
        if not math.isfinite(number):
            return None
        name = str(int(number)) if number.is_integer() and abs(number) < 1e15 else repr(number)
        return number, name
    if isinstance(raw, str):
        text = _clean(raw)
        return (text, text) if text else None
    return None


def parse_time(raw: object) -> datetime | None:
    """An ISO-8601 date/time, "YYYY-MM" or "YYYY" (first day of the period); None when unusable."""
    try:
        if isinstance(raw, int) and not isinstance(raw, bool):
            return datetime(raw, 1, 1)
        if not isinstance(raw, str) or not raw.strip():
            return None
        text = raw.strip()
        match = _YEAR_MONTH.fullmatch(text)
        if match:
            return datetime(int(match.group(1)), int(match.group(2) or 1), 1)
        return datetime.fromisoformat(text)
    except ValueError:
        # A time the model got wrong is not worth losing the event over.
        return None


def _clean(raw: object) -> str:
    return " ".join(raw.split()) if isinstance(raw, str) else ""


def _headline(content: str) -> str:
    if len(content) <= _TITLE_LIMIT:
        return content
    cut = content[:_TITLE_LIMIT].rsplit(" ", 1)[0].rstrip(" ,;:，、；：")
    return (cut or content[:_TITLE_LIMIT]) + "…"

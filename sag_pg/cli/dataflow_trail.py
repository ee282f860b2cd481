"""`sag-pg search --strategy dataflow`: its options turned into SAG.search arguments, and its explain trail
(the question's entities, the activation of every hop, each factor of each event's score) printed."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table


def search_arguments(strategy: str, depth: int | None, breadth: int | None,
                     focus: tuple[str, ...]) -> dict[str, Any]:
    """The strategy-specific keyword arguments of SAG.search (none for sag)."""
    if strategy != "dataflow":
        return {}
    from ..dataflow import DataflowParams

    defaults = DataflowParams()
    return {"strategy": "dataflow", "dataflow": DataflowParams(
        depth=defaults.depth if depth is None else depth, breadth=defaults.breadth if breadth is None else breadth,
        focus=tuple(focus) or None)}


def print_trail(console: Console, trail: dict[str, Any], *, events: int = 15) -> None:
    entities = ", ".join(f"{e['name']} ({e['type']}, {e['origin']}{', hub' if e.get('hub') else ''})"
                         for e in trail.get("entities", []))
    console.print(f"[dim]entities:[/dim] {entities or '-'}", highlight=False)
    hops = Table(title="activation per hop", show_lines=False)
    for column in ("hop", "events", "max activation", "parents"):
        hops.add_column(column)
    for hop in trail.get("hops", []):
        reached = hop["events"]
        parents = sorted({e["parent_id"] for e in reached if e.get("parent_id") is not None})
        hops.add_row(str(hop["hop"]), str(len(reached)), f"{max(e['activation'] for e in reached):.3f}",
                     ", ".join(map(str, parents[:8])) + (" …" if len(parents) > 8 else ""))
    console.print(hops)
    # The weights used: the vector weight without the embedder's lexical part (sag.dataflow_score_weights).
    used = trail.get("score_weights") or []
    weights = " ".join(f"{w:.3g}" for w in used) if len(used) == 4 else "?"
    # The redundancy the weights were computed with: the lexical one discounted by the embedder's reliability.
    redundancy = trail.get("redundancy", trail.get("lexical_redundancy"))
    scores = Table(title="event scores (relevance·w1 + similarity·w2 + time·w3 + preference·w4; "
                         f"w = {weights}, redundancy {'?' if redundancy is None else f'{redundancy:.2f}'})",
                   show_lines=False)
    for column in ("event", "hop", "relevance", "similarity", "time", "preference", "score"):
        scores.add_column(column)
    scored = trail.get("events", [])
    for e in scored[:events]:
        scores.add_row(str(e["event_id"]), str(e["hop"]), f"{e['relevance']:.3f}", f"{e['similarity']:.3f}",
                       f"{e['time_decay']:.3f}", f"{e['preference']:.2f}", f"{e['score']:.3f}")
    console.print(scores)
    if scored:
        # How much each factor varies over all the scored events (the table shows the best only).
        spans = [f"{label} {min(e[name] for e in scored):.2f}-{max(e[name] for e in scored):.2f}"
                 for label, name in (("relevance", "relevance"), ("similarity", "similarity"),
                                     ("time", "time_decay"), ("preference", "preference"))]
        if not trail.get("focus"):
            spans[-1] += " (no focus: 0.5 for every event)"
        console.print(f"[dim]factors over {len(scored)} events:[/dim] " + ", ".join(spans) + "; time decays from "
                      "an event's own time (its date, else its latest time key), else its ingest time",
                      highlight=False)

"""`sag-pg demo`: ingest the bundled documents and show what the search finds — the evidence it counts."""

from __future__ import annotations

import click
from rich.console import Console
from rich.markup import escape

from ..demo import DEMO_QUERIES, DEMO_SOURCE, DemoQuery, demo_paths
from ..text.tokenize import sentence_spans
from ._common import AppContext, pass_app

SNIPPET = 160  # characters of a sentence shown around the answer


def snippet(text: str, needle: str | None, width: int = SNIPPET) -> str:
    """The sentence of ``text`` that holds ``needle`` (else the first), cut to about ``width`` characters
    around it at word boundaries (any character boundary in CJK text), with … where something was left out."""
    flat = " ".join(text.split())
    spans = sentence_spans(flat) or [(0, len(flat))]
    at = flat.find(needle) if needle else -1
    start, end = next(((s, e) for s, e in spans if s <= at < e), spans[0])
    sentence = flat[start:end].strip()
    if len(sentence) <= width:
        return sentence
    centre = sentence.find(needle) if needle and needle in sentence else 0
    left = max(0, centre - width // 3)
    right = min(len(sentence), left + width)
    if left > 0 and sentence[left - 1].isascii() and sentence[left - 1].isalnum():
        left = sentence.find(" ", left) + 1 or left  # not inside a word
    if right < len(sentence) and sentence[right].isascii() and sentence[right].isalnum():
        right = sentence.rfind(" ", left, right) if sentence.rfind(" ", left, right) > left else right
    return ("…" if left > 0 else "") + sentence[left:right].strip() + ("…" if right < len(sentence) else "")


@click.command()
@click.option("--top-n", type=click.IntRange(min=1, max=100), default=5, show_default=True,
              help="Ranks checked for each question's expected documents (and listed).")
@pass_app
def demo(app: AppContext, top_n: int) -> None:
    """Ingest the demo documents (Chinese and English) into the `demo` source and run the six example questions.

    For each question it shows where each expected document ranks among the top N and the sentence that
    holds the answer (or the bridge entity), so what it counts is on screen.

    Example:

        sag-pg demo
    """
    console = Console()
    sag = app.sag()
    report = sag.ingest_files(demo_paths(), source=DEMO_SOURCE)
    console.print(f"[bold]demo[/bold]: {report.documents} documents ingested, {report.skipped} unchanged "
                  f"({report.seconds:.1f} s); searching source '{DEMO_SOURCE}' in fast mode (no LLM)\n")
    found = 0
    for query in DEMO_QUERIES:
        result = sag.search(query.question, source=DEMO_SOURCE, top_n=top_n)
        found += _show(console, query, result.chunks[:top_n], top_n)
    console.print(f"{found} of {len(DEMO_QUERIES)} questions had all their expected documents in the top {top_n}.")
    console.print('Next: sag-pg search "…" --source demo --explain   ·   sag-pg ask "…" --source demo   ·   '
                  'psql "$(sag-pg db url)"', highlight=False)


def _show(console: Console, query: DemoQuery, ranked: list, top_n: int) -> bool:  # type: ignore[type-arg]
    places = {suffix: [rank for rank, hit in enumerate(ranked, 1) if hit.document_uri.endswith(suffix)]
              for suffix in query.expected_uris_suffix}
    hit_all = all(places.values())
    hops = "two-hop" if query.bridge else "one-hop"
    mark = "[green]✓[/green]" if hit_all else "[yellow]·[/yellow]"
    console.print(f"{mark} [bold]{escape(query.question)}[/bold]  [dim]({hops}; {escape(query.why)})[/dim]",
                  highlight=False)
    for suffix in query.expected_uris_suffix:
        holds_answer = suffix == query.answer_uri_suffix
        needle = query.answer if holds_answer else query.bridge
        ranks = places[suffix]
        if not ranks:
            console.print(f"    –  {suffix}: not in the top {top_n}", highlight=False)
            continue
        with_needle = [r for r in ranks if needle and needle in ranked[r - 1].content]
        rank = (with_needle or ranks)[0]
        hit = ranked[rank - 1]
        role = "answer" if holds_answer else f"bridge {query.bridge}"
        text = escape(snippet(hit.content, needle))
        if needle and holds_answer:
            text = text.replace(escape(needle), f"[bold green]{escape(needle)}[/bold green]")
        console.print(f"    {rank}. [cyan]{hit.score:.4f}[/cyan]  {escape(hit.document_uri)}  [dim]({role})[/dim]",
                      highlight=False)
        console.print(f"       {text}" + ("" if with_needle else "  [dim](the answer is in another passage of "
                                                                  "this document)[/dim]"), highlight=False)
    others = [f"{rank}. {hit.document_uri}" for rank, hit in enumerate(ranked, 1)
              if not any(hit.document_uri.endswith(s) for s in query.expected_uris_suffix)]
    if others:
        console.print(f"    [dim]also in the top {top_n}: {escape(', '.join(others))}[/dim]", highlight=False)
    console.print()
    return hit_all

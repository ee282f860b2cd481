"""`sag-pg search`: one search, printed for people (with --explain, the hop trail) or as JSON."""

from __future__ import annotations

import textwrap
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from ..search.presentation import PLACED_LEGEND, placements, relevant, result_json
from ._common import TOP_N, AppContext, count, echo_json, pass_app, refuse_source_with_all_sources
from .dataflow_trail import print_trail, search_arguments


@click.command()
@click.argument("query")
@click.option("--mode", type=click.Choice(["fast", "normal"]), default="fast", show_default=True,
              help="fast: no LLM. normal: the LLM rewrites the question and names its keys first.")
@click.option("--source", "sources", multiple=True, help="Source to search (repeatable). Default: default.")
@click.option("--all-sources", is_flag=True, help="Search every source.")
@click.option("--top-n", type=TOP_N, default=10, show_default=True,
              help="Chunks returned (chunks that score 0 are not printed); local: the entities of the context.")
@click.option("--key", "keys", multiple=True,
              help="A key name to start from (repeatable); --strategy local: an entity always included.")
@click.option("--sql", help="Restriction, e.g. \"key.type = 'time' AND key.value_number >= 2000\".")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--explain", is_flag=True,
              help="Show the keys of every hop and each chunk's score components: cos (vector similarity), text "
                   "(BM25), keys (activated keys' weight), W_init (the initial weight PageRank starts from), via = "
                   "how the chunk was found (k: through its keys, v: by vector, t: by its words), direct match: "
                   "the question names one of its keys (such chunks keep a place among the first three).")
@click.option("--strategy", type=click.Choice(["sag", "dataflow", "local"]), default="sag", show_default=True,
              help="sag: SAG's retrieval. dataflow: DataFlow activation (docs/dataflow.md). local: GraphRAG local "
                   "search's context tables (needs `sag-pg communities build` for reports).")
@click.option("--depth", type=count(0), help="dataflow: hops of the propagation [default: 3].")
@click.option("--breadth", type=count(1), help="dataflow: events kept per event and hop [default: 5].")
@click.option("--focus", multiple=True, help="dataflow: a preferred topic or tag (repeatable).")
@click.option("--profile", type=click.Choice(["default", "seed"]), default="default", show_default=True,
              help="sag: default (the tuned retrieval) or seed (sag-algorithm's formulas as written, every addition "
                   "off, PageRank 0.85: to reproduce and compare; docs/retrieval.md).")
@pass_app
def search(app: AppContext, query: str, mode: str, sources: tuple[str, ...], all_sources: bool, top_n: int,
           keys: tuple[str, ...], sql: str | None, as_json: bool, explain: bool, strategy: str,
           depth: int | None, breadth: int | None, focus: tuple[str, ...], profile: str) -> None:
    """Search the knowledge base.

    Example:

        sag-pg search "Who did Ada Lovelace work with?" --top-n 5 --explain
    """
    refuse_source_with_all_sources(all_sources, "sources")
    if profile != "default" and strategy != "sag":
        raise click.UsageError("--profile is for --strategy sag")
    source: list[str] | None = None if all_sources else (list(sources) or ["default"])
    if strategy == "local":  # GraphRAG (sag_pg.graphrag.local); --top-n: its top_k_mapped_entities
        from ..graphrag import LocalParams

        context = app.sag().local_context(query, source=source, params=LocalParams(top_k_entities=top_n,
                                                                                     include_entities=keys))
        if as_json:
            echo_json(context)
        else:
            click.echo(context["context_text"] or "no context")
        return
    extra = search_arguments(strategy, depth, breadth, focus)
    if profile != "default":
        from ..search.retrieve import RetrievalParams

        extra["params"] = RetrievalParams(profile=profile)
    result = app.sag().search(query, keys=list(keys) or None, sql=sql, mode=mode, source=source, top_n=top_n,
                              **extra)
    if as_json:
        echo_json(result_json(result))
        return
    print_result(Console(), result, explain=explain)


def print_result(console: Console, result: Any, *, explain: bool = False, width: int = 100) -> None:
    rewrite = getattr(result, "rewrite", None)
    if rewrite is not None:
        console.print(f"[dim]rewritten:[/dim] {rewrite.query}  [dim]keys:[/dim] {', '.join(rewrite.keys) or '-'}")
    # Padding (nothing relates it to the question, see relevant()) is not shown.
    shown = [hit for hit in result.chunks if relevant(hit)]
    if not shown:
        console.print("[yellow]no results[/yellow]" if not result.chunks else
                      f"[yellow]no relevant results: the {len(result.chunks)} chunks found all scored 0[/yellow]")
    placed = placements(shown)
    for rank, (hit, why) in enumerate(zip(shown, placed, strict=True), start=1):
        title = hit.title or hit.document_title
        mark = "" if why == "score" else f" [magenta]↑{why}[/magenta]"
        console.print(f"[bold]{rank}.[/bold] [cyan]{hit.score:.4f}[/cyan]{mark}  {hit.document_uri}  "
                      f"[bold]{title}[/bold]", highlight=False)
        console.print(textwrap.indent(textwrap.shorten(hit.content.replace("\n", " "), width=width * 3,
                                                       placeholder=" …"), "    "), highlight=False)
        if explain:
            console.print(f"    [dim]cos={hit.similarity:.3f} text={hit.text_score:.3f} keys={hit.key_score:.3f} "
                          f"W_init={hit.weight_init:.3f} via={'k' if hit.via_keys else ''}"
                          f"{'v' if hit.via_vector else ''}{'t' if hit.via_text else ''}"
                          f"{'  direct match' if hit.direct_match else ''}[/dim]", highlight=False)
            for event in hit.events[:3]:
                console.print(f"    [green]event[/green] {textwrap.shorten(event['content'], width=width)}",
                              highlight=False)
    if any(why != "score" for why in placed):
        console.print(f"[dim]{PLACED_LEGEND}[/dim]", highlight=False)
    if shown and len(shown) < len(result.chunks):
        console.print(f"[dim]only {len(shown)} relevant: the other {len(result.chunks) - len(shown)} chunks "
                      "found scored 0[/dim]", highlight=False)
    if explain and result.keys:
        table = Table(title="key-final (the hop trail)", show_lines=False)
        for column in ("step", "weight", "type", "key"):
            table.add_column(column)
        for key in sorted(result.keys, key=lambda k: (k.step, -k.weight)):
            table.add_row(str(key.step), f"{key.weight:.3f}", key.type, str(key.name))
        console.print(table)
    if explain and getattr(result, "trail", None):
        print_trail(console, result.trail)
    if explain:
        console.print("[dim]" + "  ".join(f"{k} {v:.1f} ms" for k, v in result.timings_ms.items()) + "[/dim]")

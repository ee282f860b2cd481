"""`sag-pg demo`: ingest the bundled documents and show what the search finds."""

from __future__ import annotations

import click
from rich.console import Console

from ..demo import DEMO_QUERIES, DEMO_SOURCE, demo_paths
from ._common import TOP_N, AppContext, pass_app
from .search import print_result


@click.command()
@click.option("--top-n", type=TOP_N, default=3, show_default=True, help="Results per question.")
@pass_app
def demo(app: AppContext, top_n: int) -> None:
    """Ingest the demo documents (Chinese and English) into the `demo` source and run the example questions.

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
        result = sag.search(query.question, source=DEMO_SOURCE, top_n=max(top_n, 5))
        uris = [hit.document_uri for hit in result.chunks[:5]]
        hit_all = all(any(u.endswith(suffix) for u in uris) for suffix in query.expected_uris_suffix)
        found += hit_all
        hops = "two-hop" if query.bridge else "one-hop"
        mark = "[green]✓[/green]" if hit_all else "[yellow]·[/yellow]"
        console.print(f"{mark} [bold]{query.question}[/bold]  [dim]({hops}; {query.why})[/dim]", highlight=False)
        result.chunks = result.chunks[:top_n]
        print_result(console, result)
        console.print()
    console.print(f"{found} of {len(DEMO_QUERIES)} questions had all their expected documents in the top 5.")
    console.print('Next: sag-pg search "…" --source demo --explain   ·   psql "$(sag-pg db url)"')

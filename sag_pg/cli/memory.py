"""`sag-pg memory ...`: two-channel recall, recall statistics and eviction."""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime, timedelta

import click

from ._common import TOP_N, AppContext, count, echo_json, pass_app, source_name

_source = click.option("--source", default="default", show_default=True, callback=source_name)
_json = click.option("--json", "as_json", is_flag=True, help="Print JSON.")


@click.group()
def memory() -> None:
    """Memory: recall (content + graph channels), recall statistics, eviction.

    Example:

        sag-pg memory recall "Steve Jobs Pixar"
    """


@memory.command("recall")
@click.argument("query")
@click.option("--channels", type=click.Choice(["hybrid", "knowledge", "graph"]), default="hybrid", show_default=True)
@click.option("--strategy", type=click.Choice(["hybrid", "text_overlap", "graph_distance", "temporal", "reference_count"]),
              default="hybrid", show_default=True)
@click.option("--min-score", type=click.FloatRange(0), default=0.0, show_default=True)
@click.option("--top-n", type=TOP_N, default=10, show_default=True)
@click.option("--depth", type=click.IntRange(1, 6), default=2, show_default=True)
@click.option("--no-record", is_flag=True, help="Do not count this recall in the statistics.")
@_source
@_json
@pass_app
def recall(app: AppContext, query: str, channels: str, strategy: str, min_score: float, top_n: int, depth: int,
           no_record: bool, source: str, as_json: bool) -> None:
    """Recall documents by keyword and through the graph, with each score's breakdown.

    Example:

        sag-pg memory recall "Steve Jobs Pixar" --strategy hybrid --top-n 5
    """
    found = app.sag().recall(query, source=source, channels=channels, strategy=strategy, min_score=min_score,
                             top_n=top_n, depth=depth, record=not no_record)
    if as_json:
        echo_json([r.to_dict() for r in found])
        return
    if not found:
        click.echo("no results")
    for n, r in enumerate(found, 1):
        via = ("c" if r.via_content else "") + ("g" if r.via_graph else "")
        click.echo(f"{n}. {r.score:.4f}  {r.uri}  {r.title}  [overlap {r.overlap:.3f} graph {r.graph:.3f} "
                   f"temporal {r.temporal:.3f} reference {r.reference:.3f} via {via}]")


@memory.command("stats")
@click.option("--limit", type=count(1), default=10, show_default=True)
@_source
@_json
@pass_app
def stats(app: AppContext, limit: int, source: str, as_json: bool) -> None:
    """The most recalled documents: recall count, average score, last recall, value.

    Example:

        sag-pg memory stats --limit 20
    """
    rows = app.sag().memory.stats(source=source, limit=limit)
    if as_json:
        echo_json(rows)
        return
    if not rows:
        click.echo(f"no recalls recorded in source {source!r}")
        return
    click.echo(f"{'recalls':>7}  {'average':>7}  {'value':>6}  {'last recall':<16}  document")
    for r in rows:
        click.echo(f"{r['recall_count']:>7}  {r['average_score']:>7.4f}  {r['value']:>6.4f}  "
                   f"{_when(r['last_recall_at']):<16}  {r['uri']}")


def _when(moment: datetime | str | None) -> str:
    """A time to the minute (the statistics give it as ISO text)."""
    if isinstance(moment, str):
        moment = datetime.fromisoformat(moment)
    return f"{moment:%Y-%m-%d %H:%M}" if moment is not None else "-"


@memory.command("evict")
@click.option("--policy", type=click.Choice(["none", "ttl", "capacity", "recall_based", "hybrid"]), required=True)
@click.option("--ttl-days", type=click.FloatRange(0, 36_500),
              help="ttl and hybrid: evict what was idle this long (at most 100 years).")
@click.option("--max-items", type=count(0), help="capacity, recall_based, hybrid: documents kept per source.")
@click.option("--dry-run", is_flag=True, help="Only list what would go.")
@_source
@_json
@pass_app
def evict(app: AppContext, policy: str, ttl_days: float | None, max_items: int | None, dry_run: bool, source: str,
          as_json: bool) -> None:
    """Evict documents by policy; they are deleted as `sag-pg delete` does (keys, relations, BM25 statistics).

    Example:

        sag-pg memory evict --policy recall_based --max-items 1000 --dry-run
    """
    ttl = timedelta(days=ttl_days) if ttl_days is not None else None
    gone = app.sag().memory.evict(policy, source=source, ttl=ttl, max_items=max_items, dry_run=dry_run)
    if as_json:
        echo_json([asdict(e) for e in gone])
        return
    for e in gone:
        click.echo(f"{'would evict' if dry_run else 'evicted'}  {e.reason:<12} value {e.value:.4f}  {e.uri}")
    click.echo(f"{len(gone)} document(s) {'would be ' if dry_run else ''}evicted", err=True)


@memory.command("bench")
@click.argument("directory", type=click.Path(exists=True, file_okay=False))
@click.option("--rounds", type=count(1), default=3, show_default=True,
              help="Passes over the questions (each question runs with and without recording in every pass).")
@click.option("--limit", type=count(1), help="Only the first N questions.")
@click.option("--compare-ingest", is_flag=True, help="Ingest again without the co-occurrence trigger, for its cost.")
@pass_app
def bench(app: AppContext, directory: str, rounds: int, limit: int | None, compare_ingest: bool) -> None:
    """Co-occurrence relations made by the ingest of a benchmark folder, and SAG search latency with the
    recall statistics recorded and without, interleaved on one fresh database. Prints JSON.

    Example:

        sag-pg memory bench /work/shared/bench/musique-train100 --rounds 3
    """
    from ..bench.dataset import load_dataset
    from ..bench.recall_cost import measure_recall_cost

    result = measure_recall_cost(app.settings, load_dataset(directory, limit=limit), rounds=rounds,
                                 compare_ingest=compare_ingest, progress=lambda what: click.echo(what, err=True))
    echo_json(result)

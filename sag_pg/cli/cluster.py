"""`sag-pg cluster`: group events by shared keys and meaning (sag-algorithm §4)."""

from __future__ import annotations

import os
from contextlib import nullcontext
from datetime import datetime
from pathlib import Path

import click
from rich.console import Console

from ..errors import InputError
from ._common import SEED, TOP_N, AppContext, count, echo_json, pass_app, source_name

_DATES = ["%Y-%m-%d", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S%z"]


def _event_ids(value: str | None) -> tuple[int, ...] | None:
    if value is None:
        return None
    try:
        return tuple(int(part) for part in value.replace(",", " ").split())
    except ValueError as exc:
        raise InputError(f"--events takes event ids separated by commas, got {value!r}") from exc


@click.command()
@click.option("--source", default=None, callback=source_name,
              help="Only events of this source (default: all sources).")
@click.option("--document", "documents", multiple=True, metavar="URI", help="Only events of this document "
              "(repeatable).")
@click.option("--since", type=click.DateTime(_DATES), default=None, help="Only events with event_time >= this.")
@click.option("--until", type=click.DateTime(_DATES), default=None, help="Only events with event_time < this.")
@click.option("--key", "key_spec", default=None, metavar="TYPE:NAME", help="Only events holding this key, "
              "e.g. person:Steve Jobs.")
@click.option("--events", "event_ids", default=None, metavar="ID,ID,…", help="Only these event ids.")
@click.option("--query", default=None, help="Only the events of this search's top chunks (fast search).")
@click.option("--top-n", type=TOP_N, default=20, show_default=True,
              help="Chunks of the --query search whose events are clustered.")
@click.option("--alpha", type=click.FloatRange(0, 1), default=0.7, show_default=True,
              help="Weight of shared keys against semantic similarity.")
@click.option("--threshold", type=click.FloatRange(0, 1, max_open=True), default=0.1, show_default=True,
              help="Edge threshold: weaker pairs are not linked.")
@click.option("--no-idf", is_flag=True, help="Weigh every shared key 1 instead of its IDF.")
@click.option("--key-types", default=None, metavar="T1,T2", help="Only keys of these types (e.g. person,topic).")
@click.option("--semantic-k", type=count(0), default=10, show_default=True,
              help="Nearest events per event for semantic edges (0: keys only).")
@click.option("--max-key-events", type=count(1), default=None,
              help="Skip keys held by more chosen events than this [default: the largest that keeps the key "
              "pairs within --pairs-per-event × events].")
@click.option("--pairs-per-event", type=click.FloatRange(0, 10_000), default=20.0, show_default=True,
              help="Budget of key pairs per event that sets the default --max-key-events.")
@click.option("--resolution", type=click.FloatRange(0, 1_000, min_open=True), default=1.0, show_default=True,
              help="Louvain resolution (larger: more, smaller clusters).")
@click.option("--seed", type=SEED, default=42, show_default=True, help="Louvain random state.")
@click.option("--offline-titles", is_flag=True, help="Title clusters by their top keys even with an LLM.")
@click.option("--limit", type=count(0), default=20, show_default=True, help="Clusters to print.")
@click.option("--json", "as_json", is_flag=True, help="Print the run as JSON (every cluster with its events).")
@click.option("--graphml", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write the graph as GraphML to this file.")
@click.option("--png", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also draw the clusters to this PNG (needs: pip install 'sag-pg[plot]').")
@click.option("--prune", is_flag=True, help="Cluster nothing: delete the stored runs of --source (default: all) "
              "but the newest --keep of each source.")
@click.option("--keep", type=count(0), default=1, show_default=True, help="Runs --prune keeps per source.")
@pass_app
def cluster(app: AppContext, source: str | None, documents: tuple[str, ...], since: datetime | None,
            until: datetime | None, key_spec: str | None, event_ids: str | None, query: str | None, top_n: int,
            alpha: float, threshold: float, no_idf: bool, key_types: str | None, semantic_k: int,
            max_key_events: int | None, pairs_per_event: float, resolution: float, seed: int,
            offline_titles: bool, limit: int, as_json: bool, graphml: Path | None, png: Path | None, prune: bool,
            keep: int) -> None:
    """Cluster events by shared keys (IDF-weighted) and embeddings, with Louvain, and store the clusters.

    All the given filters must hold; none clusters every event.  Titles come from the LLM when one is
    configured, else from each cluster's most characteristic keys.  Each run is stored (sag.cluster_runs);
    `--prune` deletes old ones.

    Example:

        sag-pg cluster --source history --key-types person,place,topic --alpha 0.6 --graphml history.graphml
    """
    if prune:
        deleted = app.sag().prune_cluster_runs(keep=keep, source=source)
        click.echo(f"deleted {deleted} cluster runs (kept the newest {keep} of each source)")
        return
    from ..cluster import (
        ClusterParams,
        EventSelection,
        cluster_events,
        missing_cjk_font,
        parse_key_spec,
        write_graphml,
        write_png,
    )
    from ..cluster.export import require_matplotlib

    types = tuple(t.strip() for t in key_types.split(",") if t.strip()) if key_types is not None else None
    params = ClusterParams(use_idf=not no_idf, key_types=types, alpha=alpha, edge_threshold=threshold,
                           semantic_k=semantic_k, max_key_events=max_key_events,
                           key_pairs_per_event=pairs_per_event, resolution=resolution, random_state=seed)
    params.validate()
    if png is not None:
        require_matplotlib()  # before the work, not after it
    for output in (graphml, png):  # a path that cannot be written is refused before the work, too
        if output is not None and not os.access(output.parent.resolve(), os.W_OK | os.X_OK):
            raise click.FileError(str(output), hint=f"cannot write into {output.parent}")
    key = parse_key_spec(key_spec) if key_spec else None
    ids = _event_ids(event_ids)
    if query is not None and ids is not None:
        raise click.UsageError("give --query or --events, not both")
    sag = app.sag()
    if query is not None:
        ids = EventSelection.from_search(sag.search(query, source=source, top_n=top_n)).event_ids
    selection = EventSelection(source=source, documents=documents, since=since, until=until, key=key,
                               event_ids=ids)
    err = Console(stderr=True)
    llm = None if offline_titles else sag.llm
    spinner = err.status("clustering", spinner="dots") if err.is_terminal and not as_json else nullcontext()
    with spinner as status:
        def on_phase(name: str) -> None:
            if status is not None:
                status.update(f"clustering: {name.replace('_', ' ')}")

        result = cluster_events(sag.db, selection, params, llm=llm, prompts_dir=sag.settings.prompts_dir,
                                on_phase=on_phase)
    try:
        if graphml is not None:
            write_graphml(result, graphml)
        if png is not None:
            write_png(result, png)
            if missing_cjk_font(result):
                click.echo("sag-pg: no CJK font found: the Chinese/Japanese/Korean titles in the PNG are empty boxes "
                           "(install one, e.g. apt install fonts-noto-cjk; the --json and GraphML output keep them)",
                           err=True)
    except OSError as exc:
        raise click.FileError(str(exc.filename or graphml or png), hint=exc.strerror or str(exc)) from exc
    if as_json:
        echo_json(result.to_dict())
        return
    modularity = f", modularity {result.modularity:.3f}" if result.modularity is not None else ""
    click.echo(f"run {result.run_id}: {result.event_count} events, {result.edge_count} edges → "
               f"{len(result.clusters)} clusters{modularity}; {result.timings['total']:.1f} s")
    if result.clusters[:limit]:
        click.echo(f"{'#':>4}  {'events':>6}  title")
    for c in result.clusters[:limit]:
        click.echo(f"{c.ordinal:>4}  {c.size:>6}  {c.title}")
    if len(result.clusters) > limit:
        rest = result.clusters[limit:]
        click.echo(f"      … {len(rest)} more clusters ({sum(c.size for c in rest)} events)")
    for path in (graphml, png):
        if path is not None:
            click.echo(f"wrote {path}")


"""`sag-pg communities build|list|show`: GraphRAG's community hierarchy and reports."""

from __future__ import annotations

import click

from ._common import SEED, AppContext, count, echo_json, pass_app, refuse_source_with_all_sources, source_name


@click.group()
def communities() -> None:
    """GraphRAG communities: a hierarchical Leiden hierarchy over the event clustering, a report per community.

    Example:

        sag-pg communities build --source demo && sag-pg communities list --source demo --level 0
    """


@communities.command()
@click.option("--source", default="default", show_default=True, callback=source_name,
              help="The source whose events are grouped.")
@click.option("--all-sources", is_flag=True, help="Group the events of every source into one hierarchy.")
@click.option("--max-levels", type=count(1), default=3, show_default=True,
              help="The coarsest levels kept (3: levels 0-2; global search reads level 2 by default).")
@click.option("--method", type=click.Choice(["leiden", "louvain"]), default="leiden", show_default=True,
              help="leiden: GraphRAG's hierarchical Leiden (communities larger than --max-cluster-size are split "
                   "again, one level deeper). louvain: python-louvain's dendrogram.")
@click.option("--max-cluster-size", type=count(1), default=10, show_default=True,
              help="leiden: the largest community that is not split again (GraphRAG's default 10).")
@click.option("--min-report-size", type=count(1), default=2, show_default=True,
              help="Communities with fewer events get no report.")
@click.option("--alpha", type=click.FloatRange(0, 1), default=0.7, show_default=True,
              help="Weight of shared keys against semantic similarity (as in sag-pg cluster).")
@click.option("--threshold", type=click.FloatRange(0, 1, max_open=True), default=0.1, show_default=True,
              help="Edge threshold of the clustering graph.")
@click.option("--semantic-k", type=count(0), default=10, show_default=True,
              help="Nearest events per event for semantic edges (0: keys only).")
@click.option("--resolution", type=click.FloatRange(0, 1_000, min_open=True), default=1.0, show_default=True,
              help="Leiden / Louvain resolution.")
@click.option("--seed", type=SEED, default=None,
              help="Random seed (default: Leiden GraphRAG's 0xDEADBEEF, Louvain 42).")
@click.option("--offline", is_flag=True, help="Extractive reports even when an LLM is configured.")
@click.option("--json", "as_json", is_flag=True, help="Print the build as JSON.")
@pass_app
def build(app: AppContext, source: str | None, all_sources: bool, max_levels: int, method: str,
          max_cluster_size: int, min_report_size: int, alpha: float, threshold: float, semantic_k: int,
          resolution: float, seed: int | None, offline: bool, as_json: bool) -> None:
    """Build (or rebuild) the hierarchy and the reports; reports of unchanged communities are reused.

    Example:

        sag-pg communities build --source demo --max-levels 2
    """
    from ..cluster import ClusterParams, EventSelection
    from ..graphrag import BuildParams
    from ..graphrag.hierarchy import GRAPHRAG_SEED

    params = BuildParams(cluster=ClusterParams(alpha=alpha, edge_threshold=threshold, semantic_k=semantic_k,
                                               resolution=resolution, random_state=42 if seed is None else seed),
                         method=method, max_cluster_size=max_cluster_size,
                         leiden_seed=GRAPHRAG_SEED if seed is None else seed,
                         max_levels=max_levels, min_report_size=min_report_size)
    refuse_source_with_all_sources(all_sources)
    result = app.sag().build_communities(EventSelection(source=None if all_sources else source), params,
                                         offline=offline)
    if as_json:
        echo_json(result.to_dict())
        return
    click.echo(f"hierarchy {result.run_id}: {result.event_count} events; {result.reports_written} reports written, "
               f"{result.reports_reused} reused; {result.timings['total']:.1f} s")
    for level in result.levels:
        click.echo(f"  level {level['level']}: {level['communities']} communities, {level['reports']} reports "
                   f"({level['llm_reports']} by the LLM)")
    if result.llm_failures:
        click.echo(f"  {result.llm_failures} LLM reports failed: extractive ones kept instead")


@communities.command(name="list")
@click.option("--source", default="default", show_default=True, callback=source_name)
@click.option("--all-sources", is_flag=True, help="The hierarchy built over every source.")
@click.option("--level", type=count(0), default=None, help="Only this level (0: the coarsest).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_app
def list_(app: AppContext, source: str | None, all_sources: bool, level: int | None, as_json: bool) -> None:
    """List the communities that have a report, coarsest level first.

    Example:

        sag-pg communities list --source demo --level 0
    """
    from ..graphrag.browse import list_reports

    refuse_source_with_all_sources(all_sources)
    reports = list_reports(app.sag().db, None if all_sources else source, level)
    if as_json:
        echo_json(reports)
        return
    if not reports:
        click.echo("no community reports" + (f" at level {level}" if level is not None else "")
                   + ": `sag-pg communities build` makes them")
        return
    click.echo(f"{'id':>7}  {'level':>5}  {'events':>6}  {'rating':>6}  {'report':<10}  title")
    for r in reports:
        click.echo(f"{r['id']:>7}  {r['level']:>5}  {r['size']:>6}  {r['rating']:>6.2f}  {r['kind']:<10}  {r['title']}")


@communities.command()
@click.argument("community_id", type=int)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_app
def show(app: AppContext, community_id: int, as_json: bool) -> None:
    """Show one community's report, parent and children.

    Example:

        sag-pg communities show 42
    """
    from ..graphrag.browse import show_community

    found = show_community(app.sag().db, community_id)
    if as_json:
        echo_json(found)
        return
    report = found.get("report")
    click.echo(f"community {found['id']} (level {found['level']}, {found['size']} events, parent "
               f"{found['parent_id'] or '-'}, children {', '.join(map(str, found['children'])) or '-'})")
    if report is None:
        click.echo("no report")
        return
    click.echo(f"[{report['kind']} report, rating {report['rating']}]\n")
    click.echo(report["full_content"])

"""`sag-pg graph ...`: the knowledge graph over the keys (entities, typed relations, traversal, tags)."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import click

from ._common import AppContext, count, echo_json, pass_app, source_name

_source = click.option("--source", default="default", show_default=True, callback=source_name)
_json = click.option("--json", "as_json", is_flag=True, help="Print JSON.")


def _ref(value: str) -> int | str:
    """An entity given as '#42' is the key id 42; anything else is a name."""
    return int(value[1:]) if value.startswith("#") and value[1:].isdigit() else value


@click.group()
def graph() -> None:
    """Knowledge graph: entities (keys), typed relations, get_related, tags, GraphML export.

    Example:

        sag-pg graph related "Steve Jobs" --depth 2
    """


@graph.command("add")
@click.argument("name", required=False)
@click.option("--type", "entity_type", default="entity", show_default=True)
@click.option("--description")
@click.option("--tag", "tags", multiple=True, help="A tag (repeatable; at most 8 kept, existing ones reused).")
@click.option("--relation", "relations", nargs=3, multiple=True, metavar="HEAD TYPE TAIL",
              help="Add the relation HEAD -TYPE-> TAIL (repeatable) instead of an entity.")
@click.option("--weight", type=click.FloatRange(0, 1), default=1.0, show_default=True, help="Weight of --relation.")
@_source
@pass_app
def add(app: AppContext, name: str | None, entity_type: str, description: str | None, tags: tuple[str, ...],
        relations: tuple[tuple[str, str, str], ...], weight: float, source: str) -> None:
    """Add an entity (kept even when no event mentions it), or with --relation a typed relation.

    Example:

        sag-pg graph add "Ada Lovelace" --type person --tag mathematician
        sag-pg graph add --relation "Ada Lovelace" worked_with "Charles Babbage" --weight 0.9
    """
    kg = app.sag().graph
    if relations:
        for head, kind, tail in relations:
            rel = kg.add_relation(_ref(head), kind, _ref(tail), weight, source=source)
            click.echo(f"relation {rel}: {head} -{kind}-> {tail} ({weight})")
        return
    if not name:
        raise click.UsageError("give an entity NAME or --relation HEAD TYPE TAIL")
    key_id = kg.add_entity(name, entity_type, description=description, tags=list(tags) or None, source=source)
    click.echo(f"entity #{key_id}: {name}")


@graph.command("related")
@click.argument("entity")
@click.option("--depth", type=click.IntRange(1, 6), default=2, show_default=True)
@click.option("--direction", type=click.Choice(["out", "in", "both"]), default="both", show_default=True)
@click.option("--type", "types", multiple=True, help="Relation type to follow (repeatable). Default: all.")
@click.option("--limit", type=count(1), default=50, show_default=True)
@click.option("--graphml", type=click.Path(dir_okay=False, path_type=Path), help="Also write the neighbourhood as GraphML.")
@_source
@_json
@pass_app
def related(app: AppContext, entity: str, depth: int, direction: str, types: tuple[str, ...], limit: int,
            graphml: Path | None, source: str, as_json: bool) -> None:
    """Entities within DEPTH hops of ENTITY (a name, or #id), with distance and score.

    Example:

        sag-pg graph related "Steve Jobs" --depth 2 --graphml jobs.graphml
    """
    kg = app.sag().graph
    found = kg.get_related(_ref(entity), depth, direction, list(types) or None, limit=limit, source=source)
    if graphml is not None:
        kg.export_graphml(_ref(entity), graphml, depth=depth, direction=direction, relation_types=list(types) or None,
                          source=source)
    if as_json:
        echo_json([asdict(r) for r in found])
        return
    if not found:
        click.echo("no related entity")
    for r in found:
        click.echo(f"{r.distance}  {r.score:.4f}  {r.type}: {r.name}  (#{r.id}, path weight {r.path_weight:.4f})")


@graph.command("relations")
@click.argument("entity", required=False)
@click.option("--limit", type=count(1), default=50, show_default=True)
@click.option("--rebuild", is_flag=True, help="Recompute the co-occurrence relations of the source first.")
@click.option("--extract", "extract", is_flag=True, help="Ask the LLM for typed relations of events that have none yet.")
@_source
@_json
@pass_app
def relations(app: AppContext, entity: str | None, limit: int, rebuild: bool, extract: bool, source: str,
              as_json: bool) -> None:
    """The relations of ENTITY, or without it the relation counts per origin and type.

    Example:

        sag-pg graph relations "Steve Jobs"
        sag-pg graph relations --rebuild
    """
    kg = app.sag().graph
    if rebuild:
        click.echo(f"co-occurrence relations: {kg.rebuild_cooccurrence(source=source)}", err=True)
    if extract:
        click.echo(f"LLM relations: {kg.extract_relations(source=source)}", err=True)
    if entity is None:
        counts = kg.relation_counts(source=source)
        if as_json:
            echo_json(counts)
            return
        for c in counts:
            click.echo(f"{c['origin']:<13} {c['type']:<24} {c['relations']:>8} relations  {c['evidence']:>8} evidence")
        return
    found = kg.relations(_ref(entity), limit=limit, source=source)
    if as_json:
        echo_json([asdict(r) for r in found])
        return
    for r in found:
        click.echo(f"{r.head} -{r.relation_type}-> {r.tail}  weight {r.weight:.3f}  {r.origin} x{r.evidence_count}")


@graph.command("tags")
@click.argument("entity", required=False)
@click.option("--set", "new_tags", multiple=True, help="Replace ENTITY's tags (repeatable, most relevant first).")
@click.option("--prefix", default="", help="List the tags that start with this.")
@click.option("--count", "count_tag", help="How many entities carry this tag.")
@_source
@_json
@pass_app
def tags(app: AppContext, entity: str | None, new_tags: tuple[str, ...], prefix: str, count_tag: str | None,
         source: str, as_json: bool) -> None:
    """Tags: list (by prefix), count entities by tag, or set an entity's tags.

    Example:

        sag-pg graph tags "Ada Lovelace" --set mathematician --set computing
        sag-pg graph tags --prefix comp
    """
    kg = app.sag().graph
    if count_tag is not None:
        click.echo(str(kg.entity_count_by_tag(count_tag, source=source)))
        return
    if entity is not None and new_tags:
        kept = kg.set_entity_tags(_ref(entity), list(new_tags), source=source)
        click.echo(f"{kept} tag(s) kept")
    if entity is not None:
        found = kg.get_entity(_ref(entity), source=source)
        if found is None:
            raise click.ClickException(f"no entity {entity!r}")
        names = list(found.tags)
    else:
        names = kg.find_tags(prefix, source=source)
    if as_json:
        echo_json(names)
    else:
        click.echo("\n".join(names))

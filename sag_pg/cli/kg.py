"""`sag-pg kg`: import a knowledge graph (RDF) and query it with the agents' two tools."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from ..errors import InputError
from ._common import SEED, TOP_N, AppContext, count, echo_json, pass_app, source_name

_SOURCE_HELP = "The source (one knowledge graph) to use"
_ONLY_HELP = " [default: the only source holding ENTITY]."
_SPARQL_HELP = "Query this SPARQL endpoint instead of the database's graph (e.g. http://localhost:7878/query)."


@click.group()
def kg() -> None:
    """Knowledge-graph tools for LLM agents: get_relations, get_triples (CVT nodes flattened), the agent loop.

    Example:

        sag-pg kg import freebase-subset.nt --source freebase
    """


@kg.command("import")
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--source", default="kg", show_default=True, callback=source_name, help=_SOURCE_HELP + ".")
@click.option("--format", "fmt", type=click.Choice(["ntriples", "turtle"]), default=None,
              help="RDF syntax [default: from the file name; .ttl is Turtle, anything else N-Triples].")
@click.option("--namespace", default="http://rdf.freebase.com/ns/", show_default=True,
              help="IRIs under it are shortened to their local part (m.02mjmr); predicates outside it are "
              "stored whole and not shown by the tools.")
@click.option("--whitelist", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="JSON list of relations (names or full IRIs) to prefer; stored with the source.")
@click.option("--json", "as_json", is_flag=True, help="Print the counts as JSON.")
@pass_app
def import_(app: AppContext, files: tuple[Path, ...], source: str, fmt: str | None, namespace: str,
            whitelist: Path | None, as_json: bool) -> None:
    """Import N-Triples (streamed; Freebase-style ns: prefixes allowed) or Turtle files into a source.

    Malformed lines are named on stderr and skipped; the exit code is then 1.

    Example:

        sag-pg kg import freebase-subset.nt --source freebase --whitelist cwq_relations.json
    """
    relations = _read_whitelist(whitelist, namespace) if whitelist is not None else None
    err = Console(stderr=True)
    status = err.status("importing", spinner="dots") if err.is_terminal and not as_json else None

    def on_progress(report) -> None:  # type: ignore[no-untyped-def]
        if status is not None:
            status.update(f"importing: {report.triples:,} triples, {report.triples_per_second:,.0f}/s")

    if status is not None:
        status.start()
    try:
        report = app.sag().kg.import_files(files, source=source, fmt=fmt, namespace=namespace,
                                           whitelist=relations, on_progress=on_progress)
    finally:
        if status is not None:
            status.stop()
    for bad in report.bad[:20]:
        click.echo(f"{bad['file']}:{bad['line']}: skipped: {bad['message']}", err=True)
    if report.bad_lines > 20:
        click.echo(f"… {report.bad_lines - 20} more bad lines", err=True)
    if as_json:
        echo_json(report.to_dict())
    else:
        click.echo(f"{report.triples:,} triples into source {source!r}: {report.keys:,} new nodes, "
                   f"{report.names:,} names, {report.relations:,} relations; {report.bad_lines:,} bad lines; "
                   f"{report.seconds:.1f} s ({report.triples_per_second:,.0f} triples/s)")
    if report.bad_lines:
        raise click.exceptions.Exit(1)


@kg.command()
@click.argument("entity")
@click.option("--question", default="", help="Rank the relations by BM25 against this question.")
@click.option("--source", default=None, callback=source_name, help=_SOURCE_HELP + _ONLY_HELP)
@click.option("--top-k", type=TOP_N, default=30, show_default=True)
@click.option("--sparql", default=None, help=_SPARQL_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print [{relation, score}] as JSON.")
@pass_app
def relations(app: AppContext, entity: str, question: str, source: str | None, top_k: int, sparql: str | None,
              as_json: bool) -> None:
    """get_relations: an entity's relations (out and in), filtered and ranked against the question.

    Example:

        sag-pg kg relations "Ada Lovelace" --question "who was Ada Lovelace's husband?" --source freebase
    """
    kg = app.sag().kg
    source = _chosen_source(kg, entity, source, sparql)
    found = kg.relations(entity, question=question, source=source, top_k=top_k, sparql=sparql)
    if as_json:
        echo_json([{"relation": r, "score": s} for r, s in found])
        return
    if found:
        click.echo("\n".join(r for r, _ in found))
        return
    click.echo("No relations found.")
    hidden = kg.hidden_relations(entity, source=source) if not sparql else []
    if hidden:
        click.echo(f"hint: {entity!r} has relations whose predicates were outside the import's --namespace, which "
                   f"the tools do not show (e.g. {hidden[0]}); import again with --namespace set to their prefix, "
                   f"e.g. --namespace {_namespace_of(hidden[0])}", err=True)


@kg.command()
@click.argument("entity")
@click.argument("relation_names", metavar="RELATION...", nargs=-1, required=True)
@click.option("--question", default="", help="Rank the flattened CVT relations against this question.")
@click.option("--source", default=None, callback=source_name, help=_SOURCE_HELP + _ONLY_HELP)
@click.option("--limit-per-relation", type=TOP_N, default=5, show_default=True)
@click.option("--seed", type=SEED, default=0, show_default=True, help="Seed of the reproducible sampling.")
@click.option("--sparql", default=None, help=_SPARQL_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print {entity, triples, cvt_info, flatten_candidates}.")
@pass_app
def triples(app: AppContext, entity: str, relation_names: tuple[str, ...], question: str, source: str | None,
            limit_per_relation: int, seed: int, sparql: str | None, as_json: bool) -> None:
    """get_triples: an entity's triples through the given relations, CVT nodes flattened into two-hop relations.

    Example:

        sag-pg kg triples m.0dl567 people.person.spouse_s people.person.parents --source freebase
    """
    kg = app.sag().kg
    source = _chosen_source(kg, entity, source, sparql)
    result = kg.triples(entity, list(relation_names), question=question, source=source,
                        limit_per_relation=limit_per_relation, seed=seed, sparql=sparql)
    if as_json:
        echo_json(result)
        return
    lines = [f"[{_node(t['head'])}, {t['relation']}, {_node(t['tail'])}]" for t in result["triples"]]
    click.echo("\n".join(lines) if lines else "No triples found.")


@kg.command()
@click.argument("question")
@click.option("--source", default=None, callback=source_name, help=_SOURCE_HELP + " [default: all].")
@click.option("--entity", "entities", multiple=True, metavar="NAME=ID",
              help="A topic entity the question is about (repeatable), e.g. 'Ada Lovelace=m.0dl567'.")
@click.option("--max-calls", type=count(1), default=10, show_default=True)
@click.option("--kg-top-k", type=TOP_N, default=10, show_default=True)
@click.option("--sparql", default=None, help=_SPARQL_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print the answer with the whole trace.")
@pass_app
def ask(app: AppContext, question: str, source: str | None, entities: tuple[str, ...], max_calls: int,
        kg_top_k: int, sparql: str | None, as_json: bool) -> None:
    """The agent loop: the LLM (SAG_LLM) queries the graph with <kg-query> calls until it answers.

    Example:

        sag-pg kg ask "Who was Ada Lovelace's husband?" --entity "Ada Lovelace=m.0dl567" --source freebase
    """
    topic = []
    for spec in entities:
        name, sep, node = spec.partition("=")
        if not sep or not name.strip() or not node.strip():
            raise click.BadParameter(f"expected NAME=ID, got {spec!r}", param_hint="--entity")
        topic.append((name.strip(), node.strip()))
    result = app.sag().kg.ask(question, source=source, sparql=sparql, topic_entities=topic, max_calls=max_calls,
                              kg_top_k=kg_top_k)
    if as_json:
        echo_json(result.to_dict())
        return
    click.echo(result.answer if result.answer is not None else "(no answer)")
    click.echo(f"{result.calls} KG calls", err=True)


def _chosen_source(kg: Any, entity: str, source: str | None, sparql: str | None) -> str | None:
    """--source, or the only source holding ENTITY (said on stderr); several: an error naming them."""
    chosen = kg.choose_source(entity, source, sparql)
    if source is None and chosen is not None:
        click.echo(f"kg: source {chosen!r} (the only one holding {entity!r})", err=True)
    return chosen


def _node(name: str) -> str:
    """A node as printed: a blank node (``_:e1``, an RDF node without an IRI) said in words."""
    return f"(blank node {name[2:]})" if name.startswith("_:") else name


def _namespace_of(iri: str) -> str:
    """An IRI's namespace: up to its last '#' or '/'."""
    cut = max(iri.rfind("#"), iri.rfind("/"))
    return iri[: cut + 1] if cut > 0 else iri


def _read_whitelist(path: Path, namespace: str) -> list[str]:
    try:
        items = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: not a JSON list of relations: {exc}") from exc
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        raise InputError(f"{path}: not a JSON list of relations")
    return [i[len(namespace):].replace("/", ".") if i.startswith(namespace) else i for i in items]

"""`sag-pg documents`, `show`, `export`: what was ingested, read back (the library's SAG.documents / document)."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import click

from ..errors import InputError
from ..limits import one_line
from ._common import AppContext, count, echo_json, pass_app, source_name


@click.command()
@click.option("--source", "sources", multiple=True, callback=lambda c, p, v: tuple(source_name(c, p, s) for s in v),
              help="Only this source (repeatable). Default: every source.")
@click.option("--prefix", "uri_prefix", default=None, help="Only URIs starting with this, e.g. notes/.")
@click.option("--limit", type=count(0), default=100, show_default=True, help="0: no limit.")
@click.option("--offset", type=count(0), default=0, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON (the fields of SAG.documents()).")
@pass_app
def documents(app: AppContext, sources: tuple[str, ...], uri_prefix: str | None, limit: int, offset: int,
              as_json: bool) -> None:
    """List stored documents with their chunks, events and keys, by source and URI.

    Example:

        sag-pg documents --source nordic --prefix notes/
    """
    found = app.sag().documents(source=list(sources) or None, uri_prefix=uri_prefix, limit=limit or None,
                                offset=offset)
    if as_json:
        echo_json([d.to_dict() for d in found])
        return
    if not found:
        click.echo("no documents", err=True)
        return
    # Names stored before they were checked (or through SQL) are printed with their control and bidi
    # characters escaped: a BEL, CR or U+202E must not ring, overwrite or reverse the listing.
    width = min(60, max(len(one_line(d.uri)) for d in found))
    click.echo(f"{'source':<12} {'uri':<{width}} {'chunks':>6} {'events':>6} {'keys':>6}  updated")
    for d in found:
        click.echo(f"{one_line(d.source):<12} {one_line(d.uri):<{width}} {d.chunk_count:>6} {d.event_count:>6} "
                   f"{d.key_count:>6}  "
                   f"{d.updated_at:%Y-%m-%d %H:%M}")
    if limit and len(found) == limit:
        click.echo(f"(first {limit} from {offset}: --offset {offset + limit} for more, --limit 0 for all)", err=True)


@click.command()
@click.argument("uri")
@click.option("--source", default=None, callback=source_name, help="The source holding URI (needed only if "
              "several do).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (the fields of SAG.document()).")
@pass_app
def show(app: AppContext, uri: str, source: str | None, as_json: bool) -> None:
    """Show one document: its chunks in reading order, each chunk's events and each event's keys.

    Example:

        sag-pg show notes/halvard.md
    """
    try:
        doc = app.sag().document(uri, source=source)
        if as_json:
            echo_json(doc.to_dict())
            return
    except RecursionError:  # metadata stored through SQL deeper than Python reads or writes JSON (~1,000 levels)
        raise InputError(f"{one_line(uri)}: its metadata is nested too deeply to be read; see it in psql "
                         "(select metadata from sag.documents where uri = ...)") from None
    click.echo(click.style(one_line(doc.title or doc.uri), bold=True) + f"  ({one_line(doc.source)}: {one_line(doc.uri)})")
    click.echo(f"{doc.chunk_count} chunks, {doc.event_count} events, {doc.key_count} keys; "
               f"ingested {doc.created_at:%Y-%m-%d %H:%M}, updated {doc.updated_at:%Y-%m-%d %H:%M}")
    for chunk in doc.chunks:
        click.echo(click.style(f"\n[{chunk.ordinal}] {chunk.title or '(untitled)'}", bold=True)
                   + f"  chunk {chunk.id}, lines {chunk.start_line}-{chunk.end_line}")
        for event in chunk.events:
            click.echo(textwrap.indent(textwrap.shorten(event.content, width=200, placeholder=" …"), "  - "))
            keys = ", ".join(f"{k.type}:{_value_text(k.value)}" for k in event.keys)
            if keys:
                click.echo(textwrap.indent(textwrap.fill(keys, width=96), "      "))


def _value_text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


@click.command()
@click.option("--source", required=True, callback=source_name, help="The source to export.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write to this file instead of standard output.")
@pass_app
def export(app: AppContext, source: str, output: Path | None) -> None:
    """Export a source as JSONL ({"id","title","text","metadata"} per line) that `sag-pg ingest` reads back:
    the same documents with the same content hashes.

    Example:

        sag-pg export --source nordic -o nordic.jsonl && sag-pg ingest nordic.jsonl --source nordic-copy
    """
    handle = output.open("w", encoding="utf-8") if output is not None else sys.stdout
    count = 0
    try:
        for doc in app.sag().export(source=source):
            record = {"id": doc.uri, "title": doc.title, "text": doc.content, "metadata": doc.metadata}
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
            count += 1
    finally:
        if output is not None:
            handle.close()
    click.echo(f"exported {count} documents of {source}" + (f" to {output}" if output else ""), err=True)

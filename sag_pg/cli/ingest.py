"""`sag-pg ingest`, `delete`, `sources`, `stats`."""

from __future__ import annotations

import sys
import time

import click
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..ingest.readers import count_documents, read_inputs, skipped_files
from ._common import AppContext, echo_json, pass_app, source_name

PROGRESS_SECONDS = 10.0


class PeriodicProgress:
    """Off a terminal (a log file, a pipe): one plain line of progress at most every ``every`` seconds."""

    def __init__(self, expected: int | None, *, every: float) -> None:
        self.expected, self.every = expected, every
        self.started = self.last = time.monotonic()
        self.counts = {"stored": 0, "skipped": 0, "failed": 0}

    def note(self, status: str) -> None:
        self.counts[status] = self.counts.get(status, 0) + 1
        now = time.monotonic()
        if now - self.last >= self.every:
            self.last = now
            done = sum(self.counts.values())
            total = f"/{self.expected}" if self.expected else ""
            click.echo(f"ingest: {done}{total} documents ({self.counts['stored']} stored, {self.counts['skipped']} "
                       f"unchanged, {self.counts['failed']} failed), {now - self.started:.0f} s", err=True)


@click.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--source", default="default", show_default=True, callback=source_name,
              help="Source (tenant) to ingest into.")
@click.option("--uri", "stdin_uri", default="stdin", show_default=True, help="URI of the document read from '-'.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("--quiet", is_flag=True, help="No progress bar.")
@click.option("--bulk", is_flag=True, help="Rebuild vector indexes once at the end (automatic from 1,000 documents).")
@click.option("--allow-duplicates", is_flag=True,
              help="Store a document even when the source holds the same content under another URI (by default "
                   "it is skipped and named: the same file ingested from another directory).")
@pass_app
def ingest(app: AppContext, paths: tuple[str, ...], source: str, stdin_uri: str, as_json: bool, quiet: bool,
           bulk: bool, allow_duplicates: bool) -> None:
    """Ingest files, directories, JSONL corpora ({"id","title","text","metadata"} per line) or '-' (stdin).

    Read: .md, .markdown, .txt, .html and .htm (their text, markup stripped), .jsonl; a folder's other files
    are skipped, and counted on stderr. Unchanged documents are skipped; changed ones replaced atomically.
    Exit code 1 if any input failed.

    Example:

        sag-pg ingest docs/ notes.md corpus.jsonl --source research
    """
    inputs = read_inputs(paths, stdin=sys.stdin, stdin_uri=stdin_uri)  # a bad SAG_MAX_DOCUMENT_BYTES stops here
    sag = app.sag()
    err = Console(stderr=True)
    skipped = skipped_files(paths)
    if skipped:
        kinds = ", ".join(f"{n} {suffix}" for suffix, n in skipped.items())
        click.echo(f"sag-pg: skipped {sum(skipped.values())} files in the folders given that are not .md, .markdown, "
                   f".txt, .html, .htm or .jsonl ({kinds}): convert them to text or Markdown first", err=True)
    if sag.llm is None:
        err.print("[dim]sag-pg: no LLM configured (SAG_LLM): using the offline rule extractor[/dim]")
    expected = count_documents(paths)
    show = not quiet and not as_json and err.is_terminal
    log = PeriodicProgress(expected, every=PROGRESS_SECONDS) if not quiet and not as_json and not show else None
    with Progress(TextColumn("[bold]ingest"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.description}"),
                  TimeElapsedColumn(), console=err, disable=not show) as progress:
        task = progress.add_task("", total=expected)

        def on_document(status: str, what: str) -> None:
            if status == "note":  # not a document: what the ingest is doing (e.g. stopping after Ctrl-C)
                click.echo(f"sag-pg: {what}", err=True)
                return
            # Each failure once, as it happens: above the bar on a terminal, one plain line otherwise.
            if status == "failed":
                if show:
                    progress.console.print(f"[red]failed[/red] {escape(what)}", highlight=False)
                else:
                    click.echo(f"failed: {what}", err=True)
            progress.advance(task)
            if log is not None:
                log.note(status)

        report = sag.ingest(inputs, source=source, on_document=on_document, bulk=True if bulk else None,
                            allow_duplicates=allow_duplicates)
    for duplicate in report.duplicates:
        click.echo(f"skipped: {duplicate} (--allow-duplicates stores a copy)", err=True)
    if as_json:
        echo_json(report.to_dict())
    else:
        click.echo(
            f"{report.documents} documents, {report.chunks} chunks, {report.events} events, {report.keys} key links; "
            f"{report.skipped} unchanged, {report.failed} failed; {report.seconds:.1f} s"
            + (f"; tokens {report.prompt_tokens}+{report.completion_tokens}" if report.prompt_tokens else "")
        )
    if report.failed:
        sys.exit(1)


@click.command()
@click.argument("uri")
@click.option("--source", default="default", show_default=True, callback=source_name)
@pass_app
def delete(app: AppContext, uri: str, source: str) -> None:
    """Delete a document (and keys left with no event). URI is the document's URI as `sag-pg documents` lists it
    (for a file: its path relative to the folder it was ingested from, or the path given for a single file).

    Example:

        sag-pg delete notes/halvard.md --source research
    """
    if not app.sag().delete_document(uri, source=source):
        raise click.ClickException(f"no document {uri!r} in source {source!r}")
    click.echo(f"deleted {uri}")


@click.command()
@click.option("--json", "as_json", is_flag=True)
@pass_app
def sources(app: AppContext, as_json: bool) -> None:
    """List sources with their document, event and key counts.

    Example:

        sag-pg sources --json
    """
    rows = app.sag().sources()
    if as_json:
        echo_json(rows)
        return
    if not rows:
        click.echo("no sources yet: `sag-pg ingest FILE…` creates one (default: 'default'), `sag-pg demo` the "
                   "'demo' source")
    for row in rows:
        click.echo(f"{row['name']:<20} {row['documents']:>8} documents {row['events']:>9} events {row['keys']:>9} keys")


@click.command()
@click.option("--source", default=None, callback=source_name, help="Only this source.")
@click.option("--json", "as_json", is_flag=True)
@pass_app
def stats(app: AppContext, source: str | None, as_json: bool) -> None:
    """Counts of documents, chunks, events, keys (by type) and LLM tokens.

    Example:

        sag-pg stats --source default
    """
    data = app.sag().stats(source=source)
    if as_json:
        echo_json(data)
        return
    click.echo(f"documents {data['documents']}  chunks {data['chunks']}  events {data['events']}  keys {data['keys']}")
    click.echo("key types: " + ", ".join(f"{t} {n}" for t, n in data["key_types"].items()))
    if data["prompt_tokens"]:
        click.echo(f"LLM tokens: {data['prompt_tokens']} prompt + {data['completion_tokens']} completion")


@click.command("source")
@click.argument("name", callback=source_name)
@click.option("--key-type", "key_types", multiple=True, metavar="TYPE=WEIGHT",
              help="A key type the extractor may use, with its weight in SAG's retrieval (repeatable; replaces the "
              "list).")
@click.option("--dataflow-type-weight", "dataflow_weights", multiple=True, metavar="TYPE=WEIGHT",
              help="DataFlow's weight of an entity type (repeatable), over the seed's topic 1.5, action 1.2, "
              "person 1.1, location 1, tag 1, time 0.9.")
@click.option("--synonyms", type=click.Path(exists=True, dir_okay=False),
              help='JSON object {"alias": "canonical name", ...}: aliases converge on the canonical key; stored '
              "documents holding an alias are re-ingested so their keys merge too (see --no-apply).")
@click.option("--no-apply", is_flag=True, help="Keep stored keys as they are: the synonyms shape later ingests only.")
@click.option("--align-trigram", type=click.FloatRange(0, 1), help="Trigram similarity at which a new key joins an existing one.")
@click.option("--align-vector", type=click.FloatRange(-1, 1), help="Embedding similarity at which a new key joins an existing one.")
@click.option("--create", is_flag=True, help="Create the source if it does not exist (else that is an error).")
@click.option("--delete", is_flag=True, help="Delete the source with all its documents, events and keys.")
@click.option("--yes", is_flag=True, help="With --delete: do not ask (asked only on a terminal).")
@click.option("--aliases", "list_aliases", is_flag=True,
              help="List the keys linked as one entity under two names (derived at ingest from 'name (other "
              "name)', or added with --add-aliases); undone pairs are marked.")
@click.option("--add-aliases", type=click.Path(exists=True, dir_okay=False),
              help='JSON object {"name": "other name", ...}: link the keys of these names (any type).')
@click.option("--unalias", "unalias", multiple=True, metavar="NAME=OTHER",
              help="Undo a link between two keys (repeatable); ingestion does not derive it again.")
@click.option("--json", "as_json", is_flag=True, help="With --aliases: print JSON.")
@click.option("--reembed", is_flag=True, help="Re-embed the source's chunks, events and keys with the configured "
              "embedder (resumable; another embedder than the database's: see `sag-pg db reembed`).")
@pass_app
def source(app: AppContext, name: str, key_types: tuple[str, ...], dataflow_weights: tuple[str, ...],
           synonyms: str | None, no_apply: bool,
           align_trigram: float | None, align_vector: float | None, create: bool, delete: bool, yes: bool,
           list_aliases: bool, add_aliases: str | None, unalias: tuple[str, ...], as_json: bool,
           reembed: bool) -> None:
    """Show, change, create or delete a source (its key types, DataFlow's type weights, synonyms, key alignment,
    key aliases), or re-embed it.

    Example:

        sag-pg source research --create --key-type person=1 --key-type drug=1 --synonyms synonyms.json

        sag-pg source default --aliases
    """
    if reembed:
        if (key_types or dataflow_weights or synonyms or align_trigram is not None or align_vector is not None
                or create or delete):
            raise click.UsageError("--reembed takes no other setting")
        from .db import run_reembed

        run_reembed(app, (name,))
        return
    if list_aliases or add_aliases or unalias:
        from ._aliases import source_aliases

        source_aliases(app, name, list_aliases=list_aliases, add_file=add_aliases, unalias=unalias,
                       as_json=as_json)
        return
    if delete:
        if (key_types or dataflow_weights or synonyms or align_trigram is not None or align_vector is not None
                or create):
            raise click.UsageError("--delete takes no other setting")
        if not yes and sys.stdin.isatty():
            click.confirm(f"delete source {name!r} with all its documents?", abort=True)
        gone = app.sag().delete_source(name)
        click.echo(f"deleted source {name}: {gone['documents']} documents, {gone['chunks']} chunks, "
                   f"{gone['events']} events, {gone['keys']} keys")
        return
    types = _type_weights(key_types, "--key-type") if key_types else None
    dataflow_types = _type_weights(dataflow_weights, "--dataflow-type-weight") if dataflow_weights else None
    table = _synonym_table(synonyms) if synonyms else None
    alignment = {k: v for k, v in (("trigram", align_trigram), ("vector", align_vector)) if v is not None} or None
    sag = app.sag()
    config = sag.configure_source(name, key_types=types, synonyms=table, alignment=alignment, create=create,
                                  dataflow_type_weights=dataflow_types)
    reingested = sag.apply_synonyms(name) if table and not no_apply else []
    if table:
        click.echo(f"synonyms: {len(table)} aliases; " + (
            "stored keys unchanged (--no-apply): they apply to documents ingested from now on" if no_apply else
            f"re-ingested {len(reingested)} stored documents holding an alias, so their keys merged") + "; "
            "a question naming an alias is searched with its canonical name added", err=True)
    echo_json({"source": name, "config": config})


def _synonym_table(path: str) -> dict[str, str]:
    from ..synonyms import read_synonyms

    return read_synonyms(path)  # InputError naming the file and the entry: one line, exit code 1


def _type_weights(items: tuple[str, ...], option: str) -> dict[str, float]:
    """TYPE=WEIGHT items as a dict (a missing weight is 1)."""
    types: dict[str, float] = {}
    for item in items:
        type_name, _, weight = item.partition("=")
        try:
            types[type_name.strip()] = float(weight or 1.0)
        except ValueError:
            raise click.BadParameter(f"{item!r}: expected TYPE=WEIGHT", param_hint=option) from None
    return types

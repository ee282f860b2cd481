"""`sag-pg db …`: where the database is, its schema, its state."""

from __future__ import annotations

from pathlib import Path

import click

from ._common import AppContext, echo_json, pass_app


@click.group()
def db() -> None:
    """Manage the database: url, psql, status, upgrade, repair, reembed, dump, restore, stop; a Citus cluster.

    Example:

        psql "$(sag-pg db url)"
    """


@db.command()
@pass_app
def url(app: AppContext) -> None:
    """Print the connection URL (starting the embedded server if needed).

    Example:

        psql "$(sag-pg db url)" -c '\\dt sag.*'
    """
    from ..db.connection import resolve_dsn  # the database modules are imported by the commands that use them

    click.echo(resolve_dsn(app.settings))


@db.command()
@click.option("--distributed/--no-distributed", default=None,
              help="On a Citus coordinator the schema is distributed by source (the default there); "
                   "--distributed refuses a database that is not one, --no-distributed leaves the tables "
                   "on the coordinator.")
@pass_app
def upgrade(app: AppContext, distributed: bool | None) -> None:
    """Create or upgrade the schema (safe to run again, and concurrently).

    On a Citus coordinator the per-source tables are then distributed by source over the workers, sources and
    settings become reference tables, and one-source functions run on the worker holding the source.

    Example:

        sag-pg db upgrade
    """
    from ..db import migrate
    from ..db.connection import redact, resolve_dsn

    dsn = resolve_dsn(app.settings)
    head = migrate.upgrade(dsn, distributed=distributed)
    click.echo(f"schema at revision {head} in {redact(dsn)}")


# The embedder's reliability (sag_internal._embedder_reliability) under which `db status` warns: 0.98-1 for
# models that know the corpus's language, 0.93 for multilingual-e5-small on Chinese, 0.74 for all-MiniLM-L6-v2
# (English) on Chinese.
_RELIABLE = 0.85


@db.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_app
def status(app: AppContext, as_json: bool) -> None:
    """Show server and pgvector versions, schema revision, embedder, its calibration per source and row counts.

    Example:

        sag-pg db status --json
    """
    from ..client import status_of
    from ..db import embedded

    info = status_of(app.settings)
    info["location"] = "external" if app.settings.database_url else str(embedded.pgdata_dir(app.settings.home))
    if as_json:
        echo_json(info)
        return
    click.echo(f"PostgreSQL  {info['server_version']}  ({info['location']})")
    click.echo(f"pgvector    {info['pgvector_version'] or 'not installed (available: %s)' % info['pgvector_available']}")
    state = info["schema_state"]
    revision = info["schema_revision"] or "none"
    hint = {"empty": " — run `sag-pg db upgrade`", "behind": " — run `sag-pg db upgrade`"}.get(state, "")
    click.echo(f"schema      revision {revision} ({state}; code at {info['schema_head']}){hint}")
    embedder = info["embedder"]
    click.echo(f"embedder    {embedder['name'] + ' (dim %s)' % embedder['dimension'] if embedder else 'not bound yet'}")
    for c in info.get("calibration", []):
        # Below 0.85 (an English model on Chinese measured 0.74, a multilingual one 0.93): say so, since the
        # retrieval then leans on the words and a model that knows the language would do better.
        doubt = (" — it finds passages from their own sentences less well than the words do; is it made for "
                 "this language?") if c["reliability"] < _RELIABLE else ""
        click.echo(f"calibrated  {c['source']}: chance cosine {c['chance_cosine']:.2f}, lexical redundancy "
                   f"{c['lexical_redundancy']:.2f}, reliability {c['reliability']:.2f}{doubt}")
    for table, count in info["counts"].items():
        click.echo(f"{table:<11} {count}")
    _echo_missing_indexes(info.get("missing_vector_indexes") or [])
    if info.get("reembed"):
        run = info["reembed"]
        click.echo(f"reembed     unfinished: to {run['name']} (dimension {run['dimension']}), started "
                   f"{run['started_at']} — continue it with `sag-pg db reembed` and that embedder")
    if info.get("citus"):
        _echo_citus(info["citus"])


def _echo_citus(citus: dict) -> None:  # type: ignore[type-arg]
    """The Citus part of `db status`: nodes with their sag shards and bytes, and where each source lives."""
    state = "distributed by source" if citus["distributed"] else "not distributed yet — run `sag-pg db upgrade`"
    click.echo(f"citus       {citus['citus_version']}, schema {state}")
    for n in citus["nodes"]:
        role = "coordinator" if n["group"] == 0 else "worker"
        flags = "" if n["active"] else " (inactive)"
        click.echo(f"node        {n['name']}:{n['port']} {role}{flags}: {n['shards']} shards, "
                   f"{n['bytes'] / 1e6:.1f} MB")
    for s in citus["sources"]:
        click.echo(f"source      {s['source']}: on {s['node']}, shard group {s['shard']} "
                   f"({s['group_bytes'] / 1e6:.1f} MB, shared with the sources hashed alike)")


def _echo_missing_indexes(missing: list[str]) -> None:
    """`db status`'s line about missing HNSW indexes (issue #37 item 9), with how to rebuild them."""
    if missing:
        click.echo(f"indexes     {len(missing)} of 3 HNSW vector indexes missing ({', '.join(missing)}): searches "
                   "scan every vector meanwhile — a bulk load is running or was interrupted; rebuild them with "
                   "`sag-pg db repair` (the next ingest also does)")


@db.command()
@pass_app
def repair(app: AppContext) -> None:
    """Rebuild the HNSW vector indexes an interrupted bulk load left missing (the next ingest does it too).

    Example:

        sag-pg db repair
    """
    from ..db import ingest as store
    from ..db.connection import Database

    database = Database.from_settings(app.settings)
    with database.connect(autocommit=True) as conn:
        missing = store.missing_vector_indexes(conn)
        if missing == 0:
            click.echo("no vector index missing")
            return
        click.echo(f"rebuilding {missing} HNSW vector index(es)…", err=True)
        built = store.repair_vector_indexes(conn)
        left = store.missing_vector_indexes(conn)
    if left:
        raise click.ClickException(f"built {built}; {left} still missing: a bulk load is running and builds them "
                                   "when it ends")
    click.echo(f"built {built} vector index(es)")


@db.command()
@pass_app
def stop(app: AppContext) -> None:
    """Stop the embedded server (it starts again on the next command).

    Example:

        sag-pg db stop
    """
    if app.settings.database_url:
        raise click.UsageError("an external database (SAG_DATABASE_URL / --dsn) is not ours to stop")
    from ..db import embedded

    orphan = embedded.orphan_postmaster(app.settings.home)
    stopped = embedded.stop_server(app.settings.home)
    if orphan is not None:
        click.echo(f"stopped (pid {orphan}: it was still running although its postmaster.pid had been deleted)")
        return
    click.echo("stopped" if stopped else "not running")


@db.command()
@click.argument("file", type=click.Path(dir_okay=False, writable=True, path_type=Path))
@pass_app
def dump(app: AppContext, file: Path) -> None:
    """Back up the knowledge base into FILE with the bundled pg_dump (sag-pg's schemas only, custom format).

    Works for the embedded server and a SAG_DATABASE_URL server alike (a system pg_dump older than the server
    refuses it).  Restore with `sag-pg db restore FILE`.

    Example:

        sag-pg db dump kb.dump
    """
    from ..db import backup
    from ..db.connection import resolve_dsn

    size = backup.dump(resolve_dsn(app.settings), file)
    click.echo(f"dumped to {file} ({size / 1e6:.1f} MB)")


@db.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--replace", is_flag=True, help="Replace the sag schema the database already has (default: refuse).")
@pass_app
def restore(app: AppContext, file: Path, replace: bool) -> None:
    """Restore a `sag-pg db dump` FILE with the bundled pg_restore, in one transaction.

    The database (a new SAG_HOME, or an empty SAG_DATABASE_URL database) must have no sag schema yet, unless
    --replace.  The HNSW indexes are rebuilt as part of the restore; a dump of an older sag-pg is upgraded.

    Example:

        SAG_HOME=~/.sag-pg-copy sag-pg db restore kb.dump
    """
    from ..db import backup
    from ..db.connection import redact, resolve_dsn

    dsn = resolve_dsn(app.settings)
    click.echo(f"restoring {file} into {redact(dsn)} (the vector indexes are rebuilt: a while for large ones)…",
               err=True)
    done = backup.restore(dsn, file, replace=replace)
    upgraded = f"; schema upgraded to {done.upgraded_to}" if done.upgraded_to else ""
    click.echo(f"restored (schema revision {done.revision}{upgraded})")


@db.command()
@click.option("--source", "sources", multiple=True, help="Only this source (repeatable): for recomputing one source's "
              "vectors with the bound embedder; another embedder re-embeds every source. Default: every source.")
@click.option("--batch", type=click.IntRange(1, 10000), default=256, show_default=True,
              help="Texts per embedding call (and per transaction).")
@pass_app
def reembed(app: AppContext, sources: tuple[str, ...], batch: int) -> None:
    """Re-embed chunks, events and keys with the configured embedder (SAG_EMBEDDER / --embedder).

    Switches a database made with one embedder to another (another dimension too): the new embedder is bound
    at once, the vectors are computed in batches with progress on stderr, and the HNSW indexes are built at the
    end.  Interrupted, it keeps what it did: run it again with the same embedder to continue.

    Example:

        SAG_EMBEDDER=openai:multilingual-e5-small-q4 sag-pg db reembed
    """
    run_reembed(app, sources, batch)


def run_reembed(app: AppContext, sources: tuple[str, ...], batch: int = 256) -> None:
    """`db reembed` and `source NAME --reembed`: re-embed with the configured embedder, progress on stderr."""
    from ..db import catalog
    from ..db import reembed as runner
    from ..db.connection import Database
    from ..embedders import make_embedder
    from ..errors import NotFoundError

    database = Database.from_settings(app.settings)
    embedder = make_embedder(app.settings.embedder, app.settings)  # not bound: it may be another one
    ids = None
    if sources:
        with database.connect(autocommit=True) as conn:
            found = {name: catalog.source_id(conn, name) for name in sources}
        missing = [name for name, sid in found.items() if sid is None]
        if missing:
            raise NotFoundError(f"no source named {missing[0]!r}")
        ids = [int(sid) for sid in found.values() if sid is not None]
    report = runner.reembed(database, embedder, source_ids=ids, batch=batch,
                            progress=lambda line: click.echo(line, err=True))
    counts = ", ".join(f"{n:,} {table}" for table, n in report.embedded.items())
    click.echo(f"re-embedded {counts} with {report.embedder} in {report.seconds:.1f} s"
               + (" (resumed)" if report.resumed else ""))


@db.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("-c", "--command", "sql_command", metavar="CMD", help="Run this one command (SQL or a psql "
              "backslash command) and stop; sag-pg fails when it fails.")
@click.argument("psql_args", nargs=-1, type=click.UNPROCESSED)
@pass_app
def psql(app: AppContext, sql_command: str | None, psql_args: tuple[str, ...]) -> None:
    """Open the bundled psql on the database (no PostgreSQL client needed); extra arguments go to psql.

    Example:

        sag-pg db psql -c "select document, score from sag.search('Who founded Pixar?', source => 'demo')"
    """
    import signal
    import subprocess

    from ..db import backup
    from ..db.connection import resolve_dsn

    args = backup.psql_args(resolve_dsn(app.settings), sql_command, psql_args)
    # Ctrl-C belongs to psql (it cancels the running query); sag-pg waits for psql to end.
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        code = subprocess.call(args)
    finally:
        signal.signal(signal.SIGINT, previous)
    if code:
        raise click.exceptions.Exit(1 if code in (1, 3) else code)


@db.group()
def cluster() -> None:
    """A local Citus cluster (coordinator + workers) for development and tests: start, url, status, stop.

    Example:

        sag-pg db cluster start --citus-source citus-14.0.1.tar.gz && psql "$(sag-pg db cluster url)"
    """


@cluster.command("start")
@click.option("--workers", type=click.IntRange(min=2, max=64), help="Workers of a new cluster (default 2; an existing "
              "cluster keeps its own).")
@click.option("--citus-source", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              envvar="SAG_CITUS_SOURCE", help="Citus source tarball to build from (only needed for the first "
              "build). Env: SAG_CITUS_SOURCE.")
@click.option("--cache", type=click.Path(file_okay=False, path_type=Path), envvar="SAG_CITUS_CACHE",
              help="Where Citus builds are kept (default: the user's cache directory). Env: SAG_CITUS_CACHE.")
@pass_app
def cluster_start(app: AppContext, workers: int | None, citus_source: Path | None, cache: Path | None) -> None:
    """Build Citus once, start a coordinator and its workers under the data directory, print the URL.

    Example:

        export SAG_DATABASE_URL="$(sag-pg db cluster start --citus-source citus-14.0.1.tar.gz)"
    """
    from ..db import citus_build, citus_local

    def progress(line: str) -> None:
        click.echo(line, err=True)

    started = citus_local.start(app.settings.home, cache=cache or citus_build.default_cache(),
                                source=citus_source, workers=workers, progress=progress)
    click.echo(f"coordinator and {len(started.workers)} workers running (stop: sag-pg db cluster stop)", err=True)
    click.echo(started.url())


@cluster.command("url")
@pass_app
def cluster_url(app: AppContext) -> None:
    """Print the running cluster's coordinator URL.

    Example:

        SAG_CITUS_DATABASE_URL="$(sag-pg db cluster url)" pytest -m citus
    """
    from ..db import citus_local

    click.echo(citus_local.url(app.settings.home))


@cluster.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_app
def cluster_status(app: AppContext, as_json: bool) -> None:
    """Show every node: port, whether it runs, whether the coordinator sees it active, its shard placements.

    Example:

        sag-pg db cluster status
    """
    from ..db import citus_local

    rows = citus_local.status(app.settings.home)
    if as_json:
        echo_json(rows)
        return
    for row in rows:
        click.echo(f"{row['name']:<12} port {row['port']:<6} {'running' if row['running'] else 'stopped':<8} "
                   f"{'active' if row['active'] else 'inactive':<8} {row['shards']} shards")


@cluster.command("add-worker")
@pass_app
def cluster_add_worker(app: AppContext) -> None:
    """Start one more worker and add it to the coordinator; shards move to it at the next rebalance.

    Example:

        sag-pg db cluster add-worker && psql "$(sag-pg db cluster url)" -c 'select citus_rebalance_start()'
    """
    from ..db import citus_local

    node = citus_local.add_worker(app.settings.home, progress=lambda line: click.echo(line, err=True))
    click.echo(f"{node.name} added on port {node.port}")


@cluster.command("remove-worker")
@click.argument("name")
@pass_app
def cluster_remove_worker(app: AppContext, name: str) -> None:
    """Move a worker's shards to the others, remove it from the cluster and delete its data.

    Example:

        sag-pg db cluster remove-worker worker3
    """
    from ..db import citus_local

    citus_local.remove_worker(app.settings.home, name, progress=lambda line: click.echo(line, err=True))
    click.echo(f"{name} removed")


@cluster.command("stop")
@pass_app
def cluster_stop(app: AppContext) -> None:
    """Stop every node of the cluster (its data stays; `start` starts it again without rebuilding).

    Example:

        sag-pg db cluster stop
    """
    from ..db import citus_local

    stopped = citus_local.stop(app.settings.home)
    click.echo(f"stopped {', '.join(stopped)}" if stopped else "not running")

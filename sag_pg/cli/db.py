"""`sag-pg db …`: where the database is, its schema, its state."""

from __future__ import annotations

import click

from ._common import AppContext, echo_json, pass_app


@click.group()
def db() -> None:
    """Manage the database: url, status, upgrade, stop.

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
@pass_app
def upgrade(app: AppContext) -> None:
    """Create or upgrade the schema (safe to run again, and concurrently).

    Example:

        sag-pg db upgrade
    """
    from ..db import migrate
    from ..db.connection import redact, resolve_dsn

    dsn = resolve_dsn(app.settings)
    head = migrate.upgrade(dsn)
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

"""The root `sag-pg` group and its global options."""

from __future__ import annotations

import logging
from pathlib import Path

import click

from .. import __version__
from ..config import Settings
from ..errors import ConfigError
from ._common import AppContext


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, "--version", prog_name="sag-pg")
@click.option("--dsn", envvar="SAG_DATABASE_URL", help="PostgreSQL (>= 15, with pgvector) to use instead of "
              "the embedded server. Env: SAG_DATABASE_URL.")
@click.option("--home", type=click.Path(path_type=Path), envvar="SAG_HOME",
              help="Where the embedded server keeps its data. Env: SAG_HOME.")
@click.option("--embedder", envvar="SAG_EMBEDDER", help="hash (default), hash:DIM, openai:MODEL or st:PATH.")
@click.option("--llm", envvar="SAG_LLM", help="openai:MODEL for any OpenAI-compatible endpoint "
              "(SAG_LLM_BASE_URL, SAG_LLM_API_KEY). Without it, the offline rule extractor is used.")
@click.option("--debug", is_flag=True, help="Show tracebacks and debug logs.")
@click.option("-v", "--verbose", is_flag=True, help="Say at the end which structured output the LLM's JSON requests "
              "used (json_schema, json_object or none).")
@click.pass_context
def cli(ctx: click.Context, dsn: str | None, home: Path | None, embedder: str | None, llm: str | None,
        debug: bool, verbose: bool) -> None:
    """sag-pg: documents in, answers with their evidence out — retrieval that lives in PostgreSQL.

    Exit codes: 0 done; 1 an error, printed as one "Error:" line (--debug shows the traceback), or an input
    that failed in ingest or kg import; 2 a usage error (an unknown option, a number out of range); 130
    interrupted.

    Example:

        sag-pg demo
    """
    if debug:
        logging.basicConfig(level=logging.DEBUG)
    try:
        settings = Settings.from_env(database_url=dsn, home=home, embedder=embedder, llm=llm)
    except (TypeError, ValueError) as exc:  # e.g. SAG_LLM_TIMEOUT=abc
        raise ConfigError(f"a SAG_* setting has a bad value: {exc}") from exc
    ctx.obj = AppContext(settings=settings, debug=debug, verbose=verbose)

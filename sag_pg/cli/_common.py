"""Shared CLI plumbing: the context object, JSON output, and turning errors into one line."""

from __future__ import annotations

import sys
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import click

from ..config import Settings
from ..errors import SagError, user_error
from ..limits import INT4_MAX, MAX_TOP_N

# The numbers an option takes: a value outside the range is a usage error naming the option (exit code 2)
# before anything runs.  No option takes more than a PostgreSQL integer (sag_pg.limits).
TOP_N = click.IntRange(1, MAX_TOP_N)
SEED = click.IntRange(0, INT4_MAX)


def count(low: int = 1, high: int = INT4_MAX) -> click.IntRange:
    """A whole number from ``low`` to ``high`` (at most 2**31 - 1)."""
    return click.IntRange(low, min(high, INT4_MAX))


@dataclass
class AppContext:
    settings: Settings
    debug: bool = False
    verbose: bool = False
    _sag: Any = field(default=None, repr=False)

    def sag(self) -> Any:
        """The library client, created on first use (starting the embedded server if needed)."""
        if self._sag is None:
            from ..client import SAG

            self._sag = SAG(settings=self.settings)
            # The client keeps connections between searches: closed with the command, not left to the
            # garbage collector (which may finalise them before the client and warn about open connections).
            ctx = click.get_current_context(silent=True)
            if ctx is not None:
                ctx.find_root().call_on_close(self.close)
        return self._sag

    def close(self) -> None:
        if self._sag is not None:
            if self.verbose:
                report_llm(self._sag.llm)
            self._sag.close()


def report_llm(llm: Any) -> None:
    """``--verbose``: which structured-output mode the LLM's JSON requests used (json_schema, json_object, none)."""
    report = getattr(llm, "structured_output_report", None)
    if llm is None:
        click.echo("sag-pg: no LLM configured (SAG_LLM)", err=True)
    elif callable(report):
        click.echo(f"sag-pg: {report()}", err=True)
    else:
        click.echo(f"sag-pg: LLM {getattr(llm, 'name', llm)!s}", err=True)


pass_app = click.make_pass_decorator(AppContext)


def source_name(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """Click callback: a source name must have a visible character (the database refuses '' anyway)."""
    if value is not None and not value.strip():
        raise click.BadParameter("a source name must not be empty")
    return value


def echo_json(data: Any) -> None:
    """``--json``: the one JSON form of sag-pg's results (sag_pg.serialize, also the HTTP API's)."""
    from ..serialize import dumps

    click.echo(dumps(data))


def run_main(cli: click.Group, argv: Sequence[str] | None) -> int:
    """Run the click group; library errors become one red line and exit code 1 (traceback with --debug).

    Out of standalone mode click does not raise ``Exit``: ``main`` returns its code (``ctx.exit(1)``, ``raise
    click.exceptions.Exit(1)`` in a command), so the return value is the exit code when it is an int.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        code = cli.main(args=args, prog_name="sag-pg", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        return 130
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except SagError as exc:
        return _report(exc, args)
    except Exception as exc:
        error = user_error(exc)
        if error is None:
            raise
        return _report(error, args)
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        return 130
    return code if isinstance(code, int) and not isinstance(code, bool) else 0


def _report(exc: BaseException, args: list[str]) -> int:
    if "--debug" in args:
        traceback.print_exc()
    click.secho(f"Error: {exc}", fg="red", err=True)
    return 1



def refuse_source_with_all_sources(all_sources: bool, param: str = "source") -> None:
    """``--source`` given on the command line together with ``--all-sources``: one usage error, not a silent
    choice of one of them (issue #37: `communities build --source X --all-sources` ran over everything)."""
    ctx = click.get_current_context()
    given = ctx.get_parameter_source(param) in (click.core.ParameterSource.COMMANDLINE,
                                                click.core.ParameterSource.ENVIRONMENT)
    if all_sources and given:
        raise click.UsageError("--source and --all-sources contradict each other: give one of them")


def require_pinned_sources(sag: Any, sources: tuple[str, ...], allow_writes: bool) -> None:
    """A read-only server (MCP, HTTP) pinned to a source that does not exist would serve nothing: say so."""
    if sources and not allow_writes:
        from ..errors import NotFoundError

        known = [s["name"] for s in sag.sources()]
        missing = [s for s in sources if s not in known]
        if missing:
            raise NotFoundError(f"no source named {missing[0]!r}; sources: {', '.join(known) or 'none yet'}")

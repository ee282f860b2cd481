"""`sag-pg ask`: a question answered from the knowledge base, with the chunks it cites."""

from __future__ import annotations

import textwrap
from typing import Any

import click
from click.core import ParameterSource
from rich.console import Console
from rich.markup import escape

from ._common import TOP_N, AppContext, count, echo_json, pass_app, refuse_source_with_all_sources


@click.command()
@click.argument("question")
@click.option("--mode", type=click.Choice(["fast", "normal", "deep", "local", "global", "drift", "extractive"]),
              default="fast",
              show_default=True, help="fast: search, then answer. normal: the LLM rewrites the question first. "
              "deep: a plan of sub-questions, searched step by step (see --max-rounds). local, global, drift: "
              "GraphRAG over the community reports (`sag-pg communities build` first).")
@click.option("--source", "sources", multiple=True, help="Source to search (repeatable). Default: default.")
@click.option("--all-sources", is_flag=True, help="Search every source.")
@click.option("--top-n", type=TOP_N, default=10, show_default=True,
              help="Chunks the answer is written from.")
@click.option("--max-rounds", type=count(1), default=3, show_default=True,
              help="Deep mode: plans (the first and the ReAct re-plans).")
@click.option("--max-llm-calls", type=count(2), default=30, show_default=True,
              help="Deep mode: LLM calls in all.")
@click.option("--level", type=count(0), default=None,
              help="global, drift: the community level whose reports are read (0 = the coarsest; "
              "`sag-pg communities list` shows the levels). Default: GraphRAG's 2, or the deepest level there is.")
@click.option("--history", "history_file", type=click.Path(exists=True, dir_okay=False), default=None,
              help='local, global, drift: the conversation so far, a JSON file [{"role": "user" | "assistant", '
              '"content": "..."}]; its last 5 questions go before the context.')
@click.option("--general-knowledge", is_flag=True,
              help="global: the answer may add real-world knowledge outside the data, tagged [LLM: verify].")
@click.option("--json", "as_json", is_flag=True, help="Print the answer, citations, evidence (and trace) as JSON.")
@click.option("--quiet", is_flag=True, help="Deep mode: print the answer without the trace.")
@pass_app
def ask(app: AppContext, question: str, mode: str, sources: tuple[str, ...], all_sources: bool, top_n: int,
        max_rounds: int, max_llm_calls: int, level: int | None, history_file: str | None, general_knowledge: bool,
        as_json: bool, quiet: bool) -> None:
    """Answer a question from the knowledge base, citing the chunks it used (needs SAG_LLM).

    Example:

        sag-pg ask "When was the iPhone unveiled?" --source demo --mode deep
    """
    from ..answer import print_trace

    if mode != "deep":
        given = [f"--{name.replace('_', '-')}" for name in ("max_rounds", "max_llm_calls", "quiet")
                 if click.get_current_context().get_parameter_source(name) is ParameterSource.COMMANDLINE]
        if given:
            raise click.UsageError(f"{', '.join(given)}: only with --mode deep")
    if level is not None and mode not in ("global", "drift"):
        raise click.UsageError("--level: only with --mode global or drift")
    if history_file is not None and mode not in ("local", "global", "drift"):
        raise click.UsageError("--history: only with --mode local, global or drift")
    if general_knowledge and mode != "global":
        raise click.UsageError("--general-knowledge: only with --mode global")
    refuse_source_with_all_sources(all_sources, "sources")
    source: list[str] | None = None if all_sources else (list(sources) or ["default"])
    deep: dict[str, Any] = {"max_rounds": max_rounds, "max_llm_calls": max_llm_calls} if mode == "deep" else {}
    if level is not None or general_knowledge:
        from ..graphrag import DriftParams, GlobalParams

        deep["params"] = (GlobalParams(level=level, allow_general_knowledge=general_knowledge) if mode == "global"
                          else DriftParams(level=level))
    if history_file is not None:
        from ..graphrag.history import load_history

        deep["history"] = load_history(history_file)
    answer = app.sag().ask(question, mode=mode, source=source, top_n=top_n, **deep)
    if as_json:
        echo_json(answer.to_dict())
        return
    console = Console()
    trace = getattr(answer, "trace", None)
    if trace is not None and not quiet:
        print_trace(console, trace)
        console.print()
    print_answer(console, answer)


def print_answer(console: Console, answer: Any) -> None:
    """The answer, a warning when the evidence falls short, the cited chunks and any notes (an extractive
    answer says what it is first)."""
    notes = list(answer.notes)
    if answer.mode == "extractive" and notes:
        console.print(f"[yellow]{escape(notes.pop(0))}[/yellow]", highlight=False)
    console.print(escape(answer.text), highlight=False)
    if not answer.sufficient:
        missing = f": {answer.missing}" if answer.missing else ""
        console.print(f"[yellow]insufficient evidence{escape(missing)}[/yellow]", highlight=False)
    if answer.citations:
        console.print("\n[bold]sources[/bold]")
        for cited in answer.citations:
            title = textwrap.shorten(cited.title or cited.document_title or "", width=80, placeholder=" …")
            console.print(f"  [cyan]\\[{cited.chunk_id}][/cyan] {escape(cited.document_uri)}  {escape(title)}",
                          highlight=False)
    for note in notes:
        console.print(f"[dim]note: {escape(note)}[/dim]", highlight=False)
    usage = answer.usage
    if usage:
        console.print(f"[dim]{answer.mode} mode · {usage.get('calls', 0)} LLM requests · "
                      f"{usage.get('prompt_tokens', 0)} + {usage.get('completion_tokens', 0)} tokens[/dim]",
                      highlight=False)

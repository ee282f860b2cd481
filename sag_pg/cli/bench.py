"""`sag-pg bench` (retrieval quality and latency against baselines) and `sag-pg bench-scale` (synthetic scale)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..config import Settings
from ..errors import ConfigError
from ..limits import INT4_MAX, MAX_TOP_N
from ._common import SEED, AppContext, count, echo_json

DEFAULT_METHODS = "sag,bm25,dense,hybrid"


def _app(ctx: click.Context) -> AppContext:
    """The root group's context object, or one from the environment (``benchmarks/scale.py`` runs the
    command on its own)."""
    app = ctx.find_object(AppContext)
    return app if app is not None else AppContext(settings=Settings.from_env())


def _int_list(high: int) -> Callable[[click.Context, click.Parameter, str], list[int]]:
    """Click callback: comma-separated whole numbers from 1 to ``high``, sorted and deduplicated."""

    def parse(ctx: click.Context, param: click.Parameter, value: str) -> list[int]:
        try:
            numbers = [int(v.replace("_", "")) for v in value.split(",") if v.strip()]
        except ValueError:
            raise click.BadParameter(f"expected comma-separated whole numbers, got {value!r}") from None
        if not numbers or min(numbers) < 1 or max(numbers) > high:
            raise click.BadParameter(f"expected numbers from 1 to {high:,}, got {value!r}")
        return sorted(set(numbers))

    return parse


@contextmanager
def _progress(enabled: bool, label: str) -> Iterator[Callable[[str, int, int], None]]:
    """A (what, done, total) callback: a rich bar on a terminal, one stderr line per stage otherwise."""
    err = Console(stderr=True)
    if not enabled:
        yield lambda what, done, total: None
        return
    if not err.is_terminal:
        last: list[str] = []

        def line(what: str, done: int, total: int) -> None:
            if not last or last[-1] != what:
                last.append(what)
                click.echo(f"{label}: {what}…", err=True)

        yield line
        return
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err, transient=True) as bar:
        task = bar.add_task(label, total=None)

        def update(what: str, done: int, total: int) -> None:
            bar.update(task, description=f"{label}: {what}", completed=done, total=total)

        yield update


@click.command()
@click.argument("dirs", nargs=-1, required=True,
                type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--methods", default=DEFAULT_METHODS, show_default=True,
              help="Comma-separated: sag (SAG fast search), sag-seed (the same with the seed profile: "
                   "sag-algorithm's formulas as written), dataflow, bm25, dense, hybrid (SQL baselines).")
@click.option("--k", "ks", default="2,5,10", show_default=True, callback=_int_list(MAX_TOP_N),
              help="Recall@k cut-offs, comma-separated; every method returns max(k) chunks.")
@click.option("--embedder", help="Embedder for the benchmark databases (default: the global --embedder).")
@click.option("--extractor", help="rules (the offline rule extractor) or openai:MODEL (LLM extraction, as the "
                                  "global --llm); default: the global --llm, else rules.")
@click.option("--limit", type=count(1), help="Only the first N questions of each dataset.")
@click.option("--keep", is_flag=True, help="Keep the benchmark databases instead of dropping them.")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
@click.option("--plot", type=click.Path(dir_okay=False, path_type=Path),
              help="Draw Recall@k per method into this image (needs: pip install 'sag-pg[plot]').")
@click.option("--quiet", is_flag=True, help="No progress output.")
@click.pass_context
def bench(ctx: click.Context, dirs: tuple[Path, ...], methods: str, ks: list[int], embedder: str | None,
          extractor: str | None, limit: int | None, keep: bool, as_json: bool, plot: Path | None,
          quiet: bool) -> None:
    """Recall@k and latency of SAG against BM25, dense and hybrid retrieval on benchmark folders.

    Each DIR holds corpus.jsonl and queries.jsonl (gold: groups of passage ids). Each is ingested into a
    fresh database sag_bench_<name>_<pid> on the configured server (dropped afterwards unless --keep);
    every question then runs through every method. Recall@k counts a gold group as found when one of its
    passages is among the first k distinct documents; latency is per question, around the call.

    Example:

        sag-pg bench /work/shared/bench/musique-train100 /work/shared/bench/hotpotqa-train100 --json
    """
    from ..bench import load_dataset, run_dataset
    from ..bench.methods import parse_methods
    from ..bench.report import format_dataset, plot_recall, require_matplotlib, to_json
    from ..llm import make_llm

    app = _app(ctx)
    chosen = parse_methods(methods)
    if plot is not None:
        try:
            require_matplotlib()  # before an hour of work, not after
        except ConfigError as exc:
            raise click.ClickException(str(exc)) from None
    settings = app.settings.with_(embedder=embedder)
    if extractor is not None:
        settings = replace(settings, llm=None if extractor.strip().lower() == "rules" else extractor)
        try:
            make_llm(settings)  # a malformed name fails here, before any ingest
        except ConfigError as exc:
            raise click.BadParameter(f"{exc} (or 'rules')", param_hint="--extractor") from None
    datasets = [load_dataset(d, limit=limit) for d in dirs]
    results = []
    for dataset in datasets:
        with _progress(not (quiet or as_json), dataset.name) as progress:
            result = run_dataset(settings, dataset, methods=chosen, ks=ks, keep=keep, progress=progress)
        results.append(result)
        if not as_json:
            click.echo(format_dataset(result, ks) + "\n")
        for message in result.errors[:5]:
            click.echo(f"failed: {message}", err=True)
    if as_json:
        echo_json(to_json(results))
    if plot is not None:
        click.echo(f"plot: {plot_recall(results, ks, plot)}", err=True)


@click.command("bench-scale")
@click.option("--events", "sizes", default="10000,100000", show_default=True, callback=_int_list(INT4_MAX),
              help="Corpus sizes in events, comma-separated (each in its own fresh database).")
@click.option("--dim", type=click.IntRange(1, 4000), default=512, show_default=True,
              help="Embedding dimension (512 = the default hash embedder).")
@click.option("--queries", type=count(1), default=50, show_default=True,
              help="Questions timed per size (after 10 warm-up questions).")
@click.option("--seed", type=SEED, default=7, show_default=True, help="Seed of the synthetic corpus.")
@click.option("--sources", type=click.IntRange(1, 10_000), default=1, show_default=True,
              help="Split the corpus over this many sources (own documents, events and keys each); every "
                   "search then asks one source, round-robin.")
@click.option("--workers", type=click.IntRange(1, 16), default=2, show_default=True,
              help="Connections loading batches side by side.")
@click.option("--spool-dir", type=click.Path(exists=True, file_okay=False, writable=True, path_type=Path),
              help="Where the generated corpus is written before the load (default: the system's temporary "
                   "directory; ~3.5 GB at 1 M events and dimension 512).")
@click.option("--keep", is_flag=True, help="Keep the databases instead of dropping them.")
@click.option("--strategy", type=click.Choice(["sag", "dataflow"]), default="sag", show_default=True,
              help="The search timed: SAG's retrieval or DataFlow activation.")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
@click.option("--quiet", is_flag=True, help="No progress output.")
@click.pass_context
def bench_scale(ctx: click.Context, sizes: list[int], dim: int, queries: int, seed: int, sources: int, workers: int,
                spool_dir: Path | None, keep: bool, strategy: str, as_json: bool, quiet: bool) -> None:
    """Bulk-load a synthetic corpus (Zipf key popularity) and time fast search against plain HNSW.

    Per size: the corpus is generated into COPY files first (timed apart), then the bulk-load rate
    (binary COPY of those files, indexes built afterwards), database size, fast-search
    p50/p95, the p50/p95 of one pgvector HNSW top-10 query on events (the floor) and their ratio, and
    the peak memory of this process. Targets: p50 <= 50 ms at 1 M events, ratio <= 10x (<= 6x at 10 k
    events), >= 20k events/s. With --sources N the corpus is split over N sources and every search asks one
    of them; on a Citus coordinator (SAG_DATABASE_URL) the database is made on every node and distributed,
    and the size is reported per node.

    Example:

        sag-pg bench-scale --events 10000,100000 --json
        SAG_DATABASE_URL="$(sag-pg db cluster url)" sag-pg bench-scale --events 100000 --sources 8
    """
    from ..bench.report import format_scale
    from ..bench.scale import run_scale
    from ..bench.synth import SynthConfig

    app = _app(ctx)
    results = []
    for events in sizes:
        started = time.perf_counter()
        with _progress(not (quiet or as_json), f"{events:,} events") as progress:
            config = SynthConfig(events=events, dim=dim, seed=seed, sources=min(sources, events))
            result = run_scale(app.settings, config, queries=queries,
                               keep=keep, workers=workers, spool_dir=spool_dir, progress=progress,
                               strategy=strategy)
        results.append(result)
        if not (quiet or as_json):
            click.echo(f"{events:,} events done in {time.perf_counter() - started:.0f} s", err=True)
    if as_json:
        echo_json({"machine": _machine(), "runs": [r.to_dict() for r in results]})
    else:
        click.echo(format_scale(results))


def _machine() -> dict[str, object]:
    import os
    import platform

    return {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": sys.platform,
            "load_average": [round(x, 2) for x in os.getloadavg()]}

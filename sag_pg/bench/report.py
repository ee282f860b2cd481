"""Benchmark output: a plain-text table per dataset, the JSON document, and the optional Recall@k plot."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .runner import DatasetResult
from .scale import TARGETS, ScaleResult

__all__ = ["PLOT_INSTALL_HINT", "format_dataset", "format_scale", "plot_recall", "require_matplotlib", "to_json"]

PLOT_INSTALL_HINT = "pip install 'sag-pg[plot]'"


def format_dataset(result: DatasetResult, ks: Sequence[int]) -> str:
    """The dataset's ingest line and a table: Recall@k (percent) and latency p50/p95 (ms) per method."""
    lines = [
        f"{result.name}: {result.passages:,} passages ingested in {result.ingest_seconds:.1f} s "
        f"({result.passages_per_second:,.1f} passages/s); {result.questions} questions"
        + (f"; {result.failed} passages failed" if result.failed else "")
        + (f"; kept database {result.database}" if result.database else "")
    ]
    header = f"{'method':<8}" + "".join(f"{'R@' + str(k):>8}" for k in ks) + f"{'p50 ms':>10}{'p95 ms':>10}"
    lines += [header, "-" * len(header)]
    for name, m in result.methods.items():
        lines.append(f"{name:<8}" + "".join(f"{m.recall[k]:>8.1f}" for k in ks)
                     + f"{m.p50_ms:>10.1f}{m.p95_ms:>10.1f}")
    return "\n".join(lines)


def to_json(results: Sequence[DatasetResult]) -> dict[str, Any]:
    """``{"datasets": {NAME: {"ingest": {...}, "questions": n, "methods": {METHOD: {"R@k"..., "p50_ms", "p95_ms"}}}}}``."""
    return {"datasets": {r.name: r.to_dict() for r in results}}


def require_matplotlib() -> Any:
    """The pyplot module (Agg backend), or a ConfigError that says how to install it."""
    try:
        import matplotlib
    except ImportError as exc:
        raise ConfigError(f"--plot needs matplotlib, which is not installed: {PLOT_INSTALL_HINT}") from exc
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_recall(results: Sequence[DatasetResult], ks: Sequence[int], path: str | Path) -> Path:
    """One panel per dataset: Recall@k against k, a line per method; written to ``path`` (PNG, SVG, PDF...)."""
    plt = require_matplotlib()
    fig, axes = plt.subplots(1, len(results), figsize=(5 * len(results), 4), squeeze=False, sharey=True)
    for ax, result in zip(axes[0], results):
        for name, m in result.methods.items():
            ax.plot(list(ks), [m.recall[k] for k in ks], marker="o", label=name)
        ax.set_title(result.name)
        ax.set_xlabel("k")
        ax.set_xticks(list(ks))
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("Recall@k (%)")
    axes[0][-1].legend(loc="lower right")
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


def _mb(n: float) -> str:
    return f"{n / 2**20:,.0f} MB"


def format_scale(results: Sequence[ScaleResult]) -> str:
    """One row per size, then the targets (fast-search p50 at 1 M, ratio, load rate) held or not."""
    lines = []
    header = (f"{'events':>9} {'chunks':>8} {'keys':>9} {'links':>9} {'load s':>7} {'ev/s':>7} {'index s':>8} "
              f"{'graph s':>7} {'hnsw s':>7} {'db size':>9} {'p50 ms':>7} {'p95 ms':>7} {'hnsw p50':>8} {'ratio':>6} "
              f"{'rss MB':>7}")
    lines += [header, "-" * len(header)]
    for r in results:
        lines.append(
            f"{r.events:>9,} {r.chunks:>8,} {r.keys:>9,} {r.event_keys:>9,} {r.load_seconds:>7.1f} "
            f"{r.events_per_s:>7,.0f} {r.index_seconds:>8.1f} {r.graph_seconds:>7.1f} "
            f"{r.hnsw_seconds:>7.1f} {_mb(r.db_size_bytes):>9} "
            f"{r.search_p50_ms:>7.1f} {r.search_p95_ms:>7.1f} {r.hnsw_p50_ms:>8.2f} {r.ratio:>6.1f} "
            f"{r.peak_rss_mb:>7,.0f}")
    for r in results:
        stages = ", ".join(f"{k} {v:.1f}" for k, v in r.stage_p50_ms.items())
        lines.append(f"{r.events:,} events (dim {r.dim}, {r.strategy} search): corpus generated in {r.generate_seconds:.1f} s "
                     f"({_mb(r.spool_bytes)} of COPY files, before the timed load); "
                     f"fast-search stage p50 ms: {stages}"
                     + (f"; kept database {r.database}" if r.database else ""))
        if r.sources > 1 or r.node_bytes:
            nodes = ", ".join(f"{n} {_mb(b)} for {r.node_events.get(n, 0):,} events" for n, b in r.node_bytes.items())
            lines.append(f"  {r.sources} sources (one-source searches, round-robin)"
                         + (f"; Citus, {r.citus_workers} workers: coordinator {_mb(r.db_size_bytes)}, {nodes}"
                            if r.node_bytes else ""))
        lines += [f"  index build notice: {n}" for n in dict.fromkeys(r.notices)]
    lines.append(_targets(results))
    return "\n".join(lines)


def _targets(results: Sequence[ScaleResult]) -> str:
    def verdict(ok: bool) -> str:
        return "met" if ok else "NOT met"

    parts = []
    at_1m = [r for r in results if r.events >= 1_000_000]
    if at_1m:
        r = at_1m[-1]
        parts.append(f"p50 <= {TARGETS['p50_ms_at_1m']:.0f} ms at 1 M: {r.search_p50_ms:.1f} ms, "
                     f"{verdict(r.search_p50_ms <= TARGETS['p50_ms_at_1m'])}")
    else:
        parts.append(f"p50 <= {TARGETS['p50_ms_at_1m']:.0f} ms at 1 M: not run")
    worst_ratio = max(r.ratio for r in results)
    parts.append(f"ratio <= {TARGETS['ratio']:.0f}x: worst {worst_ratio:.1f}x, {verdict(worst_ratio <= TARGETS['ratio'])}")
    at_10k = [r for r in results if r.events == 10_000]
    if at_10k:
        ratio = at_10k[-1].ratio
        parts.append(f"ratio <= {TARGETS['ratio_at_10k']:.0f}x at 10 k: {ratio:.1f}x, "
                     f"{verdict(ratio <= TARGETS['ratio_at_10k'])}")
    rates = ", ".join(f"{r.events_per_s:,.0f} at {r.events:,} ({verdict(r.events_per_s >= TARGETS['events_per_s'])})"
                      for r in results)
    parts.append(f"load >= {TARGETS['events_per_s']:,.0f} events/s: {rates}")
    return "targets: " + "; ".join(parts)

"""Benchmark output: a plain-text table per dataset, the JSON document, and the optional Recall@k plot."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .runner import DatasetResult

__all__ = ["PLOT_INSTALL_HINT", "format_dataset", "plot_recall", "require_matplotlib", "to_json"]

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

"""Recall@k over gold groups (the bench README's definition) and latency percentiles."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

__all__ = ["dedupe", "mean_recall", "percentile", "recall_at_k"]


def dedupe(ranked: Iterable[str]) -> list[str]:
    """Passage ids in rank order, each once (a document's second chunk does not take a second place)."""
    seen: set[str] = set()
    out = []
    for pid in ranked:
        if pid not in seen:
            seen.add(pid)
            out.append(pid)
    return out


def recall_at_k(ranked: Sequence[str], gold: Sequence[Sequence[str]], k: int) -> float:
    """Satisfied gold groups in the top k (after :func:`dedupe`) / number of groups.

    A group is satisfied when any one of its ids is among the first k distinct passages; fewer than k
    results simply count what there is.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if not gold:
        raise ValueError("recall is undefined for a question without gold groups")
    top = set(dedupe(ranked)[:k])
    return sum(1 for group in gold if top.intersection(group)) / len(gold)


def mean_recall(runs: Iterable[tuple[Sequence[str], Sequence[Sequence[str]]]], k: int) -> float:
    """Recall@k in percent, averaged over the (ranked, gold) pairs of a benchmark."""
    values = [recall_at_k(ranked, gold, k) for ranked, gold in runs]
    return 100.0 * sum(values) / len(values) if values else 0.0


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100), linear interpolation between closest ranks (numpy's default)."""
    return float(np.percentile(np.asarray(values, dtype=np.float64), q)) if len(values) else float("nan")

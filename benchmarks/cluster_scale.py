"""Event clustering at scale: N synthetic events with Zipf-distributed keys, clustered end to end.

    .venv/bin/python benchmarks/cluster_scale.py --dsn postgresql://localhost/postgres --events 1000 10000 50000

For each N, a fresh database (``--database``, dropped afterwards unless ``--keep``) on the server of ``--dsn``
(default: ``SAG_DATABASE_URL``) gets, by binary COPY:

* ``N // 40`` topics; each event belongs to one, its embedding (``--dim``, default 384) is the topic's random
  centroid plus as much Gaussian noise (cosine ≈ 0.5 within a topic, ≈ 0 across);
* per event 2 of its topic's 8 keys (Zipf within the topic), 3 keys from a global vocabulary of N keys drawn
  from a Zipf law (s = 1.1: a few hub keys are held by thousands of events) and one of 100 ``time`` keys.

Then ``sag_pg.cluster.cluster_events`` runs on the whole source (and, with ``--subset``, on a random share of
its events, which takes the id-filtered HNSW path) and the script prints the time of each phase, the pair
and edge counts, the peak memory of the clustering process (``ru_maxrss``; the data is generated in a child
process so it does not count), the adjusted Rand index against the generating topics, and the time the
spec's all-pairs Python loop (§4.2) would take, extrapolated from a sample of pairs.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import resource
import sys
import time
import tracemalloc
from typing import Any

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql

from sag_pg.cluster import ClusterParams, EventSelection, cluster_events
from sag_pg.db import migrate
from sag_pg.db.connection import Database


def _dsn_for(dsn: str, dbname: str) -> str:
    info = psycopg.conninfo.conninfo_to_dict(dsn)
    info["dbname"] = dbname
    return psycopg.conninfo.make_conninfo(**info)  # type: ignore[arg-type]


def _zipf_choice(rng: np.random.Generator, n_items: int, size: tuple[int, ...], s: float) -> np.ndarray:
    p = 1.0 / np.arange(1, n_items + 1) ** s
    return rng.choice(n_items, size=size, p=p / p.sum())


def generate(dsn: str, n: int, dim: int, seed: int, naive_sample: int, out: Any) -> None:
    """Child process: create the data; send (topics per event, seconds, naive estimate) back through ``out``."""
    rng = np.random.default_rng(seed)
    started = time.perf_counter()
    topics = max(10, n // 40)
    topic_of = rng.integers(topics, size=n)
    centroids = rng.standard_normal((topics, dim)).astype(np.float32)
    vectors = centroids[topic_of] + rng.standard_normal((n, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)

    # Keys: 0..topics*8-1 topic keys, then n global keys, then 100 time keys.
    local = topic_of[:, None] * 8 + _zipf_choice(rng, 8, (n, 2), 1.0)
    global_keys = topics * 8 + _zipf_choice(rng, n, (n, 3), 1.1)
    times = topics * 8 + n + rng.integers(100, size=(n, 1))
    links = np.concatenate([local, global_keys, times], axis=1)
    n_keys = topics * 8 + n + 100
    key_type = ["entity"] * (topics * 8 + n) + ["time"] * 100
    key_name = [f"topic{k // 8}-{k % 8}" for k in range(topics * 8)] + [f"g{k}" for k in range(n)] + \
               [f"{1900 + k}年" for k in range(100)]

    with psycopg.connect(dsn) as conn:
        register_vector(conn)
        conn.execute("select sag.bind_embedder('bench', %s)", [dim])
        conn.execute("select sag.drop_vector_indexes()")
        src = conn.execute("insert into sag.sources (name) values ('bench') returning id").fetchone()[0]  # type: ignore[index]
        doc = conn.execute("insert into sag.documents (source_id, uri, content, content_hash) "
                           "values (%s, 'bench', '', 'x') returning id", [src]).fetchone()[0]  # type: ignore[index]
        conn.execute("insert into sag.chunks (document_id, source_id, ordinal, content, start_line, end_line) "
                     "select %s, %s, g, '', 1, 1 from generate_series(0, %s) g", [doc, src, (n - 1) // 10])
        chunk_ids = [r[0] for r in conn.execute("select id from sag.chunks order by ordinal").fetchall()]
        with conn.cursor().copy("copy sag.events (chunk_id, document_id, source_id, ordinal, title, content, "
                                "embedding) from stdin (format binary)") as copy:
            copy.set_types(["int8", "int8", "int8", "int4", "text", "text", "vector"])
            for i in range(n):
                copy.write_row([chunk_ids[i // 10], doc, src, i % 10, f"event {i}",
                                f"synthetic event {i} of topic {topic_of[i]}", vectors[i]])
        event_ids = np.array([r[0] for r in conn.execute("select id from sag.events order by id").fetchall()])
        with conn.cursor().copy("copy sag.keys (source_id, type, name, normalized, value_string) from stdin") as copy:
            for k in range(n_keys):
                copy.write_row([src, key_type[k], key_name[k], key_name[k].lower(), key_name[k]])
        key_ids = np.array([r[0] for r in conn.execute("select id from sag.keys order by id").fetchall()])
        pairs = {(int(event_ids[i]), int(key_ids[k])) for i in range(n) for k in links[i]}
        with conn.cursor().copy("copy sag.event_keys (event_id, key_id) from stdin (format binary)") as copy:
            copy.set_types(["int8", "int8"])
            for e, k in pairs:
                copy.write_row([e, k])
        conn.execute("update sag.keys k set event_count = c.n from "
                     "(select key_id, count(*) n from sag.event_keys group by key_id) c where c.key_id = k.id")
        conn.commit()
        loaded = time.perf_counter() - started
        t0 = time.perf_counter()
        conn.execute("select sag.create_vector_indexes()")
        conn.commit()
        index_seconds = time.perf_counter() - t0
        conn.autocommit = True
        conn.execute("vacuum analyze")

    # The spec's loop (§4.2) on a sample of pairs: set intersection, sum of IDF, one cosine each.
    key_sets = [{int(k) for k in row} for row in links]
    df = np.bincount(links.ravel(), minlength=n_keys)
    idf = np.log(n / np.maximum(df, 1))
    sample = rng.integers(n, size=(naive_sample, 2))
    t0 = time.perf_counter()
    for i, j in sample:
        if i == j:
            continue
        shared = key_sets[i] & key_sets[j]
        _w = sum(idf[k] for k in shared)
        _s = float(vectors[i] @ vectors[j])
    per_pair = (time.perf_counter() - t0) / naive_sample
    out.send({"topics": dict(zip(event_ids.tolist(), topic_of.tolist())), "load_seconds": loaded,
              "index_seconds": index_seconds, "links": len(pairs), "naive_seconds": per_pair * n * (n - 1) / 2})
    out.close()


def adjusted_rand(truth: list[int], found: list[int]) -> float:
    """Adjusted Rand index of two labelings (1 = identical partitions, ≈ 0 = chance)."""
    t, f = np.asarray(truth), np.asarray(found)
    _, ti = np.unique(t, return_inverse=True)
    _, fi = np.unique(f, return_inverse=True)
    table = np.zeros((ti.max() + 1, fi.max() + 1), dtype=np.int64)
    np.add.at(table, (ti, fi), 1)

    def comb2(x: np.ndarray) -> float:
        return float((x * (x - 1) // 2).sum())

    index, a, b = comb2(table), comb2(table.sum(axis=1)), comb2(table.sum(axis=0))
    total = len(t) * (len(t) - 1) / 2
    expected = a * b / total
    return (index - expected) / ((a + b) / 2 - expected) if (a + b) / 2 != expected else 1.0


def run_one(dsn: str, n: int, args: argparse.Namespace) -> None:
    name = args.database
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(sql.SQL("drop database if exists {}").format(sql.Identifier(name)))
        admin.execute(sql.SQL("create database {}").format(sql.Identifier(name)))
    target = _dsn_for(dsn, name)
    migrate.upgrade(target)
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=generate, args=(target, n, args.dim, args.seed, args.naive_sample, child))
    proc.start()
    info = parent.recv()
    proc.join()
    print(f"\n== {n:,} events (dim {args.dim}): {info['links']:,} event-key links; data loaded in "
          f"{info['load_seconds']:.1f} s, HNSW index built in {info['index_seconds']:.1f} s")

    db = Database(target)
    params = ClusterParams(max_key_events=args.max_key_events, key_pairs_per_event=args.pairs_per_event,
                           semantic_k=args.semantic_k)
    selections = [("whole source", EventSelection(source="bench"))]
    if args.subset:
        rng = np.random.default_rng(args.seed + 1)
        ids = sorted(info["topics"])
        chosen = rng.choice(ids, size=int(len(ids) * args.subset), replace=False)
        selections.append((f"random {args.subset:.0%} (id list)", EventSelection.of_events(int(e) for e in chosen)))
    for label, selection in selections:
        if args.tracemalloc:
            tracemalloc.start()
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        result = cluster_events(db, selection, params)
        rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        traced = tracemalloc.get_traced_memory()[1] if args.tracemalloc else None
        if args.tracemalloc:
            tracemalloc.stop()
        labels = {e: c.ordinal for c in result.clusters for e in c.event_ids}
        ari = adjusted_rand([info["topics"][e] for e in result.event_ids], [labels[e] for e in result.event_ids])
        phases = "  ".join(f"{k} {v:.2f}" for k, v in result.timings.items())
        big = sum(1 for c in result.clusters if c.size > 1)
        print(f"-- {label}: {result.event_count:,} events")
        print(f"   phases (s): {phases}")
        print(f"   key cap {result.max_key_events} events, key pairs {result.key_pairs:,}, semantic pairs {result.semantic_pairs:,}, edges "
              f"{result.edge_count:,}; {len(result.clusters):,} clusters ({big:,} with 2+ events), "
              f"modularity {result.modularity or 0:.3f}, ARI vs topics {ari:.3f}")
        print(f"   peak RSS {rss_after / 1024:.0f} MB (before {rss_before / 1024:.0f} MB)"
              + (f", tracemalloc peak {traced / 2**20:.0f} MB" if traced is not None else ""))
    print(f"   spec §4.2 all-pairs Python loop, extrapolated: {info['naive_seconds']:,.0f} s "
          f"({n * (n - 1) // 2:,} pairs; about {info['naive_seconds'] / 3600:.1f} h)")
    if not args.keep:
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(sql.SQL("drop database if exists {}").format(sql.Identifier(name)))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dsn", default=os.environ.get("SAG_DATABASE_URL"),
                        help="a server to create the benchmark database on (default: SAG_DATABASE_URL)")
    parser.add_argument("--database", default="sag_bench_cluster")
    parser.add_argument("--events", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--semantic-k", type=int, default=10)
    parser.add_argument("--max-key-events", type=int, default=None, help="default: from --pairs-per-event")
    parser.add_argument("--pairs-per-event", type=float, default=20.0)
    parser.add_argument("--subset", type=float, default=0.2, help="also cluster this random share (0: no)")
    parser.add_argument("--naive-sample", type=int, default=200_000)
    parser.add_argument("--tracemalloc", action="store_true", help="also report tracemalloc's peak (slower)")
    parser.add_argument("--keep", action="store_true", help="keep the database of the last N")
    args = parser.parse_args(argv)
    if not args.dsn:
        sys.exit("give --dsn or set SAG_DATABASE_URL")
    print(f"{os.cpu_count()} CPUs; pairs from SQL, fusion in numpy, Louvain = python-louvain; "
          f"max_key_events {args.max_key_events or 'auto'}, pairs/event {args.pairs_per_event}, "
          f"semantic_k {args.semantic_k}")
    for n in args.events:
        run_one(args.dsn, n, args)


if __name__ == "__main__":
    main()

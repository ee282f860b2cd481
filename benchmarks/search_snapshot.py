"""Did a change move any search result?  Snapshot every question of a benchmark set, then compare snapshots.

    .venv/bin/python benchmarks/search_snapshot.py take DSN ../shared/bench/hotpotqa-train100 before.json
    ... change the code, `sag-pg db upgrade` the same database ...
    .venv/bin/python benchmarks/search_snapshot.py take DSN ../shared/bench/hotpotqa-train100 after.json
    .venv/bin/python benchmarks/search_snapshot.py diff before.json after.json

``take`` runs ``SAG.search`` (fast mode, source ``default``, the embedder from the environment, as ``sag-pg
bench`` does; recall statistics not recorded) for every question of ``DATASET/queries.jsonl`` against a database
that holds the set (e.g. one ``sag-pg bench --keep`` left) and writes, per question, the top ``--top-n`` chunk ids
with their scores rounded to 9 decimals; it prints Recall@2/5/10 and the p50 latency.  ``diff`` names the
questions whose chunks or scores differ and exits 1 if any do.  A speed-up that must not change a result is
checked this way on each development set, with the hash embedder and with a real one.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from sag_pg import SAG


def take(dsn: str, dataset: Path, out: Path, top_n: int) -> None:
    questions = [json.loads(line) for line in (dataset / "queries.jsonl").open(encoding="utf-8") if line.strip()]
    snapshot: dict[str, list[list[float]]] = {}
    recall: dict[int, list[float]] = {2: [], 5: [], 10: []}
    ms: list[float] = []
    with SAG(dsn) as sag:
        sag.record_recalls = False  # a snapshot reads; it does not count as use of the documents
        for q in questions:
            started = time.perf_counter()
            result = sag.search(q["question"], source="default", top_n=top_n)
            ms.append((time.perf_counter() - started) * 1000.0)
            snapshot[q["id"]] = [[hit.chunk_id, round(hit.score, 9)] for hit in result.chunks]
            uris = [hit.document_uri for hit in result.chunks]
            for k, values in recall.items():
                values.append(sum(1 for group in q["gold"] if set(group) & set(uris[:k])) / len(q["gold"]))
    out.write_text(json.dumps(snapshot), encoding="utf-8")
    figures = "  ".join(f"R@{k} {100 * statistics.mean(v):.1f}" for k, v in recall.items())
    print(f"{dataset.name}: {figures}  p50 {statistics.median(ms):.1f} ms  ({len(questions)} questions)")


def diff(before: Path, after: Path) -> int:
    a = json.loads(before.read_text(encoding="utf-8"))
    b = json.loads(after.read_text(encoding="utf-8"))
    if set(a) != set(b):
        print(f"the snapshots hold different questions ({len(set(a) ^ set(b))} in only one)")
        return 1
    moved = [q for q in a if [c for c, _ in a[q]] != [c for c, _ in b[q]]]
    rescored = [q for q in a if a[q] != b[q] and q not in moved]
    for q in moved[:10]:
        print(f"{q}: chunks {[c for c, _ in a[q]]} -> {[c for c, _ in b[q]]}")
    for q in rescored[:10]:
        print(f"{q}: scores {[s for _, s in a[q]]} -> {[s for _, s in b[q]]}")
    print(f"{len(a)} questions: {len(moved)} with other chunks, {len(rescored)} with other scores only")
    return 1 if moved or rescored else 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    t = sub.add_parser("take", help="search every question of a set and write the results")
    t.add_argument("dsn")
    t.add_argument("dataset", type=Path)
    t.add_argument("out", type=Path)
    t.add_argument("--top-n", type=int, default=10)
    d = sub.add_parser("diff", help="compare two snapshots")
    d.add_argument("before", type=Path)
    d.add_argument("after", type=Path)
    args = parser.parse_args(argv)
    if args.command == "take":
        take(args.dsn, args.dataset, args.out, args.top_n)
        return 0
    return diff(args.before, args.after)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The bilingual dev check (issue 33): Recall@k per method on benchmarks/data/bilingual, with each miss shown.

    PYTHONPATH=. .venv/bin/python benchmarks/bilingual.py                       # hash embedder
    PYTHONPATH=. .venv/bin/python benchmarks/bilingual.py --embedder openai:multilingual-e5-small
    PYTHONPATH=. .venv/bin/python benchmarks/bilingual.py --misses sag          # each question sag misses

The set (46 passages, 36 questions, written for this check; nothing copied from a public benchmark): Chinese
pages about invented projects, people, universities, a museum and a ship; English pages about others; Chinese
news naming entities of both kinds with their other-language name in parentheses ("北溟大学（Beiming
University）"); distractors in both languages that share a two-hop question's words and nothing else
("南湖大学……许多工程师毕业于该校，学校曾主持多项国家研究计划").  Question groups, by id prefix:

- ``en-zh``: an English question whose evidence is a Chinese page;
- ``zh-en``: a Chinese question whose evidence is an English page;
- ``zh-2h``: a Chinese two-hop question (某计划的主持人毕业于哪所大学), the evidence Chinese or English;
- ``en-2h``: an English two-hop question, the evidence Chinese or (two controls) English.

The layout is the bench README's, so ``sag-pg bench benchmarks/data/bilingual`` runs it too; this script adds the
per-group figures and the misses.  Each run ingests the corpus into a fresh database on the configured server
(``SAG_DATABASE_URL`` or the embedded one under ``SAG_HOME``) and drops it afterwards.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

from sag_pg.bench.database import temporary_database
from sag_pg.bench.dataset import load_dataset
from sag_pg.bench.methods import open_methods, parse_methods, prepare_query
from sag_pg.bench.metrics import dedupe, recall_at_k
from sag_pg.client import SAG
from sag_pg.config import Settings
from sag_pg.db import migrate
from sag_pg.db.connection import resolve_dsn

DATA = Path(__file__).resolve().parent / "data" / "bilingual"
KS = (2, 5, 10)
SOURCE = "default"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--methods", default="sag,bm25,dense,hybrid")
    ap.add_argument("--embedder", default=None, help="hash (default), openai:MODEL, ... as the CLI's --embedder")
    ap.add_argument("--misses", default="", help="comma-separated methods whose misses are listed")
    ap.add_argument("--miss-k", type=int, default=5, choices=KS, help="a miss: below full recall at this k")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    settings = Settings.from_env()
    if args.embedder:
        settings = settings.with_(embedder=args.embedder)
    dataset = load_dataset(args.data)
    methods = parse_methods(args.methods)
    top_k = max(KS)
    out: dict[str, dict[str, dict[str, float]]] = {}
    misses: dict[str, list[str]] = defaultdict(list)
    with temporary_database(resolve_dsn(settings), "bilingual") as dsn:
        migrate.upgrade(dsn)
        with SAG(settings=settings.with_(database_url=dsn)) as sag:
            report = sag.ingest_files([dataset.corpus], source=SOURCE)
            if report.failed:
                print(f"ingest: {report.failed} failed: {report.errors[:3]}", file=sys.stderr)
            prepared = [prepare_query(sag, q.question) for q in dataset.questions]
            with open_methods(sag, methods, source=SOURCE) as available:
                for name, method in available.items():
                    per_group: dict[str, list[dict[int, float]]] = defaultdict(list)
                    for q, pq in zip(dataset.questions, prepared):
                        ranked = dedupe(method(pq, top_k))
                        scores = {k: recall_at_k(ranked, q.gold, k) for k in KS}
                        per_group["all"].append(scores)
                        per_group[q.qid.rsplit("-", 1)[0]].append(scores)
                        if name in args.misses.split(",") and scores[args.miss_k] < 1:
                            misses[name].append(f"{q.qid} {q.question} gold={[list(g) for g in q.gold]} "
                                                f"top5={ranked[:5]}")
                    out[name] = {group: {f"R@{k}": round(100 * sum(s[k] for s in rows) / len(rows), 1)
                                         for k in KS} | {"n": len(rows)}
                                 for group, rows in sorted(per_group.items())}
    if args.json:
        print(json.dumps({"embedder": settings.embedder, "methods": out}, ensure_ascii=False, indent=1))
    else:
        groups = sorted({g for m in out.values() for g in m}, key=lambda g: (g != "all", g))
        print(f"embedder {settings.embedder}; R@2 / R@5 / R@10 per question group (n questions)")
        print("method    " + "".join(f"{g + ' (' + str(int(out[methods[0]][g]['n'])) + ')':>22}" for g in groups))
        for name, by_group in out.items():
            print(f"{name:<10}" + "".join(f"{by_group[g]['R@2']:>8.1f}{by_group[g]['R@5']:>7.1f}{by_group[g]['R@10']:>7.1f}"
                                          for g in groups))
    for name, lines in misses.items():
        print(f"\n{name}: {len(lines)} questions below R@5 = 1")
        for line in lines:
            print("  " + line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Recall@k of SAG's seed profile and of each deviation from the seed, on a kept benchmark database.

    sag-pg bench /work/shared/bench/musique-train100 --methods sag,sag-seed --keep     # prints the database
    python benchmarks/seed_ablation.py /work/shared/bench/musique-train100 sag_bench_musique_train100_1234

Every configuration runs every question through ``SAG.search(question, source="default", top_n=10,
params=...)``, exactly as the bench's ``sag`` and ``sag-seed`` methods do, and scores Recall@2/5/10 with the
bench's own code (sag_pg.bench.metrics).  "default -X" turns one addition of the default off; "seed +X" puts
one on over the seed profile (where a parameter the seed profile honours allows it).  docs/retrieval.md ("The
seed profile") holds the figures.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sag_pg import SAG, Settings
from sag_pg.bench.database import database_dsn
from sag_pg.bench.dataset import load_dataset
from sag_pg.bench.metrics import mean_recall
from sag_pg.db import migrate
from sag_pg.db.connection import resolve_dsn
from sag_pg.search import RetrievalParams

D = RetrievalParams()
S = RetrievalParams(profile="seed")
NO_HUBS = 2**31 - 1
CONFIGS: dict[str, RetrievalParams] = {
    "default": D,
    "default -named seeds (use_names)": replace(D, use_names=False),
    "default -named floor": replace(D, named_key_floor=0.0),
    "default -feedback seeds": replace(D, feedback_chunks=0),
    "default -specificity": replace(D, specificity=False),
    "default -adaptive key weight": replace(D, adaptive_keys=False),
    "default -soft hubs": replace(D, soft_hubs=False),
    "default -hub limit": replace(D, max_key_events=NO_HUBS),
    "default -seed threshold (0)": replace(D, match_min_similarity=0.0),
    "default s = cosine (text_weight 0)": replace(D, text_weight=0.0),
    "default PageRank 0.85": replace(D, pagerank_alpha=0.85),
    "default -spread": replace(D, spread_documents=False),
    "default -direct pins": replace(D, direct_within=0),
    "default -cover order": replace(D, cover_question=False),
    "default -every switch, PageRank 0.85": replace(
        D, use_names=False, named_key_floor=0.0, feedback_chunks=0, specificity=False, adaptive_keys=False,
        soft_hubs=False, pagerank_alpha=0.85, spread_documents=False, direct_within=0, cover_question=False),
    "seed": S,
    "seed +seed threshold 0.45": replace(S, match_min_similarity=0.45),
    "seed +hub limit 20": replace(S, max_key_events=20),
    "seed +PageRank 0.3": replace(S, pagerank_alpha=0.3),
    "seed +BM25 in s (text_weight 0.85)": replace(S, text_weight=0.85),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dataset", type=Path)
    ap.add_argument("database", help="the kept bench database (sag-pg bench --keep)")
    ap.add_argument("--only", help="configuration names separated by ; (default: all)")
    args = ap.parse_args()
    dataset = load_dataset(args.dataset)
    settings = Settings.from_env()
    names = [n.strip() for n in args.only.split(";")] if args.only else list(CONFIGS)
    dsn = database_dsn(resolve_dsn(settings), args.database)
    migrate.upgrade(dsn)  # the functions of this checkout (a kept database keeps those of its bench run)
    with SAG(settings=settings.with_(database_url=dsn)) as sag:
        for name in names:
            runs = [([h.document_uri for h in sag.search(q.question, source="default", top_n=10,
                                                         params=CONFIGS[name]).chunks], q.gold)
                    for q in dataset.questions]
            print(f"{dataset.name}\t{name}\t" + "\t".join(f"{mean_recall(runs, k):.2f}" for k in (2, 5, 10)),
                  flush=True)


if __name__ == "__main__":
    main()

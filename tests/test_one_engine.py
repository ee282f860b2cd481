"""One retrieval engine: psql's sag.search and the Python client's SAG.search (without PageRank) give the same
chunks with the same scores for every question of the three development sets, English and Chinese.

Both call sag.retrieve; this checks that nothing on the way differs (the question's embedding, its BM25 terms,
its named keys, the sources, the order of ties).  The sets are in ../shared/bench (beside the checkout, as in
CI); the whole corpora are ingested (minutes), so the test has its own lane: `pytest -m devsets`.
"""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from sag_pg import SAG
from sag_pg.bench.dataset import load_dataset

BENCH = Path(__file__).resolve().parents[2] / "shared" / "bench"
SETS = ("musique-train100", "hotpotqa-train100", "rgb-zh-refine300")


@pytest.mark.slow
@pytest.mark.devsets
@pytest.mark.parametrize("name", SETS)
def test_psql_and_python_agree_on_every_dev_question(sag: SAG, db_dsn: str, name: str) -> None:
    if not (BENCH / name).is_dir():
        pytest.skip(f"{BENCH / name} is not there (the development sets live in shared/bench beside the checkout)")
    dataset = load_dataset(BENCH / name)
    report = sag.ingest_files([dataset.corpus])
    assert report.failed == 0 and report.documents == dataset.passages
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        for question in dataset.questions:
            python = sag.search(question.question, top_n=10, use_pagerank=False)
            psql = conn.execute("select document, chunk_id, score from sag.search(%s, 10)",
                                [question.question]).fetchall()
            assert [(h.document_uri, h.chunk_id) for h in python.chunks] == [(d, c) for d, c, _ in psql], \
                question.question
            assert [h.score for h in python.chunks] == pytest.approx([s for _, _, s in psql], rel=1e-9, abs=1e-12)

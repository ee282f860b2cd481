"""Issue #37 item 8: rankings that explain themselves.  `search --json` carries no padding (chunks nothing
relates to the question) and says how many it left out; a chunk placed above chunks that score more says why
(direct match, coverage), in --json and in the text, with a legend."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sag_pg import SAG, Settings
from sag_pg.cli import cli

from .test_search import DOCS


def _env(dsn: str, home: Path) -> dict[str, str]:
    return {"SAG_DATABASE_URL": dsn, "SAG_HOME": str(home), "SAG_LLM": "", "SAG_EMBEDDER": ""}


def _search(env: dict[str, str], *args: str) -> dict:
    out = CliRunner().invoke(cli, ["search", *args, "--json"], env=env)
    assert out.exit_code == 0, out.output
    return json.loads(out.stdout)


def test_json_has_no_padding_and_counts_what_it_left_out(db_dsn: str, tmp_path: Path) -> None:
    with SAG(settings=Settings(database_url=db_dsn, home=tmp_path)) as sag:
        for uri, text in DOCS.items():
            sag.ingest_text(text, uri=uri)
    env = _env(db_dsn, tmp_path)
    # Nothing in the corpus relates to the word: every chunk had W_init 0 and PageRank's uniform 0.25.
    nothing = _search(env, "zebra", "--top-n", "4")
    assert nothing["chunks"] == [] and nothing["omitted"]["chunks"] == 4
    text = CliRunner().invoke(cli, ["search", "zebra", "--top-n", "4"], env=env).stdout
    assert "no relevant results" in text and "0.2500" not in text

    one = _search(env, "Marie Curie Nobel", "--top-n", "4")
    assert [c["document_uri"] for c in one["chunks"]] == ["curie"]
    assert one["omitted"]["chunks"] == 3
    text = CliRunner().invoke(cli, ["search", "Marie Curie Nobel", "--top-n", "4"], env=env).stdout
    assert "0.0000" not in text  # a score that prints as zero is not presented as a result


@pytest.fixture(scope="module")
def demo_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    import psycopg

    from .conftest import SERVER

    name = f"{SERVER.maintenance_db}_demo_order".replace("-", "_")
    with psycopg.connect(SERVER.dsn(SERVER.maintenance_db), autocommit=True) as admin:
        admin.execute(psycopg.sql.SQL("drop database if exists {}").format(psycopg.sql.Identifier(name)))
        admin.execute(psycopg.sql.SQL("create database {}").format(psycopg.sql.Identifier(name)))
    env = _env(SERVER.dsn(name), tmp_path_factory.mktemp("demo"))
    assert CliRunner().invoke(cli, ["demo"], env=env).exit_code == 0
    yield env
    with psycopg.connect(SERVER.dsn(SERVER.maintenance_db), autocommit=True) as admin:
        admin.execute("select pg_terminate_backend(pid) from pg_stat_activity where datname = %s", [name])
        admin.execute(psycopg.sql.SQL("drop database if exists {}").format(psycopg.sql.Identifier(name)))


@pytest.mark.parametrize(("question", "reason"), [("Who founded Pixar?", "direct match"), ("赤壁之战", "coverage")])
def test_a_chunk_placed_above_higher_scores_says_why(demo_env: dict[str, str], question: str, reason: str) -> None:
    chunks = _search(demo_env, question, "--source", "demo")["chunks"]
    scores = [c["score"] for c in chunks]
    moved = [i for i in range(len(chunks)) if any(s > scores[i] for s in scores[i + 1:])]
    assert moved, "the case needs a chunk placed above a higher score"
    for i, chunk in enumerate(chunks):
        assert chunk["placed_by"] == ("score" if i not in moved else chunk["placed_by"])
        if i in moved:
            assert chunk["placed_by"] in ("direct match", "coverage")
            assert (chunk["placed_by"] == "direct match") == chunk["explain"]["direct_match"]
    assert reason in {chunks[i]["placed_by"] for i in moved}
    text = CliRunner().invoke(cli, ["search", question, "--source", "demo"], env=demo_env).stdout
    assert f"↑{reason}" in text
    assert "placed above chunks that score more" in text  # the legend

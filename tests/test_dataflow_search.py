"""DataFlow through the client and the CLI, on documents ingested by the real pipeline (hash embedder, rule
extractor).  The formulas are checked on hand-made graphs in tests/sql/test_dataflow_*.py; this checks the
surfaces: SAG.search(strategy="dataflow"), `sag-pg search --strategy dataflow`, bad input."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from sag_pg import SAG, QueryError, Settings
from sag_pg.cli import cli
from sag_pg.dataflow import DataflowParams

from .databases import CorpusDatabases, ingest_texts
from .test_search import DOCS


@pytest.fixture
def library(corpus_databases: CorpusDatabases, tmp_path: Path) -> Iterator[SAG]:
    """test_search's library: DOCS in source default (a copy of a database filled once per session)."""
    with corpus_databases.client("library", ingest_texts(DOCS), tmp_path / "unused-home") as sag:
        yield sag


def test_dataflow_finds_the_document_and_explains(library: SAG) -> None:
    library.ingest_text(f"# Babbage today\n\nCharles Babbage's Analytical Engine was rebuilt in "
                        f"{datetime.now(UTC).year}.", uri="rebuilt")
    result = library.search("Who worked with Charles Babbage on the Analytical Engine?", top_n=3, strategy="dataflow")
    assert result.chunks[0].document_uri in ("lovelace", "babbage")
    # "Charles Babbage" is an entity of the question (the rule extractor and sag.named_keys both find it).
    assert any(k.name == "Charles Babbage" for k in result.keys)
    trail = result.to_dict()["trail"]
    assert trail["hops"][0]["hop"] == 0 and trail["events"]
    best = trail["events"][0]
    # Each factor is there and the score is their weighted sum with the seed's weights (issue 34.3: before, the
    # hash embedder's lexical redundancy took the vector weight to 0 and every time decay was 1).
    assert trail["score_weights"] == pytest.approx([0.3, 0.3, 0.2, 0.2], abs=1e-6)
    assert best["similarity"] > 0
    for event in trail["events"]:
        assert event["score"] == pytest.approx(0.3 * event["relevance"] + 0.3 * event["similarity"]
                                               + 0.2 * event["time_decay"] + 0.2 * event["preference"], abs=1e-6)
    # The factors vary: an event dated this year by a time key decays from January 1st, those dated 1843 or 1791
    # to 0, the undated ones get the median of the dated ones' decays.
    this_year = datetime.now(UTC).year
    decays = {e["event_id"]: e["time_decay"] for e in trail["events"]}
    with library.db.connect() as conn:
        recent = conn.execute("select e.id from sag.events e where e.content like %s", [f"%{this_year}%"]).fetchall()
    assert recent and all(decays[r[0]] == pytest.approx(math.exp(-0.01 * (datetime.now(UTC)
                                                                          - datetime(this_year, 1, 1, tzinfo=UTC)).days))
                          for r in recent if r[0] in decays)
    assert len({round(d, 6) for d in decays.values()}) > 1 and min(decays.values()) < 1e-6
    assert len({round(e["similarity"], 6) for e in trail["events"]}) > 1
    assert all(hit.events for hit in result.chunks)


def test_dataflow_bad_input(library: SAG) -> None:
    with pytest.raises(QueryError):
        library.search("Babbage", strategy="flood")
    with pytest.raises(QueryError):
        library.search("Babbage", strategy="dataflow", dataflow=DataflowParams(decay=0))
    with pytest.raises(QueryError):
        library.search("Babbage", strategy="dataflow", sql="key.type = 'time'")


def test_cli_dataflow(db_dsn: str, tmp_path: Path) -> None:
    env = {"SAG_DATABASE_URL": db_dsn, "SAG_HOME": str(tmp_path / "home"), "SAG_LLM": "", "SAG_EMBEDDER": ""}
    doc = tmp_path / "lovelace.md"
    doc.write_text(DOCS["lovelace"])
    assert CliRunner().invoke(cli, ["ingest", str(doc)], env=env).exit_code == 0
    found = CliRunner().invoke(cli, ["search", "Who worked with Charles Babbage?", "--strategy", "dataflow",
                                     "--depth", "2", "--breadth", "3", "--focus", "Analytical Engine", "--json"],
                               env=env)
    assert found.exit_code == 0, found.output
    data = json.loads(found.output)
    assert data["strategy"] == "dataflow" and data["chunks"][0]["document_uri"] == "lovelace.md"
    assert data["trail"]["focus"] == ["Analytical Engine"]
    explained = CliRunner().invoke(cli, ["search", "Charles Babbage", "--strategy", "dataflow", "--explain"], env=env)
    assert explained.exit_code == 0 and "activation per hop" in explained.output, explained.output
    # The weights used (the seed's) and the range of each factor over the scored events.
    flat = " ".join(explained.output.split())
    assert "w = 0.3 0.3 0.2 0.2" in flat, explained.output
    assert "factors over" in flat and "preference 0.50-0.50 (no focus: 0.5 for every event)" in flat
    bad = CliRunner().invoke(cli, ["search", "Babbage", "--strategy", "dataflow", "--breadth", "0"], env=env)
    assert bad.exit_code == 2


def test_bench_scale_times_dataflow(db_dsn: str) -> None:
    result = CliRunner().invoke(cli, ["--dsn", db_dsn, "bench-scale", "--events", "300", "--dim", "4",
                                      "--queries", "2", "--strategy", "dataflow", "--json"])
    assert result.exit_code == 0, result.output
    run = json.loads(result.stdout)["runs"][0]
    assert run["strategy"] == "dataflow" and run["search_p50_ms"] > 0
    assert "sql_propagate" in run["stage_p50_ms"]


def test_dataflow_type_weights_are_their_own_setting(db_dsn: str, tmp_path: Path) -> None:
    """Issue 34.2: `sag-pg source --dataflow-type-weight` sets DataFlow's weights; SAG's key_types (written into
    every source ingest creates) do not reach DataFlow, and a search can override its weights."""
    env = {"SAG_DATABASE_URL": db_dsn, "SAG_HOME": str(tmp_path / "home"), "SAG_LLM": "", "SAG_EMBEDDER": ""}
    doc = tmp_path / "lovelace.md"
    doc.write_text(DOCS["lovelace"])
    assert CliRunner().invoke(cli, ["ingest", str(doc)], env=env).exit_code == 0
    sag = SAG(settings=Settings(database_url=db_dsn, home=tmp_path / "home"))
    seed = {"time": 0.9, "location": 1.0, "person": 1.1, "topic": 1.5, "action": 1.2, "tag": 1.0}
    trail = sag.search("Charles Babbage", strategy="dataflow").to_dict()["trail"]
    assert {t: trail["type_weights"][t] for t in seed} == seed  # not key_types' topic 0.8, action 0.5, ...
    out = CliRunner().invoke(cli, ["source", "default", "--dataflow-type-weight", "topic=2",
                                   "--dataflow-type-weight", "Event=0.5"], env=env)
    assert out.exit_code == 0, out.output
    config = json.loads(out.output)["config"]
    assert config["dataflow_type_weights"] == {"topic": 2.0, "event": 0.5}
    assert config["key_types"]["topic"] == 0.8  # SAG's own weights are untouched
    trail = sag.search("Charles Babbage", strategy="dataflow").to_dict()["trail"]
    assert (trail["type_weights"]["topic"], trail["type_weights"]["event"], trail["type_weights"]["person"]) == \
        (2.0, 0.5, 1.1)
    trail = sag.search("Charles Babbage", strategy="dataflow",
                       dataflow=DataflowParams(type_weights={"person": 3})).to_dict()["trail"]
    assert (trail["type_weights"]["person"], trail["type_weights"]["topic"]) == (3.0, 2.0)

"""`sag-pg db status` shows what the embedder's calibration measured per source, and says when the embedder
finds passages less well than the words (sag_internal._embedder_reliability)."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
from click.testing import CliRunner
from psycopg.types.json import Jsonb

from sag_pg.cli import cli

from .test_search import DOCS


def test_status_shows_the_calibration_and_doubts_an_unreliable_embedder(db_dsn: str, tmp_path: Path) -> None:
    env = {"SAG_DATABASE_URL": db_dsn, "SAG_HOME": str(tmp_path / "home"), "SAG_LLM": "", "SAG_EMBEDDER": ""}
    for uri, text in DOCS.items():
        doc = tmp_path / f"{uri}.md"
        doc.write_text(text)
        assert CliRunner().invoke(cli, ["ingest", str(doc)], env=env).exit_code == 0
    shown = CliRunner().invoke(cli, ["db", "status"], env=env)
    assert shown.exit_code == 0, shown.output
    # The hash embedder is the words themselves: redundancy 1, reliability 1, no doubt raised.
    line = next(x for x in shown.output.splitlines() if x.startswith("calibrated  default:"))
    assert "lexical redundancy 1.00, reliability 1.00" in line and "less well" not in line, shown.output

    # An embedder that found its passages half as well as the words (as an English model does on Chinese).
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        source = conn.execute("select id from sag.sources where name = 'default'").fetchone()[0]
        conn.execute("update sag.settings set value = %s where name = 'similarity_floors'",
                     [Jsonb({str(source): {"chunk": 0.5, "event": 0.4, "key": 0.5, "lexical": 0.2,
                                           "reliability": 0.5}})])
    shown = CliRunner().invoke(cli, ["db", "status", "--json"], env=env)
    calibration = json.loads(shown.output)["calibration"]
    assert calibration == [{"source": "default", "chance_cosine": 0.5, "lexical_redundancy": 0.2,
                            "reliability": 0.5, "redundancy": 1 - (1 - 0.2) * 0.5}]
    shown = CliRunner().invoke(cli, ["db", "status"], env=env)
    line = next(x for x in shown.output.splitlines() if x.startswith("calibrated  default:"))
    assert "reliability 0.50 — it finds passages from their own sentences less well" in line, shown.output

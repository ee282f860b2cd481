"""Ingestion end to end on a real database with the offline defaults."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest

from sag_pg import SAG, EmbedderMismatchError, InputError, Settings

from .integrity import violations

THREE_KINGDOMS = """# 官渡之战

## 经过
公元200年，曹操与袁绍在官渡展开决战。曹操采纳许攸的计策，奇袭乌巢，烧毁袁军粮草。

## 结果
袁绍大败，曹操由此统一北方。
"""

APPLE = """# Apple

Apple was founded by Steve Jobs and Steve Wozniak in 1976 in Los Altos, California.
The Apple II was released in 1977 and became one of the first successful personal computers.
"""


def _counts(conn: psycopg.Connection) -> dict[str, int]:
    return dict(conn.execute("select * from sag.table_counts()").fetchall())


def test_ingest_text_stores_a_consistent_document(sag: SAG, db_conn: psycopg.Connection) -> None:
    report = sag.ingest_text(THREE_KINGDOMS, uri="guandu.md", title="官渡之战")
    assert (report.documents, report.failed) == (1, 0)
    counts = _counts(db_conn)
    assert counts["documents"] == 1
    assert counts["chunks"] == 2  # one per ## section
    assert counts["events"] >= 3
    titles = [r[0] for r in db_conn.execute("select title from sag.chunks order by ordinal")]
    assert all("经过" in titles[0] or "结果" in t for t in titles[1:])
    names = {r[0] for r in db_conn.execute("select name from sag.keys")}
    assert {"曹操", "袁绍"} <= names
    assert violations(db_conn) == {}
    lines = db_conn.execute("select start_line, end_line from sag.chunks order by ordinal").fetchall()
    assert lines[0][0] <= 4 <= lines[0][1]  # the 公元200年 sentence is on line 4


def test_reingesting_unchanged_content_is_a_no_op(sag: SAG, db_conn: psycopg.Connection) -> None:
    sag.ingest_text(APPLE, uri="apple.md")
    before = db_conn.execute("select id, updated_at from sag.documents").fetchall()
    db_conn.commit()
    report = sag.ingest_text(APPLE, uri="apple.md")
    assert (report.documents, report.skipped) == (0, 1)
    assert db_conn.execute("select id, updated_at from sag.documents").fetchall() == before


def test_changed_content_replaces_the_document(sag: SAG, db_conn: psycopg.Connection) -> None:
    sag.ingest_text(APPLE, uri="apple.md")
    old_chunks = {r[0] for r in db_conn.execute("select id from sag.chunks")}
    db_conn.commit()
    sag.ingest_text(APPLE.replace("Wozniak", "Woz").replace("Los Altos", "Cupertino"), uri="apple.md")
    assert _counts(db_conn)["documents"] == 1
    assert not old_chunks & {r[0] for r in db_conn.execute("select id from sag.chunks")}
    names = {r[0] for r in db_conn.execute("select normalized from sag.keys")}
    assert "cupertino" in names and "losaltos" not in names  # the orphan key went with the old text
    assert violations(db_conn) == {}


def test_delete_keeps_shared_keys_and_their_counts(sag: SAG, db_conn: psycopg.Connection) -> None:
    sag.ingest_text(APPLE, uri="a.md")
    sag.ingest_text("# Jobs\n\nSteve Jobs returned to Apple in 1997 after NeXT was acquired.", uri="b.md")
    shared = db_conn.execute(
        "select event_count from sag.keys where normalized = 'stevejobs'").fetchone()
    assert shared is not None and shared[0] >= 2
    db_conn.commit()
    assert sag.delete_document("a.md") is True
    assert sag.delete_document("a.md") is False
    assert _counts(db_conn)["documents"] == 1
    assert db_conn.execute("select count(*) from sag.keys where normalized = 'stevejobs'").fetchone() == (1,)
    assert db_conn.execute("select count(*) from sag.keys where normalized = 'losaltos'").fetchone() == (0,)
    assert violations(db_conn) == {}


def test_bad_inputs_are_named_and_the_rest_goes_on(sag: SAG, db_conn: psycopg.Connection, tmp_path: Path) -> None:
    good = tmp_path / "good.md"
    good.write_text(APPLE)
    (tmp_path / "binary.txt").write_bytes(b"\x00\x01\x02PNG")
    (tmp_path / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    (tmp_path / "empty.md").write_text("  \n\n")
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("\n".join([
        json.dumps({"id": "p1", "title": "One", "text": "Ada Lovelace wrote the first program in 1843."}),
        "{not json",
        json.dumps({"id": "p3", "title": "Three"}),
        json.dumps({"id": "p4", "text": "Alan Turing proposed the Turing test in 1950."}),
    ]))
    report = sag.ingest_files([tmp_path, tmp_path / "missing.md"])
    assert report.documents == 3  # good.md, p1, p4
    assert report.failed == 6
    text = "\n".join(report.errors)
    assert "binary.txt: binary file" in text
    assert "latin1.txt: not UTF-8" in text
    assert "empty.md: empty document" in text
    assert "corpus.jsonl:2: not valid JSON" in text
    assert 'corpus.jsonl:3: missing "text"' in text
    assert "missing.md: no such file" in text
    assert {r[0] for r in db_conn.execute("select uri from sag.documents")} == {f"{tmp_path.name}/good.md", "p1", "p4"}


def test_empty_text_is_an_input_error(sag: SAG) -> None:
    with pytest.raises(InputError, match="empty"):
        sag.ingest_text("   ", uri="blank")


def test_sources_are_separate(sag: SAG, db_conn: psycopg.Connection) -> None:
    sag.ingest_text(APPLE, uri="apple.md", source="a")
    sag.ingest_text(APPLE, uri="apple.md", source="b")
    rows = db_conn.execute("select s.name, count(distinct k.id) from sag.sources s "
                           "join sag.keys k on k.source_id = s.id group by s.name order by 1").fetchall()
    assert [r[0] for r in rows] == ["a", "b"] and rows[0][1] == rows[1][1] > 0
    assert violations(db_conn) == {}
    assert [s["name"] for s in sag.sources()] == ["a", "b"]


def test_another_embedder_on_the_same_database_is_refused(sag: SAG, db_dsn: str, tmp_path: Path) -> None:
    sag.ingest_text(APPLE, uri="apple.md")
    other = SAG(settings=Settings(database_url=db_dsn, home=tmp_path, embedder="hash:64"))
    with pytest.raises(EmbedderMismatchError, match="hash-v1:512"):
        other.ingest_text(APPLE, uri="apple2.md")


def test_bulk_mode_rebuilds_the_vector_indexes(sag: SAG, db_conn: psycopg.Connection, tmp_path: Path) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("\n".join(json.dumps({"id": f"d{i}", "text": f"Document {i} mentions Paris and Rome."})
                                for i in range(20)))
    report = sag.ingest_files([corpus], bulk=True)
    assert report.documents == 20 and "index" in report.timings
    hnsw = db_conn.execute("select count(*) from pg_indexes where schemaname = 'sag' and indexname like '%hnsw'")
    assert hnsw.fetchone() == (3,)


def test_spellings_of_one_name_converge_on_one_key(sag: SAG, db_conn: psycopg.Connection) -> None:
    sag.ingest_text("# A\n\nThe company 302.AI launched an API gateway in 2023.", uri="a")
    sag.ingest_text("# B\n\nDevelopers praised 302AI for its pricing.", uri="b")
    sag.ingest_text("# C\n\nThe founders of AI302 met in Shenzhen.", uri="c")
    rows = db_conn.execute(
        "select k.id, k.event_count from sag.keys k where sag.key_signature(k.normalized) = '302 ai'").fetchall()
    assert len(rows) == 1, rows
    assert rows[0][1] == 3  # one event of each document links to it
    assert violations(db_conn) == {}


def test_source_synonyms_and_key_types(sag: SAG, db_conn: psycopg.Connection) -> None:
    config = sag.configure_source("default", synonyms={"Big Blue": "IBM"}, key_types={"person": 1, "topic": 0.5})
    assert config["synonyms"] == {"Big Blue": "IBM"} and set(config["key_types"]) == {"person", "topic"}
    sag.ingest_text("# IBM\n\nIBM built the System/360 in 1964.", uri="a")
    sag.ingest_text("# Mainframes\n\nBig Blue sold the mainframe to banks.", uri="b")
    normalized = [r[0] for r in db_conn.execute("select normalized from sag.keys where normalized in ('ibm', 'bigblue')")]
    assert normalized == ["ibm"]
    assert db_conn.execute("select event_count from sag.keys where normalized = 'ibm'").fetchone()[0] >= 2

"""Big documents (issue #36 item 11): stored part by part in one transaction, the same rows as one statement
makes, nothing left by a failure or a kill in the middle, and a big load rebuilds the vector indexes once."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from sag_pg import SAG
from sag_pg.db import ingest as store
from sag_pg.ingest.prepare import DocumentPreparer, PreparedPart
from sag_pg.ingest.readers import DocumentInput, document_from_text
from sag_pg.ingest.runner import BULK_MIN_BYTES, PART_CHUNKS, STREAM_CHARS

from .integrity import violations

FIRST = ["Ada", "Alan", "Grace", "Claude", "Barbara", "Edsger", "Donald", "Margaret", "Katherine", "Dennis", "Linus", "Radia", "Frances", "Leslie"]
LAST = ["Lovelace", "Turing", "Hopper", "Shannon", "Liskov", "Dijkstra", "Knuth", "Hamilton", "Johnson", "Ritchie", "Perlman", "Allen", "Lamport"]
PLACES = ["London", "Princeton", "Cambridge", "Boston", "Zurich", "Geneva", "Vienna", "Prague", "Kyoto", "Lisbon", "Oslo", "Dublin"]
TEMPLATES = (
    "In {year}, {a} moved to {place} to work with {b} on the analytical engine.",
    "{a} met {b} in {place} in {year}, and the two wrote {n} letters about the telegraph network.",
    "The society in {place} paid {n} pounds for the harbour bridge that {a} had proposed in {year}.",
    "{b} later described the work of {a} in {place} as the most difficult project of {year}.",
)


def prose(size: int, seed: int = 11) -> str:
    """About ``size`` characters of English prose with headings, the same for the same arguments."""
    rng = random.Random(seed)
    parts = ["# Works\n\n"]
    total = 0
    paragraph = 0
    while total < size:
        if paragraph % 12 == 0:
            block = f"## Chapter {paragraph // 12 + 1} in {rng.choice(PLACES)}\n\n"
        else:
            block = " ".join(rng.choice(TEMPLATES).format(
                a=f"{rng.choice(FIRST)} {rng.choice(LAST)}", b=f"{rng.choice(FIRST)} {rng.choice(LAST)}",
                place=rng.choice(PLACES), year=rng.randint(1850, 1990), n=rng.randint(2, 90))
                for _ in range(rng.randint(3, 6))) + "\n\n"
        parts.append(block)
        total += len(block)
        paragraph += 1
    return "".join(parts)


def _doc(text: str, uri: str = "big.md") -> DocumentInput:
    doc = document_from_text(text, uri=uri, origin=uri, title="Works")
    assert isinstance(doc, DocumentInput)
    return doc


def _source(conn: psycopg.Connection, name: str) -> int:
    source_id = store.ensure_source(conn, name)
    conn.commit()
    return source_id


# Everything a document leaves in its source, without ids: the same text stored by one statement and in parts
# must give the same rows.
SNAPSHOT = {
    "chunks": "select c.ordinal, c.title, c.content, c.start_line, c.end_line, c.token_count, c.tsv::text "
              "from sag.chunks c where c.source_id = %(s)s order by 1",
    "events": "select e.ordinal, c.ordinal, e.title, e.content from sag.events e "
              "join sag.chunks c on c.source_id = e.source_id and c.id = e.chunk_id where e.source_id = %(s)s "
              "order by 1",
    "keys": "select k.type, k.normalized, k.name, k.event_count from sag.keys k where k.source_id = %(s)s "
            "order by 1, 2",
    "event_keys": "select e.ordinal, k.type, k.normalized, ek.count from sag.event_keys ek "
                  "join sag.events e on e.source_id = ek.source_id and e.id = ek.event_id "
                  "join sag.keys k on k.source_id = ek.source_id and k.id = ek.key_id "
                  "where ek.source_id = %(s)s order by 1, 2, 3",
    "chunk_keys": "select c.ordinal, k.type, k.normalized, ck.count from sag.chunk_keys ck "
                  "join sag.chunks c on c.source_id = ck.source_id and c.id = ck.chunk_id "
                  "join sag.keys k on k.source_id = ck.source_id and k.id = ck.key_id "
                  "where ck.source_id = %(s)s order by 1, 2, 3",
    # (A co-occurrence relation's head is the key with the lower id: ids depend on the order keys were made.)
    "relations": "select least(h.normalized, t.normalized), greatest(h.normalized, t.normalized), r.relation_type, "
                 "r.evidence_count, r.weight from sag.relations r "
                 "join sag.keys h on h.source_id = r.source_id and h.id = r.head_key_id "
                 "join sag.keys t on t.source_id = r.source_id and t.id = r.tail_key_id "
                 "where r.source_id = %(s)s order by 1, 2",
    "pending": "select sign, token_count, tsv::text from sag.term_stats_pending where source_id = %(s)s "
               "order by 1, 2, 3",
}


def snapshot(conn: psycopg.Connection, source_id: int) -> dict[str, list[tuple[object, ...]]]:
    return {name: conn.execute(query, {"s": source_id}).fetchall() for name, query in SNAPSHOT.items()}


def test_a_document_in_parts_stores_what_one_statement_stores(sag: SAG, db_dsn: str) -> None:
    preparer = DocumentPreparer(sag.embedder, sag.extractor())
    first, second = prose(30_000), prose(30_000, seed=12)
    with sag.db.connect(autocommit=True) as conn:
        whole, parted = _source(conn, "whole"), _source(conn, "parted")
        for text in (first, second):  # the second replaces the first: the old version's keys are settled
            prepared = preparer.prepare(_doc(text))
            assert len(prepared.chunks) > 8, "the document must make several parts"
            store.ingest_document(conn, whole, prepared, store.KeyAlignment())
            store.store_in_parts(conn, parted, prepared, prepared.parts(3), store.KeyAlignment())
        expected = snapshot(conn, whole)
        assert expected["relations"] and expected["event_keys"] and expected["pending"]
        assert snapshot(conn, parted) == expected
        assert violations(conn) == {}


def test_a_streamed_document_stores_what_one_statement_stores(sag: SAG) -> None:
    """The runner prepares a document of STREAM_CHARS or more part by part while it stores it."""
    text = prose(STREAM_CHARS + 20_000)
    preparer = DocumentPreparer(sag.embedder, sag.extractor())
    with sag.db.connect(autocommit=True) as conn:
        whole = _source(conn, "whole")
        prepared = preparer.prepare(_doc(text))
        assert len(prepared.chunks) > 2 * PART_CHUNKS
        store.ingest_document(conn, whole, prepared, store.KeyAlignment())
    report = sag.ingest([_doc(text)], source="streamed", bulk=False)
    assert (report.documents, report.failed) == (1, 0), report.errors
    assert (report.chunks, report.events, report.keys) == (
        len(prepared.chunks), len(prepared.events), len(prepared.links))
    with sag.db.connect(autocommit=True) as conn:
        streamed = store.ensure_source(conn, "streamed")
        assert snapshot(conn, streamed) == snapshot(conn, whole)
        assert violations(conn) == {}


def test_a_failure_in_a_later_part_leaves_nothing_of_the_document(sag: SAG) -> None:
    preparer = DocumentPreparer(sag.embedder, sag.extractor())
    old = preparer.prepare(_doc(prose(8_000, seed=3)))
    new = preparer.prepare(_doc(prose(30_000)))

    def parts_then_failure() -> Iterator[PreparedPart]:
        parts = new.parts(3)
        yield next(parts)
        yield next(parts)
        raise RuntimeError("the extractor died")

    with sag.db.connect(autocommit=True) as conn:
        source = _source(conn, "default")
        store.ingest_document(conn, source, old, store.KeyAlignment())
        before = snapshot(conn, source)
        with pytest.raises(RuntimeError, match="extractor died"):
            store.store_in_parts(conn, source, new, parts_then_failure(), store.KeyAlignment())
        # The old version is still there, whole, and nothing of the new one.
        assert snapshot(conn, source) == before
        assert conn.execute("select count(*) from sag.documents").fetchone() == (1,)
        assert violations(conn) == {}


def _env(dsn: str, tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SAG_")}
    return dict(env, SAG_DATABASE_URL=dsn, SAG_HOME=str(tmp_path / "home"))


def test_kill_9_in_the_middle_of_a_big_document_leaves_nothing(db_dsn: str, tmp_path: Path) -> None:
    big = tmp_path / "big.md"
    big.write_text(prose(600_000))
    proc = subprocess.Popen([sys.executable, "-m", "sag_pg", "ingest", "--quiet", str(big)],
                            env=_env(db_dsn, tmp_path), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with psycopg.connect(db_dsn, autocommit=True) as conn:
            deadline = time.monotonic() + 300
            parts = 0
            # Kill it once its transaction has stored a few parts (the count of its chunks, seen only by itself,
            # shows as the backend's progress: wait for the third part's statement).
            while time.monotonic() < deadline and parts < 3:
                row = conn.execute("select count(*) from pg_stat_activity where datname = current_database() "
                                   "and query like 'select sag.add_document_part(%%'").fetchone()
                parts += 1 if row and row[0] else 0
                assert proc.poll() is None, "the ingest ended before it could be killed"
                time.sleep(0.5)
            assert parts >= 3, "the ingest never stored a part"
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and conn.execute(
                    "select count(*) from pg_stat_activity where datname = current_database() "
                    "and pid <> pg_backend_pid() and backend_type = 'client backend'").fetchone()[0]:
                time.sleep(0.1)
            counts = conn.execute("select (select count(*) from sag.documents), (select count(*) from sag.chunks), "
                                  "(select count(*) from sag.events), (select count(*) from sag.keys)").fetchone()
            assert counts == (0, 0, 0, 0)
            assert violations(conn) == {}
    finally:
        if proc.poll() is None:
            proc.kill()


def test_one_big_document_into_a_small_database_rebuilds_the_vector_indexes_once(sag: SAG) -> None:
    """Its rows would each cost an HNSW insertion: with at least BULK_MIN_BYTES of text, and at least as much as
    is stored, the load drops the indexes and builds them once at the end."""
    sag.ingest_text(prose(2_000, seed=5), uri="small.md")
    report = sag.ingest([_doc(prose(BULK_MIN_BYTES + 10_000))])
    assert (report.documents, report.failed) == (1, 0), report.errors
    assert "index" in report.timings
    with sag.db.connect(autocommit=True) as conn:
        hnsw = conn.execute("select count(*) from pg_indexes where schemaname = 'sag' and indexname like '%hnsw'")
        assert hnsw.fetchone() == (3,)
        assert violations(conn) == {}


def test_a_small_document_keeps_the_indexes(sag: SAG) -> None:
    report = sag.ingest([_doc(prose(20_000))])
    assert report.documents == 1 and "index" not in report.timings


def test_prepared_parts_cover_the_document_once() -> None:
    from sag_pg.embedders.hashing import HashEmbedder
    from sag_pg.ingest.extractors import RulesExtractor

    preparer = DocumentPreparer(HashEmbedder(), RulesExtractor())
    doc = _doc(prose(40_000))
    whole = preparer.prepare(doc)
    for parts in (list(whole.parts(4)), list(preparer.prepare_streamed(doc, 4).parts())):
        assert all(len(p.chunks) <= 4 for p in parts)
        assert [c.ordinal for p in parts for c in p.chunks] == list(range(len(whole.chunks)))
        assert [p.event_offset for p in parts] == [sum(len(q.events) for q in parts[:i]) for i in range(len(parts))]
        assert [e.content for p in parts for e in p.events] == [e.content for e in whole.events]
        # Each part's links name its own events and keys, and together they are the document's links.
        links = sorted((p.event_offset + e, p.keys[k].type, p.keys[k].normalized, n)
                       for p in parts for e, k, n in p.links)
        assert links == sorted((e, whole.keys[k].type, whole.keys[k].normalized, n) for e, k, n in whole.links)
        assert all(all(0 <= e < len(p.events) for e, _, _ in p.links) for p in parts)

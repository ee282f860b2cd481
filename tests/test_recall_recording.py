"""Where memory recall is recorded (issue #36 item 7): psql's sag.recall works for a read-only role and in a
read-only transaction (recalling without recording), and a document deleted while a batch of recalls is
written costs only its own statistic, not the batch's."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import psycopg
import pytest
from psycopg import sql

from sag_pg import SAG


@pytest.fixture
def memory(sag: SAG) -> SAG:
    sag.ingest_text("Halvard Systems builds wind turbines in Bergen. Ines Okafor leads Halvard Systems.",
                    uri="halvard.md", source="mem")
    sag.ingest_text("Ines Okafor studied in Tromsø before she joined Halvard Systems.", uri="okafor.md", source="mem")
    return sag


@pytest.fixture
def reader(db_dsn: str) -> Iterator[str]:
    role = f"reader_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("create role {} nologin").format(sql.Identifier(role)))
        conn.execute(sql.SQL("grant usage on schema sag, sag_internal to {}").format(sql.Identifier(role)))
        conn.execute(sql.SQL("grant select on all tables in schema sag to {}").format(sql.Identifier(role)))
    yield role
    with psycopg.connect(db_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("drop owned by {}").format(sql.Identifier(role)))
        conn.execute(sql.SQL("drop role {}").format(sql.Identifier(role)))


def _recalls(dsn: str) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("select coalesce(sum(recall_count), 0) from sag.recall_stats").fetchone()
    return int(row[0]) if row else 0


def _recall(conn: psycopg.Connection) -> list[str]:
    return [uri for (uri,) in conn.execute(
        "select uri from sag.recall('Ines Okafor Halvard', source_ids => "
        "(select array_agg(id) from sag.sources where name = 'mem'))").fetchall()]


def test_a_read_only_role_recalls_in_psql_without_recording(memory: SAG, db_dsn: str, reader: str) -> None:
    before = _recalls(db_dsn)
    with psycopg.connect(db_dsn) as conn:
        conn.execute(sql.SQL("set role {}").format(sql.Identifier(reader)))
        found = _recall(conn)  # record => true by default: it failed with "permission denied" before
    assert set(found) == {"halvard.md", "okafor.md"}
    assert _recalls(db_dsn) == before


def test_a_read_only_transaction_recalls_without_recording(memory: SAG, db_dsn: str) -> None:
    before = _recalls(db_dsn)
    with psycopg.connect(db_dsn) as conn:
        conn.execute("set transaction read only")
        assert set(_recall(conn)) == {"halvard.md", "okafor.md"}
    assert _recalls(db_dsn) == before
    with psycopg.connect(db_dsn) as conn:  # a session that may write records, as before
        _recall(conn)
        conn.commit()
    assert _recalls(db_dsn) == before + 2


def test_a_delete_committed_while_a_batch_is_written_costs_only_its_document(memory: SAG, db_dsn: str) -> None:
    """The race of issue #36: the batch's statement sees the document, its foreign key check waits for the
    delete that holds it, and the delete commits.  The batch is recorded without that document."""
    import threading
    import time

    with psycopg.connect(db_dsn) as conn:
        ids = dict(conn.execute("select uri, id from sag.documents").fetchall())
        source = conn.execute("select id from sag.sources where name = 'mem'").fetchone()[0]  # type: ignore[index]
    deleting = psycopg.connect(db_dsn)
    deleting.execute("select sag.delete_document(%s, %s)", [source, ids["okafor.md"]])  # not committed yet
    result: dict[str, object] = {}

    def record() -> None:
        try:
            with psycopg.connect(db_dsn, application_name="recall-batch") as conn:
                result["written"] = conn.execute("select sag.record_recall(%s, %s)",
                                                 [[ids["halvard.md"], ids["okafor.md"]], [0.9, 0.8]]).fetchone()
        except psycopg.Error as exc:  # what the test reports
            result["error"] = exc

    writer = threading.Thread(target=record)
    writer.start()
    with psycopg.connect(db_dsn, autocommit=True) as watch:
        for _ in range(600):  # until the batch waits on the delete's lock (at most 60 s)
            waiting = watch.execute("select count(*) from pg_stat_activity where application_name = 'recall-batch' "
                                    "and wait_event_type = 'Lock'").fetchone()
            if waiting and waiting[0]:
                break
            time.sleep(0.1)
        else:
            pytest.fail("the batch never waited for the delete")
    deleting.commit()
    deleting.close()
    writer.join(60)
    assert "error" not in result, result.get("error")
    assert result["written"] == (1,)
    with psycopg.connect(db_dsn) as conn:
        stats = conn.execute("select document_id, recall_count from sag.recall_stats").fetchall()
    assert stats == [(ids["halvard.md"], 1)]

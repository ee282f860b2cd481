"""Issue #37 item 13: one document is all-or-nothing — 18 calls of a CPU model over 72 min, and one failed call
threw all of them away.  The extraction answers are kept (sag.llm_answers, keyed by model, purpose, rendered
prompt and schema): a retried ingest asks the model only what it had not answered."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
import pytest

from sag_pg import SAG, Settings

from .integrity import violations
from .openai_server import FakeOpenAIServer, Scripted
from .test_ingest_llm import _last_user, extraction_responder

# Three sections: three chunks, each with its own event and keys calls.
TEXT = ("# Meetings\n\n## London\n\nAda Lovelace met Charles Babbage in London.\n\n"
        "## Cambridge\n\nAlan Turing met Alonzo Church in Cambridge.\n\n"
        "## Harvard\n\nGrace Hopper met Howard Aiken at Harvard.\n")


def _settings(dsn: str, home: Path, server: FakeOpenAIServer) -> Settings:
    return Settings(database_url=dsn, home=home, llm="openai:test-model", llm_base_url=server.base_url,
                    llm_max_retries=0, llm_concurrency=1)


def test_a_retried_document_asks_only_what_was_not_answered(db_dsn: str, empty_db_dsn: str, tmp_path: Path,
                                                            openai_server: FakeOpenAIServer) -> None:
    # What a clean ingest of the document costs, in another database (nothing kept there).
    openai_server.responder = extraction_responder
    with SAG(settings=_settings(empty_db_dsn, tmp_path, openai_server)) as clean:
        assert clean.ingest_text(TEXT, uri="meetings").documents == 1
    needed = openai_server.chat_count
    assert needed >= 6  # summary, then events and keys of three chunks

    # The model fails for good on the last chunk's keys: the document fails.
    openai_server.requests.clear()

    def failing(request: dict[str, Any]) -> str | Scripted:
        if "【事件】" in _last_user(request) and "Grace Hopper" in _last_user(request):
            return Scripted(status=400, body={"error": {"message": "the model crashed"}})
        return extraction_responder(request)

    openai_server.responder = failing
    with SAG(settings=_settings(db_dsn, tmp_path, openai_server)) as sag, pytest.raises(Exception, match="crashed"):
        sag.ingest_text(TEXT, uri="meetings")
    answered_before = openai_server.chat_count - 1  # all but the failed call
    assert 0 < answered_before < needed
    with psycopg.connect(db_dsn) as conn:
        assert conn.execute("select count(*) from sag.documents").fetchone() == (0,)
        assert conn.execute("select count(*) from sag.llm_answers").fetchone() == (answered_before,)

    # The retry: only the calls that had no answer reach the model, and the document is stored whole.
    openai_server.requests.clear()
    openai_server.responder = extraction_responder
    with SAG(settings=_settings(db_dsn, tmp_path, openai_server)) as sag:
        report = sag.ingest_text(TEXT, uri="meetings")
    assert report.documents == 1
    assert openai_server.chat_count == needed - answered_before
    with psycopg.connect(db_dsn) as one, psycopg.connect(empty_db_dsn) as other:
        def stored(conn: psycopg.Connection) -> list[tuple[str, ...]]:
            return conn.execute("select e.content, string_agg(k.name, ',' order by k.name) from sag.events e"
                                " join sag.event_keys ek on ek.source_id = e.source_id and ek.event_id = e.id"
                                " join sag.keys k on k.source_id = ek.source_id and k.id = ek.key_id"
                                " group by e.content order by 1").fetchall()

        assert stored(one) == stored(other)  # the same document as the clean ingest
        assert violations(one) == {}

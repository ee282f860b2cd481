"""Bounded work per question (issue #36 item 4).

* A question longer than ``sag_pg.limits.MAX_QUESTION_CHARS`` is refused first, with one clear message, by the
  Python client, the CLI, MCP and psql's ``sag.search`` (before: a 121 KB question ran for 34 s, and psql had no
  cap at all).
* The search's statement timeout covers everything the search runs: ``SAG.search`` ran the synonyms'
  ``sag.expand_question`` (and the source lookup) before setting it.
* MCP tool calls run together: one lock around every call made a long search hold up all the others.
* The linear rewrites of ``sag.embed_hash``, ``sag.query_terms`` and ``sag.expand_question`` give what they gave
  (long inputs; the figures are in benchmarks/question_scaling.py, not asserted here).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import psycopg
import pytest
from mcp import Client

from sag_pg import SAG
from sag_pg.cli import main
from sag_pg.embedders.hashing import HashEmbedder
from sag_pg.errors import QueryError
from sag_pg.limits import MAX_QUESTION_CHARS
from sag_pg.mcp.server import build_server
from sag_pg.search import engine

ADA = "# Ada Lovelace\n\nAda Lovelace wrote the first published algorithm in 1843 with Charles Babbage."
TOO_LONG = "Who was Ada Lovelace? " * (MAX_QUESTION_CHARS // 22 + 1)
MESSAGE = (f"the question is {len(TOO_LONG):,} characters long; the maximum is {MAX_QUESTION_CHARS:,} "
           "(sag_pg.limits.MAX_QUESTION_CHARS)")


def test_python_and_sql_hold_the_same_maximum(db_conn: psycopg.Connection) -> None:
    assert db_conn.execute("select sag_internal._max_question_chars()").fetchone() == (MAX_QUESTION_CHARS,)


def test_the_client_refuses_a_long_question_in_search_ask_and_recall(sag: SAG) -> None:
    sag.ingest_text(ADA, uri="ada.md")
    assert len(TOO_LONG) > MAX_QUESTION_CHARS
    for call in (lambda: sag.search(TOO_LONG), lambda: sag.ask(TOO_LONG), lambda: sag.recall(TOO_LONG),
                 lambda: sag.search(TOO_LONG, strategy="dataflow")):
        with pytest.raises(QueryError) as refused:
            call()
        assert str(refused.value) == MESSAGE
    at_the_limit = ("Ada Lovelace " * MAX_QUESTION_CHARS)[:MAX_QUESTION_CHARS]
    assert sag.search(at_the_limit, top_n=3).chunks  # the maximum itself is a question


def test_the_cli_prints_one_error_line(db_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    for name, value in {"SAG_DATABASE_URL": db_dsn, "SAG_HOME": str(tmp_path / "home"), "SAG_LLM": "",
                        "SAG_EMBEDDER": ""}.items():
        monkeypatch.setenv(name, value)
    for command in (["search", TOO_LONG], ["ask", TOO_LONG], ["memory", "recall", TOO_LONG]):
        with pytest.raises(SystemExit) as exited:
            main(command)
        out, err = capsys.readouterr()
        assert exited.value.code == 1 and out == ""
        assert err.splitlines() == [f"Error: {MESSAGE}"], err


def test_mcp_refuses_with_the_same_message(sag: SAG) -> None:
    async def main() -> Any:
        async with Client(build_server(sag)) as client:
            return await client.call_tool("search", {"query": TOO_LONG})

    result = anyio.run(main)
    assert result.is_error
    assert result.content[0].text == f"Error executing tool search: {MESSAGE}"  # type: ignore[union-attr]


def test_psql_sag_search_refuses_a_long_question(db_conn: psycopg.Connection) -> None:
    with pytest.raises(psycopg.errors.InvalidParameterValue) as refused:
        db_conn.execute("select * from sag.expand_question(%s)", [TOO_LONG])
    assert refused.value.diag.message_primary == (f"sag.expand_question: the question is {len(TOO_LONG)} characters "
                                                  f"long; the maximum is {MAX_QUESTION_CHARS}")
    db_conn.rollback()
    db_conn.execute("select sag.bind_embedder('hash', 512)")
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="the question is .* the maximum is"):
        db_conn.execute("select * from sag.search(%s, source => null)", [TOO_LONG])


def test_the_search_timeout_covers_the_synonyms_and_the_source_lookup(sag: SAG, db_dsn: str,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A lock on sag.sources stops a search where it first reads it (the source ids, the synonym tables): under
    the timeout now, so the search is cancelled and says so; before, it waited as long as the lock was held."""
    sag.ingest_text(ADA, uri="ada.md")
    sag.configure_source("default", synonyms={"AL": "Ada Lovelace"})
    sag.search("Who was AL?")  # the embedder bound, the kept connection made
    monkeypatch.setattr(engine, "SEARCH_TIMEOUT_MS", 300)
    outcome: dict[str, BaseException | None] = {}

    def search() -> None:
        try:
            sag.search("Who was AL?")
            outcome["error"] = None
        except BaseException as exc:  # noqa: BLE001 - asserted below
            outcome["error"] = exc

    with psycopg.connect(db_dsn) as locker:
        locker.execute("lock table sag.sources in access exclusive mode")
        searcher = threading.Thread(target=search)
        searcher.start()
        searcher.join(30)  # a guard: with the timeout the search ends within 0.3 s of reaching the lock
        ended_while_locked = not searcher.is_alive()
        locker.rollback()
    searcher.join(60)
    assert ended_while_locked, "the search waited on the lock with no timeout"
    assert isinstance(outcome["error"], QueryError) and "was cancelled" in str(outcome["error"])


def test_mcp_calls_are_not_serialised_behind_one_lock(sag: SAG, db_dsn: str) -> None:
    """A search blocked in the database (a lock on sag.chunks) must not hold up list_sources."""
    sag.ingest_text(ADA, uri="ada.md")
    server = build_server(sag)

    async def main() -> tuple[Any, Any]:
        async with Client(server) as client:
            await client.call_tool("search", {"query": "Ada"})  # the lazy parts built
            with psycopg.connect(db_dsn) as locker:
                locker.execute("lock table sag.chunks in access exclusive mode")
                blocked: dict[str, Any] = {}

                async def slow() -> None:
                    blocked["result"] = await client.call_tool("search", {"query": "Who was Ada Lovelace?"})

                async with anyio.create_task_group() as group:
                    group.start_soon(slow)
                    await anyio.sleep(0.5)  # the search reaches the lock
                    try:
                        with anyio.fail_after(20):  # a guard: before, this waited for the search (30 s timeout)
                            listed = await client.call_tool("list_sources", {})
                    finally:
                        locker.rollback()  # the blocked search goes on
                return listed, blocked["result"]

    listed, searched = anyio.run(main)
    assert not listed.is_error and [s["name"] for s in listed.structured_content["sources"]] == ["default"]
    assert not searched.is_error


# -- the linear rewrites give what they gave -----------------------------------------------------------------------

HAN = "曹操与袁绍在官渡展开决战官渡之战中曹操击败袁绍奠定了统一北方的基础的了是在"


@pytest.mark.parametrize("text", [HAN * 200, "x" * 3000 + "abc" * 1000, "word " * 2000 + HAN * 20,
                                  "".join(chr(0x4E00 + (i * 7919) % 20000) for i in range(6000))])
def test_embed_hash_of_long_texts_equals_python(db_conn: psycopg.Connection, text: str) -> None:
    got = db_conn.execute("select sag.embed_hash(%s, 256)", [text]).fetchone()[0].to_numpy()  # type: ignore[index]
    assert np.array_equal(got, HashEmbedder(256).embed([text])[0])


def test_query_terms_of_a_long_chinese_question(sag: SAG, db_dsn: str) -> None:
    sag.ingest_text("曹操与袁绍在官渡展开决战。官渡之战中曹操击败袁绍。", uri="zh.md")
    with psycopg.connect(db_dsn) as conn:
        one = conn.execute("select sag.query_terms('曹操击败袁绍')").fetchone()[0]  # type: ignore[index]
        many = conn.execute("select sag.query_terms(repeat('曹操击败袁绍', 500))").fetchone()[0]  # type: ignore[index]
        unknown = conn.execute("select sag.query_terms(repeat('鑫', 3000))").fetchone()[0]  # type: ignore[index]
    assert "曹操" in one and "袁绍" in one
    assert many == one * 500  # the run segments as its parts, the same words in the same order
    assert unknown == ["鑫" * 3000]  # characters the index does not hold: one unknown word


def test_expand_question_finds_an_alias_after_a_partial_overlap(db_conn: psycopg.Connection) -> None:
    """"AB ABA": the alias ABA occurs at character 0 (not ending at a word's end) and at 2 (a whole word)."""
    db_conn.execute("insert into sag.sources (name, config) values ('s', %s)",
                    ['{"synonyms": {"ABA": "Alpha Beta Alpha", "Big Blue": "IBM"}}'])
    expand = "select sag.expand_question(%s)"
    assert db_conn.execute(expand, ["AB ABA"]).fetchone() == ("AB ABA (Alpha Beta Alpha)",)
    assert db_conn.execute(expand, ["ABAB"]).fetchone() == ("ABAB",)
    long = "Where is big-blue? " + "filler words here " * 200 + "and Big Blue"
    assert db_conn.execute(expand, [long]).fetchone() == (long + " (IBM)",)

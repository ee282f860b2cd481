"""`sag-pg --verbose` says which structured output the LLM's JSON requests used (against the scripted test server)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sag_pg.cli import cli

from .openai_server import FakeOpenAIServer, Scripted, error_body
from .test_ingest_llm import extraction_responder

# One sentence: one events request and one keys request (its one event) are JSON; the summary is text.
DOCUMENT = "# Meeting\n\nAda Lovelace met Charles Babbage in London.\n"


@pytest.fixture
def env(db_dsn: str, openai_server: FakeOpenAIServer, tmp_path: Path) -> dict[str, str]:
    openai_server.responder = extraction_responder
    return {"SAG_DATABASE_URL": db_dsn, "SAG_HOME": str(tmp_path / "home"), "SAG_EMBEDDER": "",
            "SAG_LLM": "openai:test-model", "SAG_LLM_BASE_URL": openai_server.base_url, "SAG_LLM_MAX_RETRIES": "0"}


def _ingest(args: list[str], env: dict[str, str], tmp_path: Path,  # type: ignore[no-untyped-def]
            text: str = DOCUMENT):
    tmp_path.mkdir(exist_ok=True)
    doc = tmp_path / f"{tmp_path.name}.md"  # its URI is its name: one per folder, or the second run skips it
    doc.write_text(text, encoding="utf-8")
    # The same text under another name is the same document unless --allow-duplicates (issue #37.1): these
    # tests want the extraction to run again.
    result = CliRunner().invoke(cli, [*args, "ingest", "--quiet", "--allow-duplicates", str(doc)], env=env,
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def test_verbose_names_json_schema(env: dict[str, str], openai_server: FakeOpenAIServer, tmp_path: Path) -> None:
    result = _ingest(["--verbose"], env, tmp_path)
    url = openai_server.base_url.rstrip("/")
    assert (f"sag-pg: LLM openai:test-model at {url}: structured output json_schema; "
            "JSON answers by mode: json_schema 2") in result.stderr
    assert [r["response_format"]["type"] for r in openai_server.requests if "response_format" in r] == [
        "json_schema", "json_schema"]


def refusing(*formats: str):  # type: ignore[no-untyped-def]
    """The extraction responder behind a server that refuses these response_format types."""
    def responder(request: dict[str, Any]) -> str | Scripted:
        response_format = request.get("response_format") or {}
        kind = response_format.get("type", "") + ("+schema" if "schema" in response_format else "")
        if kind in formats:
            return Scripted(status=422 if kind == "json_schema" else 400,
                            body=error_body(f"unknown parameter 'response_format' of type {kind}"))
        return extraction_responder(request)
    return responder


def test_verbose_names_the_fallback_to_json_object(env: dict[str, str], openai_server: FakeOpenAIServer,
                                                   tmp_path: Path) -> None:
    openai_server.responder = refusing("json_schema")
    result = _ingest(["-v"], env, tmp_path)
    assert "structured output json_object+schema; JSON answers by mode: json_object+schema 2" in result.stderr
    openai_server.responder = refusing("json_schema", "json_object+schema")
    # Another text: the same one's extraction answers are kept (sag_pg.llm.cache) and would not be asked again.
    result = _ingest(["-v"], env, tmp_path / "again", "# Meeting\n\nGrace Hopper met Howard Aiken in Boston.\n")
    assert "structured output json_object; JSON answers by mode: json_object 2" in result.stderr


def test_verbose_names_none_when_response_format_is_refused(env: dict[str, str], openai_server: FakeOpenAIServer,
                                                            tmp_path: Path) -> None:
    openai_server.responder = refusing("json_schema", "json_object+schema", "json_object")
    result = _ingest(["--verbose"], env, tmp_path)
    assert "structured output none; JSON answers by mode: none 2" in result.stderr
    assert "response_format" not in openai_server.requests[-1]


def test_without_verbose_nothing_is_said(env: dict[str, str], tmp_path: Path) -> None:
    assert "structured output" not in _ingest([], env, tmp_path).stderr


def test_verbose_without_llm(env: dict[str, str], tmp_path: Path) -> None:
    result = _ingest(["--verbose"], {**env, "SAG_LLM": ""}, tmp_path)
    assert "sag-pg: no LLM configured (SAG_LLM)" in result.stderr

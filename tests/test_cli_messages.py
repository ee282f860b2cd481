"""What the CLI prints says what happened (issue 37 items 3 and 10): tables with headers, a line where there
is nothing, the files a folder ingest skips, HTML read as its text, messages that match the behaviour."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sag_pg.cli import cli


@pytest.fixture
def env(db_dsn: str, tmp_path: Path) -> dict[str, str]:
    return {"SAG_DATABASE_URL": db_dsn, "SAG_HOME": str(tmp_path / "home"), "SAG_LLM": "", "SAG_EMBEDDER": ""}


def _run(env: dict[str, str], *args: str):  # type: ignore[no-untyped-def]
    result = CliRunner().invoke(cli, list(args), env=env)
    assert "Traceback" not in result.output, result.output
    return result


NOTES = {
    "halvard.md": "# Halvard\n\nHalvard Berg built the lighthouse at Skarvik in 1911 with Ingrid Dahl.\n",
    "ingrid.md": "# Ingrid\n\nIngrid Dahl drew the plans of the Skarvik lighthouse in 1910.\n",
    "voyage.md": "# Voyage\n\nIn 1912 Halvard Berg sailed from Skarvik to Bergen with the lighthouse lens.\n",
}


def _notes(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    for name, text in NOTES.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def test_sources_on_an_empty_database_says_there_are_none(env: dict[str, str]) -> None:
    listed = _run(env, "sources")
    assert listed.exit_code == 0
    assert listed.stdout.startswith("no sources yet")


def test_memory_stats_prints_a_table_of_the_recalled_documents(env: dict[str, str], tmp_path: Path) -> None:
    """It raised KeyError: 'document' whenever there was a row to print (only --json worked)."""
    assert _run(env, "ingest", str(_notes(tmp_path)), "--source", "n").exit_code == 0
    assert _run(env, "memory", "recall", "Skarvik lighthouse", "--source", "n").exit_code == 0
    stats = _run(env, "memory", "stats", "--source", "n")
    assert stats.exit_code == 0, stats.output
    lines = stats.stdout.splitlines()
    assert lines[0].split() == ["recalls", "average", "value", "last", "recall", "document"]
    recalled = {json.loads(_run(env, "memory", "stats", "--source", "n", "--json").stdout)[0]["uri"]}
    assert lines[1].split()[-1] in recalled
    one = _run(env, "memory", "stats", "--source", "n", "--limit", "1")
    assert len(one.stdout.splitlines()) == 2  # the header and one row


def test_cluster_and_communities_list_print_column_headers(env: dict[str, str], tmp_path: Path) -> None:
    assert _run(env, "ingest", str(_notes(tmp_path)), "--source", "n").exit_code == 0
    clustered = _run(env, "cluster", "--source", "n", "--offline-titles")
    assert clustered.exit_code == 0, clustered.output
    lines = clustered.stdout.splitlines()
    assert lines[1].split() == ["#", "events", "title"]  # after the run's summary line
    assert lines[2].split()[0] == "0"
    built = _run(env, "communities", "build", "--source", "n", "--offline", "--min-report-size", "1")
    assert built.exit_code == 0, built.output
    listed = _run(env, "communities", "list", "--source", "n")
    assert listed.exit_code == 0, listed.output
    header, first = listed.stdout.splitlines()[:2]
    assert header.split() == ["id", "level", "events", "rating", "report", "title"]
    assert first.split()[4] == "extractive"
    none = _run(env, "communities", "list", "--source", "n", "--level", "99")
    assert none.stdout.startswith("no community reports at level 99")


def test_the_synonyms_message_says_aliases_are_expanded(env: dict[str, str], tmp_path: Path) -> None:
    """The question is expanded with the canonical name (sag.expand_question), not matched 'only through key
    similarity' as the message said."""
    table = tmp_path / "synonyms.json"
    table.write_text(json.dumps({"Halle": "Halvard Berg"}), encoding="utf-8")
    configured = _run(env, "source", "n", "--create", "--synonyms", str(table), "--no-apply")
    assert configured.exit_code == 0, configured.output
    assert "only through key similarity" not in configured.stderr
    assert "a question naming an alias is searched with its canonical name added" in configured.stderr


def test_delete_help_shows_a_uri_as_documents_lists_it(env: dict[str, str], tmp_path: Path) -> None:
    shown = _run(env, "delete", "--help")
    assert "/abs/" not in shown.stdout and "sag-pg documents" in shown.stdout
    assert "sag-pg delete notes/halvard.md --source research" in shown.stdout
    assert _run(env, "ingest", str(_notes(tmp_path)), "--source", "research").exit_code == 0
    listed = _run(env, "documents", "--source", "research", "--json")
    assert "notes/halvard.md" in [d["uri"] for d in json.loads(listed.stdout)]
    deleted = _run(env, "delete", "notes/halvard.md", "--source", "research")  # the help's example, as written
    assert deleted.exit_code == 0, deleted.output


def test_a_folder_ingest_counts_the_files_it_skips(env: dict[str, str], tmp_path: Path) -> None:
    folder = _notes(tmp_path)
    (folder / "report.pdf").write_bytes(b"%PDF-1.4\n")
    (folder / "table.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    (folder / "data.json").write_text("{}\n", encoding="utf-8")
    (folder / "more.csv").write_text("c\n", encoding="utf-8")
    (folder / ".DS_Store").write_bytes(b"\x00")
    (folder / ".git").mkdir()
    (folder / ".git" / "HEAD").write_text("ref: refs/heads/main\n", encoding="utf-8")
    ingested = _run(env, "ingest", str(folder), "--source", "n")
    assert ingested.exit_code == 0, ingested.output
    assert ("sag-pg: skipped 4 files in the folders given that are not .md, .markdown, .txt, .html, .htm or .jsonl "
            "(2 .csv, 1 .json, 1 .pdf): convert them to text or Markdown first") in ingested.stderr
    clean = _run(env, "ingest", str(folder / "halvard.md"), "--source", "m")
    assert "skipped" not in clean.stderr


def test_html_is_stored_as_its_text(env: dict[str, str], tmp_path: Path) -> None:
    page = tmp_path / "skarvik.html"
    page.write_text(
        "<!DOCTYPE html><html><head><title>Skarvik &amp; its light</title><style>p { color: red }</style>"
        "<script>var tracker = 1;</script></head><body><h1>The lighthouse</h1>"
        "<p>Halvard Berg built the <b>lighthouse</b> at Skarvik in 1911.</p><ul><li>lens: 1912</li>"
        "<li>keeper: Ingrid Dahl</li></ul></body></html>", encoding="utf-8")
    ingested = _run(env, "ingest", str(page), "--source", "web")
    assert ingested.exit_code == 0, ingested.output
    exported = _run(env, "export", "--source", "web")
    record = json.loads(exported.stdout)
    assert record["title"] == "Skarvik & its light"
    assert record["text"] == ("# The lighthouse\n\nHalvard Berg built the lighthouse at Skarvik in 1911.\n\n"
                              "- lens: 1912\n- keeper: Ingrid Dahl")


def test_a_jsonl_error_names_the_column_once(env: dict[str, str], tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"id": "a", "text": "Ada met Babbage."}\n{"id": "b", "text": "unterminated}\n',
                      encoding="utf-8")
    ingested = _run(env, "ingest", str(corpus), "--source", "n")
    assert ingested.exit_code == 1
    assert f"{corpus}:2: not valid JSON (Unterminated string starting at column 21)" in ingested.stderr
    assert "at at" not in ingested.stderr


def test_search_prints_only_chunks_that_score_and_says_so(env: dict[str, str], tmp_path: Path) -> None:
    """Issue 37 item 8: chunks scoring 0.0 padded the list up to --top-n."""
    assert _run(env, "ingest", str(_notes(tmp_path)), "--source", "n").exit_code == 0
    data = json.loads(_run(env, "search", "Bergen", "--source", "n", "--top-n", "30", "--json").stdout)
    scoring, omitted = data["chunks"], data["omitted"]["chunks"]
    assert scoring and omitted > 0, "the case needs zero-score padding to show anything"
    assert all(c["explain"]["direct_match"] or (c["score"] >= 0.00005 and c["explain"]["weight_init"] > 0)
               for c in scoring)  # --json: no padding
    printed = _run(env, "search", "Bergen", "--source", "n", "--top-n", "30")
    ranks = [line for line in printed.stdout.splitlines() if line[:1].isdigit() and ". " in line[:4]]
    assert len(ranks) == len(scoring)
    assert f"only {len(scoring)} relevant: the other {omitted} chunks found scored 0" in printed.stdout


def test_search_local_honours_top_n(env: dict[str, str], tmp_path: Path) -> None:
    """--top-n was ignored by --strategy local: it sets the entities of the context (GraphRAG's
    top_k_mapped_entities)."""
    assert _run(env, "ingest", str(_notes(tmp_path)), "--source", "n").exit_code == 0

    def entities(*extra: str) -> int:
        result = _run(env, "search", "Halvard Berg lighthouse", "--source", "n", "--strategy", "local", "--json",
                      *extra)
        assert result.exit_code == 0, result.output
        return len(json.loads(result.stdout)["entities"])

    # The entities are the keys the question names (Halvard Berg, lighthouse), then keys above the calibrated
    # floor (issue #33 item 4): at least the two names; --top-n caps them.
    assert entities() >= 2
    assert entities("--top-n", "1") == 1

"""`sag-pg kg import|relations|triples|ask` end to end (click's runner, a real database, the scripted LLM)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sag_pg.cli import cli, main

DATA = Path(__file__).parent / "data" / "kg" / "freebase-mini.nt"


@pytest.fixture
def env(db_dsn: str, tmp_path: Path) -> dict[str, str]:
    return {"SAG_DATABASE_URL": db_dsn, "SAG_HOME": str(tmp_path / "home"), "SAG_LLM": "", "SAG_EMBEDDER": ""}


def test_kg_commands(env: dict[str, str], tmp_path: Path, openai_server, capsys) -> None:  # type: ignore[no-untyped-def]
    runner = CliRunner()
    imported = runner.invoke(cli, ["kg", "import", str(DATA), "--source", "fb", "--json"], env=env)
    assert imported.exit_code == 1  # two malformed lines: named, skipped, exit code 1 at the end
    assert f"{DATA}:18: skipped" in imported.stderr and f"{DATA}:19: skipped" in imported.stderr
    counts = json.loads(imported.stdout)
    assert (counts["triples"], counts["bad_lines"], counts["relations"]) == (17, 2, 9)

    rels = runner.invoke(cli, ["kg", "relations", "Ada Lovelace", "--source", "fb", "--question", "Ada husband",
                               "--json"], env=env)
    assert rels.exit_code == 0, rels.output
    # people.person.type.object.type is metadata; out: spouse_s, parents, date_of_birth, height_meters; in:
    # people.marriage.spouse (the CVT), people.person.colleagues.  No question word matches: alphabetical.
    assert [r["relation"] for r in json.loads(rels.stdout)] == [
        "people.marriage.spouse", "people.person.colleagues", "people.person.date_of_birth",
        "people.person.height_meters", "people.person.parents", "people.person.spouse_s"]

    triples = runner.invoke(cli, ["kg", "triples", "m.ada", "people.person.spouse_s", "people.person.parents",
                                  "--source", "fb"], env=env)
    assert triples.exit_code == 0, triples.output
    assert triples.stdout.splitlines() == [
        "[Ada Lovelace, people.person.parents, Lord Byron]",
        # No question: the CVT's relations in discovery order (its relations sorted by name).
        "[Ada Lovelace, person.spouse_s.people.marriage.from_1, 1835-07-08]",
        "[Ada Lovelace, person.spouse_s.people.marriage.spouse_1, William King]",
    ]

    with pytest.raises(SystemExit) as exit_info:
        main(["--dsn", env["SAG_DATABASE_URL"], "kg", "ask", "Who was Ada's husband?", "--source", "fb"])
    assert exit_info.value.code == 1
    assert "needs an LLM" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        main(["--dsn", env["SAG_DATABASE_URL"], "kg", "relations", "Nobody", "--source", "fb"])
    assert exit_info.value.code == 1
    assert "no entity 'Nobody'" in capsys.readouterr().err

    openai_server.script('<kg-query>get_relations("Ada")</kg-query>', "<answer>William King</answer>")
    llm_env = {**env, "SAG_LLM": "openai:test", "SAG_LLM_BASE_URL": openai_server.base_url,
               "SAG_LLM_API_KEY": "k"}
    asked = runner.invoke(cli, ["kg", "ask", "Who was Ada's husband?", "--source", "fb", "--entity", "Ada=m.ada",
                                "--json"], env=llm_env)
    assert asked.exit_code == 0, asked.output
    result = json.loads(asked.stdout)
    assert result["answer"] == "William King" and result["calls"] == 1
    # "Ada" is a topic entity: the registry resolves it.  Of "Who was Ada's husband? Ada" only "s" is in a
    # relation name: people.person.spouse_s ranks first.
    information = [t for t in result["trace"] if t["type"] == "information"]
    assert information[0]["content"].splitlines()[0] == "people.person.spouse_s"


FOAF = """<http://example.org/alice> <http://xmlns.com/foaf/0.1/knows> <http://example.org/bob> .
<http://example.org/alice> <http://xmlns.com/foaf/0.1/name> "Alice" .
<http://example.org/alice> <http://example.org/rel/likes> _:e1 .
_:e1 <http://xmlns.com/foaf/0.1/knows> <http://example.org/alice> .
"""


def test_kg_relations_hints_chooses_a_graph_only_when_one_holds_the_entity(env: dict[str, str], tmp_path: Path,
                                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 37 item 10: predicates outside --namespace were hidden behind a bare "No relations found.", and
    without --source one graph was picked silently; a blank node was printed as ``_:e1``."""
    runner = CliRunner()
    data = tmp_path / "foaf.nt"
    data.write_text(FOAF, encoding="utf-8")
    # The default namespace is Freebase's: every predicate here is stored whole and not shown.
    assert runner.invoke(cli, ["kg", "import", str(data), "--source", "fb"], env=env).exit_code == 0
    hidden = runner.invoke(cli, ["kg", "relations", "http://example.org/alice", "--source", "fb"], env=env)
    assert hidden.exit_code == 0 and hidden.stdout == "No relations found.\n"
    assert ("hint: 'http://example.org/alice' has relations whose predicates were outside the import's "
            "--namespace, which the tools do not show (e.g. http://example.org/rel/likes); import again with "
            "--namespace set to their prefix, e.g. --namespace http://example.org/rel/") in hidden.stderr

    # Under http://example.org/ the nodes are alice, bob and the relation rel.likes.
    for source in ("ex1", "ex2"):
        imported = runner.invoke(cli, ["kg", "import", str(data), "--source", source,
                                       "--namespace", "http://example.org/"], env=env)
        assert imported.exit_code == 0, imported.output
    with pytest.raises(SystemExit) as exit_info:
        main(["--dsn", env["SAG_DATABASE_URL"], "kg", "relations", "alice"])
    assert exit_info.value.code == 1
    assert capsys.readouterr().err == ("Error: 'alice' is in 2 sources (ex1, ex2): choose one with --source "
                                       "(source= in Python)\n")
    chosen = runner.invoke(cli, ["kg", "relations", "alice", "--source", "ex2"], env=env)
    assert chosen.stdout == "rel.likes\n" and "kg: source" not in chosen.stderr

    (tmp_path / "carol.nt").write_text("<http://example.org/carol> <http://example.org/rel/likes> "
                                       "<http://example.org/bob> .\n", encoding="utf-8")
    assert runner.invoke(cli, ["kg", "import", str(tmp_path / "carol.nt"), "--source", "ex3",
                               "--namespace", "http://example.org/"], env=env).exit_code == 0
    only = runner.invoke(cli, ["kg", "relations", "carol"], env=env)
    assert only.exit_code == 0 and only.stdout == "rel.likes\n"
    assert "kg: source 'ex3' (the only one holding 'carol')" in only.stderr

    triples = runner.invoke(cli, ["kg", "triples", "alice", "rel.likes", "--source", "ex1"], env=env)
    assert triples.exit_code == 0, triples.output
    assert triples.stdout == "[alice, rel.likes, (blank node e1)]\n"
    as_json = json.loads(runner.invoke(cli, ["kg", "triples", "alice", "rel.likes", "--source", "ex1", "--json"],
                                       env=env).stdout)
    assert as_json["triples"][0]["tail"] == "_:e1"  # JSON keeps the node's name

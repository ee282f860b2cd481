"""The KG agent loop against the scripted OpenAI-compatible server, over the PostgreSQL backend: parsing, the
entity registry, relation validation errors, the call limit, the LLM filter's fallback and the trace."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sag_pg.db.connection import Database
from sag_pg.kg.agent import KGAgent, parse_query
from sag_pg.kg.backends import PostgresKG
from sag_pg.kg.importer import import_rdf
from sag_pg.llm.openai_llm import OpenAILLM

from .test_kg_tools import _ntriples


@pytest.fixture
def kg(db_dsn: str, tmp_path: Path) -> Iterator[PostgresKG]:
    path = tmp_path / "kg.nt"
    path.write_text(_ntriples(), encoding="utf-8")
    db = Database(db_dsn)
    import_rdf(db, [path], source="kg")
    yield PostgresKG(db, source="kg")
    db.close()


def _llm(server) -> OpenAILLM:  # type: ignore[no-untyped-def]
    return OpenAILLM("test-model", base_url=server.base_url, api_key="k", max_retries=0)


def test_parse_query_follows_the_seed() -> None:
    assert parse_query(' get_relations( "Ada Lovelace" ) ') == ("get_relations", "Ada Lovelace", [])
    assert parse_query("get_triples('m.ada', ['a', \"b\", 'a', 'c', 'd', 'e'])") == (
        "get_triples", "m.ada", ["a", "b", "c", "d"])
    assert parse_query("get_everything('x')") is None
    # Relations written with the ns: prefix or as the full IRI are the dotted names the tools show.
    assert parse_query('get_triples("m.ada", ["ns:people.person.parents", '
                       '"<http://rdf.freebase.com/ns/people/person/parents>"])') == (
        "get_triples", "m.ada", ["people.person.parents"])


def test_agent_loop_registry_validation_and_trace(kg: PostgresKG, openai_server) -> None:  # type: ignore[no-untyped-def]
    openai_server.script(
        "<think>look</think><kg-query>get_relations(\"Ada Lovelace\")</kg-query> ignored",
        '<kg-query>get_triples("Ada Lovelace", ["people.person.not_listed"])</kg-query>',
        '<kg-query>get_triples("Nobody Known", ["people.person.parents"])</kg-query>',
        '<kg-query>get_triples("Ada Lovelace", ["people.person.spouse_s", "people.person.parents"])</kg-query>',
        '<kg-query>get_relations("lord byron")</kg-query>',
        "<kg-query>get_everything()</kg-query>",
        "<answer>William King</answer>",
    )
    agent = KGAgent(kg, _llm(openai_server))
    result = agent.ask("who was Ada Lovelace's spouse?")
    assert result.answer == "William King"
    assert result.calls == 6
    info = [t["content"] for t in result.trace if t["type"] == "information"]
    # 8 relations (hand-ranked in test_kg_tools): <= 10, so no LLM filter.
    assert info[0].split("\n")[:2] == ["people.person.spouse_s", "people.marriage.spouse"]
    assert info[1].startswith("The relation 'people.person.not_listed' is not in the latest predicate list.")
    assert info[1].endswith(info[0])
    assert info[2].startswith("Invalid entity. Use an entity returned by the previous step and copy it exactly.")
    assert "[Ada Lovelace, person.spouse_s.people.marriage.spouse_1, William King]" in info[3]
    # "lord byron" came back in a triple: the registry (lower-cased) resolves it without the database.
    assert agent.registry["lord byron"] == "m.byron" and agent.registry["m.byron"] == "Lord Byron"
    assert info[4] == "people.person.parents"  # Byron's only relation (incoming)
    assert info[5] == "[Could not parse query: get_everything()]"
    assert {t["type"] for t in result.trace} == {"kg_query", "information", "tool_call", "error"}
    triples_call = next(t for t in result.trace if t.get("tool") == "get_triples")
    assert [c["cvt_node_id"] for c in triples_call["cvt_info"]] == ["m.cvt1", "m.cvt1"]
    # The flattened relations became valid choices for later calls.
    assert "person.spouse_s.people.marriage.spouse_1" in agent.seen_relations


def test_call_limit_forces_an_answer(kg: PostgresKG, openai_server) -> None:  # type: ignore[no-untyped-def]
    openai_server.script(*['<kg-query>get_relations("m.ada")</kg-query>'] * 2, "<answer>unknown</answer>")
    result = KGAgent(kg, _llm(openai_server), max_calls=2).ask("anything?")
    assert result.calls == 2 and result.answer == "unknown"
    assert result.trace[-1] == {"type": "error", "content": "max_calls (2) reached"}
    assert "You have used all your knowledge-graph queries" in openai_server.prompts()[-1]


def test_filter_retries_then_falls_back(kg: PostgresKG, openai_server) -> None:  # type: ignore[no-untyped-def]
    agent = KGAgent(kg, _llm(openai_server), backoff=0.001)
    rels = [f"r{i}" for i in range(12)]
    openai_server.fail(500)
    openai_server.fail(500)
    openai_server.script('["r3", "nope", "r1"]')
    assert agent.filter_relations(rels, "q", "e") == ["r3", "r1"]
    openai_server.script("no list here")
    assert agent.filter_relations(rels, "q", "e") == rels[:10]  # unusable: no retry, BM25 order kept
    for _ in range(3):
        openai_server.fail(500)
    assert agent.filter_relations(rels, "q", "e", limit=8) == rels[:8]
    assert sum(1 for t in agent.trace if t["type"] == "error") == 5


# An entity with 14 relations: above 10, so get_relations goes through the LLM filter (shuffled for it).
HUB_RELATIONS = ["test.hub.spouse"] + [f"test.hub.r{i:02d}" for i in range(1, 14)]


@pytest.fixture
def hub_kg(db_dsn: str, tmp_path: Path) -> Iterator[PostgresKG]:
    ns = "http://rdf.freebase.com/ns/"
    path = tmp_path / "hub.nt"
    path.write_text(f'<{ns}m.hub> <{ns}type.object.name> "Hub Person"@en .\n' + "".join(
        f"<{ns}m.hub> <{ns}{relation}> <{ns}m.o{n}> .\n" for n, relation in enumerate(HUB_RELATIONS)),
        encoding="utf-8")
    db = Database(db_dsn)
    import_rdf(db, [path], source="hub")
    yield PostgresKG(db, source="hub")
    db.close()


@pytest.mark.parametrize("filter_answer", ["fails", "unusable"])
def test_a_failing_relation_filter_falls_back_to_the_bm25_top_10(hub_kg: PostgresKG, openai_server,  # type: ignore[no-untyped-def]
                                                                 filter_answer: str) -> None:
    """kg-query-tools §2.4/§4.5: when the filter fails, the BM25 order's first 10, not 10 of the shuffled list."""
    openai_server.script('<kg-query>get_relations("m.hub")</kg-query>')
    if filter_answer == "fails":
        for _ in range(3):  # three attempts, each a server error
            openai_server.fail(500)
    else:
        openai_server.script("I cannot choose.")  # no JSON list: not retried
    openai_server.script("<answer>done</answer>")
    result = KGAgent(hub_kg, _llm(openai_server), backoff=0.001).ask("who was the spouse?")
    assert result.answer == "done"
    # BM25 against "who was the spouse?": only test.hub.spouse shares a word; the 13 others score 0 and
    # tie, alphabetically.  Worked out by hand: the spouse, then r01..r09.
    shown = next(t for t in result.trace if t["type"] == "information")["content"].splitlines()
    assert shown == ["test.hub.spouse"] + [f"test.hub.r{i:02d}" for i in range(1, 10)]
    # The filter was asked (with all 14, in the seeded shuffle), and its failure is in the trace.
    filter_prompt = next(p for p in openai_server.prompts() if "test.hub.r13" in p)
    assert all(r in filter_prompt for r in HUB_RELATIONS)
    if filter_answer == "fails":
        assert sum(1 for t in result.trace if t["type"] == "error" and "relation filter" in t["content"]) == 3

"""The knowledge-graph memory through SAG.graph / SAG.memory / SAG.recall, the CLI, and the LLM relation
extraction against the scripted OpenAI-compatible server.  The SQL math has its own hand-worked tests in
tests/sql/test_graph.py and tests/sql/test_memory.py; these check the wiring."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path

import networkx as nx
import numpy as np
import psycopg
import pytest

from sag_pg.db.graph import CandidateEvent
from sag_pg.errors import NotFoundError, QueryError
from sag_pg.graph.extract import extract_relations
from sag_pg.llm.openai_llm import OpenAILLM
from tests import openai_server as fake_openai
from tests.integrity import violations
from tests.openai_server import FakeOpenAIServer
from tests.cli_support import run_cli as _cli

openai_server = fake_openai.openai_server


def test_graph_operations_through_the_client(sag, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    kg = sag.graph
    ada = kg.add_entity("Ada Lovelace", "person", description="mathematician", tags=["Mathematics", "computing"])
    kg.add_entity("Charles Babbage", "person")
    kg.add_entity("Analytical Engine", "machine")
    kg.add_relation("Ada Lovelace", "worked with", "Charles Babbage", 0.9)
    kg.add_relation("charles babbage", "designed", "Analytical Engine", 0.5)
    # Names resolve as ingestion normalises them; ids work too.
    assert kg.get_entity("ADA  lovelace").id == ada
    assert kg.get_entity(ada).tags == ("mathematics", "computing")
    related = [(r.name, r.distance, round(r.score, 6)) for r in kg.get_related("Ada Lovelace", depth=2)]
    # Babbage 0.9 at 1; the Engine 0.9 * 0.5 / 2 = 0.225 at 2.
    assert related == [("Charles Babbage", 1, 0.9), ("Analytical Engine", 2, 0.225)]
    assert [e.name for e in kg.find_by_keywords(["babbage"])] == ["Charles Babbage"]
    assert kg.find_tags("comp") == ["computing"]
    assert kg.entity_count_by_tag("mathematics") == 1
    assert kg.tag_constraints().max_tags_per_entity == 8
    out = kg.export_graphml("Charles Babbage", tmp_path / "n.graphml", depth=1)
    graph = nx.read_graphml(out)
    assert sorted(d["label"] for _, d in graph.nodes(data=True)) == ["Ada Lovelace", "Analytical Engine",
                                                                    "Charles Babbage"]
    assert sorted((d["relation_type"], d["weight"]) for _, _, d in graph.edges(data=True)) == \
        [("designed", 0.5), ("worked_with", pytest.approx(0.9))]
    assert kg.remove_relation("Ada Lovelace", "Charles Babbage") == 1
    assert kg.remove_entity("Analytical Engine") is True
    assert kg.get_related("Charles Babbage", direction="both") == []
    with pytest.raises(NotFoundError):
        kg.get_related("Nobody")
    with pytest.raises(QueryError, match="direction"):
        kg.get_related("Charles Babbage", direction="sideways")


def test_search_and_recall_record_statistics_and_eviction_keeps_integrity(sag) -> None:  # type: ignore[no-untyped-def]
    docs = {"a.md": "# Apple\n\nSteve Jobs founded Apple in Cupertino in 1976.\n",
            "p.md": "# Pixar\n\nSteve Jobs bought Pixar in 1986.\n",
            "n.md": "# NeXT\n\nNeXT made workstations in Redwood City.\n"}
    for uri, text in docs.items():
        sag.ingest_text(text, uri=uri)
    result = sag.search("Who founded Apple?", top_n=2)
    returned = {c.document_uri for c in result.chunks}
    stats = {r["uri"]: r["recall_count"] for r in sag.memory.stats()}
    assert stats == {uri: 1 for uri in returned}
    sag.record_recalls = False
    sag.search("Who founded Apple?", top_n=2)
    assert {r["uri"]: r["recall_count"] for r in sag.memory.stats()} == stats
    recalled = sag.recall("Steve Jobs Pixar", top_n=3)
    assert recalled and recalled[0].uri == "p.md"
    assert all(r.score == pytest.approx(0.5 * r.overlap + 0.2 * r.graph + 0.1 * r.temporal + 0.2 * r.reference)
               for r in recalled)
    # Capacity 1 keeps the most recently changed document (n.md was ingested last).
    planned = sag.memory.evict("capacity", max_items=1)
    assert sorted(e.uri for e in planned) == ["a.md", "p.md"]
    assert sag.stats()["documents"] == 3
    gone = sag.memory.evict("capacity", max_items=1, dry_run=False)
    assert [e.uri for e in gone] == [e.uri for e in planned]
    assert sag.stats()["documents"] == 1
    with psycopg.connect(sag.dsn) as conn:
        assert {k: v for k, v in violations(conn).items() if v} == {}
    with pytest.raises(QueryError, match="max_items"):
        sag.memory.evict("recall_based")


def test_ingest_makes_cooccurrence_relations_and_delete_takes_them(sag) -> None:  # type: ignore[no-untyped-def]
    sag.ingest_text("# Pixar\n\nSteve Jobs bought Pixar from Lucasfilm in 1986.\n", uri="p.md")
    counts = sag.graph.relation_counts()
    assert counts and counts[0]["origin"] == "cooccurrence" and counts[0]["type"] == "related_to"
    assert sag.delete_document("p.md")
    assert sag.graph.relation_counts() == []


@pytest.fixture
def llm(openai_server: FakeOpenAIServer) -> Iterator[OpenAILLM]:
    client = OpenAILLM("test-model", base_url=openai_server.base_url, backoff_base=0.001, backoff_max=0.01,
                       max_retries=1)
    yield client
    client.close()


EVENTS = [CandidateEvent(11, "d", "Steve Jobs founded Apple.", {"Steve Jobs": 1, "Apple": 2}),
          CandidateEvent(12, "d", "Pixar made Toy Story.", {"Pixar": 3, "Toy Story": 4})]


def test_llm_relations_are_validated_against_the_event_keys(openai_server: FakeOpenAIServer, llm: OpenAILLM) -> None:
    openai_server.script(json.dumps({"relations": [
        {"event": 1, "head": "steve jobs", "type": "Founded", "tail": "Apple", "weight": 0.9},
        {"event": 2, "head": "Pixar", "type": "made", "tail": "Woody"},            # not a key of event 2
        {"event": 3, "head": "Pixar", "type": "made", "tail": "Toy Story"},        # no event 3
        {"event": 2, "head": "Pixar", "type": "made", "tail": "Toy Story", "weight": 7},
        {"event": 2, "head": "Pixar", "type": "  ", "tail": "Toy Story"},
    ]}))
    batch = extract_relations(llm, EVENTS)
    assert [(r.event_id, r.head_id, r.relation_type, r.tail_id, r.weight) for r in batch.relations] == \
        [(11, 1, "founded", 2, 0.9)]
    assert len(batch.rejected) == 4
    assert "Toy Story" in openai_server.prompts()[0] and "keys: Steve Jobs; Apple" in openai_server.prompts()[0]


def test_llm_failure_gives_an_empty_batch(openai_server: FakeOpenAIServer, llm: OpenAILLM) -> None:
    for _ in range(2):  # the first try and the one retry
        openai_server.fail(500)
    batch = extract_relations(llm, EVENTS)
    assert batch.relations == [] and batch.rejected and "LLM failed" in batch.rejected[0]


def test_extract_relations_stores_llm_relations_with_their_event(sag, openai_server: FakeOpenAIServer,  # type: ignore[no-untyped-def]
                                                                 llm: OpenAILLM) -> None:
    sag.ingest_text("# Pixar\n\nSteve Jobs bought Pixar in 1986.\n", uri="p.md")
    sag._llm, sag._llm_resolved = llm, True
    keys = {n for e in sag.graph.relation_counts() for n in [e["type"]]}
    assert keys == {"related_to"}

    def answer(request: dict) -> str:  # the first event's first two keys, whatever the rules extracted
        prompt = request["messages"][-1]["content"]
        names = prompt.split("keys: ", 1)[1].split("\n", 1)[0].split("; ")
        return json.dumps({"relations": [{"event": 1, "head": names[0], "type": "linked to", "tail": names[1],
                                          "weight": 0.8}]})

    openai_server.responder = answer
    counts = sag.graph.extract_relations(uris=["p.md"])
    assert counts["relations"] == 1 and counts["rejected"] == 0
    with psycopg.connect(sag.dsn) as conn:
        assert conn.execute("select relation_type, origin, evidence_count, event_id is not null, round(weight::numeric, 2)::float8 "
                            "from sag.relations where origin = 'llm'").fetchall() == [("linked_to", "llm", 1, True, 0.8)]
        assert {k: v for k, v in violations(conn).items() if v} == {}
    # Done once: the event has an LLM relation now.
    assert sag.graph.extract_relations(uris=["p.md"])["events"] == 0
    assert sag.delete_document("p.md")
    assert sag.graph.relation_counts() == []


def test_cli_graph_and_memory(cli_env: dict[str, str], capsys: pytest.CaptureFixture[str],
                               tmp_path: Path) -> None:
    assert _cli(capsys, "graph", "add", "Ada Lovelace", "--type", "person", "--tag", "Math")[0] == 0
    assert _cli(capsys, "graph", "add", "Charles Babbage", "--type", "person")[0] == 0
    code, out, _ = _cli(capsys, "graph", "add", "--relation", "Ada Lovelace", "worked_with", "Charles Babbage",
                        "--weight", "0.7")
    assert code == 0 and "worked_with" in out
    code, out, _ = _cli(capsys, "graph", "related", "Ada Lovelace", "--json", "--graphml", str(tmp_path / "a.graphml"))
    assert code == 0 and [(r["name"], r["distance"]) for r in json.loads(out)] == [("Charles Babbage", 1)]
    assert (tmp_path / "a.graphml").exists()
    code, out, _ = _cli(capsys, "graph", "tags", "--prefix", "ma")
    assert (code, out.split()) == (0, ["math"])
    code, out, _ = _cli(capsys, "graph", "relations", "--json")
    assert code == 0 and json.loads(out) == [{"origin": "call", "type": "worked_with", "relations": 1, "evidence": 1}]
    code, _, err = _cli(capsys, "graph", "related", "Nobody")
    assert code == 1 and "no entity named 'Nobody'" in err
    code, _, err = _cli(capsys, "memory", "evict", "--policy", "capacity")
    assert code == 1 and "max_items" in err
    code, _, err = _cli(capsys, "memory", "evict", "--policy", "capacity", "--max-items", "0", "--dry-run")
    assert code == 0 and "0 document(s) would be evicted" in err
    code, out, _ = _cli(capsys, "memory", "recall", "Babbage", "--json")
    assert code == 0 and json.loads(out) == []
    assert _cli(capsys, "memory", "stats")[0] == 0


def test_get_related_on_the_demo_bridge_matches_shortest_paths(sag) -> None:  # type: ignore[no-untyped-def]
    """NeXT bridges two demo documents; get_related's distances and scores equal those networkx computes on
    the same relations (breadth first over an undirected graph, best weight product over shortest paths)."""
    from sag_pg.demo import demo_paths

    sag.ingest_files([p for p in demo_paths() if "tech-company" in str(p)], source="demo")
    found = sag.graph.get_related("NeXT", depth=2, direction="both", limit=100_000, source="demo")
    with psycopg.connect(sag.dsn) as conn:
        edges = conn.execute("select head_key_id, tail_key_id, weight from sag.relations").fetchall()
        start = conn.execute("select id from sag.keys where normalized = 'next' order by event_count desc limit 1"
                             ).fetchone()[0]
    graph = nx.Graph()
    for h, t, w in edges:
        graph.add_edge(h, t, weight=max(w, graph.get_edge_data(h, t, {"weight": 0})["weight"]))
    distances = nx.single_source_shortest_path_length(graph, start, cutoff=2)
    del distances[start]
    assert {r.id: r.distance for r in found} == distances
    assert {r.distance for r in found} == {1, 2}
    for r in found:
        best = max(np.prod([graph[a][b]["weight"] for a, b in itertools.pairwise(p)]) for p in nx.all_shortest_paths(graph, start, r.id))
        assert r.path_weight == pytest.approx(best, rel=1e-5) and r.score == pytest.approx(best / r.distance, rel=1e-5)


def test_a_search_answers_when_its_recall_cannot_be_recorded(sag, caplog: pytest.LogCaptureFixture) -> None:  # type: ignore[no-untyped-def]
    sag.ingest_text("# Apple\n\nSteve Jobs founded Apple in 1976.\n", uri="a.md")
    with psycopg.connect(sag.dsn, autocommit=True) as conn:   # as on a standby: new sessions cannot write
        conn.execute(psycopg.sql.SQL("alter database {} set default_transaction_read_only = on").format(
            psycopg.sql.Identifier(conn.info.dbname)))
    assert sag.search("Who founded Apple?").chunks
    sag.memory.flush()
    assert "recall statistics of 1 searches not recorded" in caplog.text
    assert sag.search("Who founded Apple?").chunks   # the recorder goes on after a failed write


def test_the_recorder_survives_a_database_that_went_away(empty_db_dsn: str, caplog: pytest.LogCaptureFixture) -> None:
    from sag_pg.db.connection import Database
    from sag_pg.graph.recorder import RecallRecorder
    from tests.conftest import SERVER

    recorder = RecallRecorder(Database(empty_db_dsn))
    name = psycopg.conninfo.conninfo_to_dict(empty_db_dsn)["dbname"]
    with psycopg.connect(SERVER.dsn(SERVER.maintenance_db), autocommit=True) as admin:
        admin.execute(psycopg.sql.SQL("drop database {} with (force)").format(psycopg.sql.Identifier(name)))
    recorder.add([1, 2], [0.5, 0.25])
    recorder.flush()
    recorder.close()
    assert "recall statistics of 1 searches not recorded" in caplog.text

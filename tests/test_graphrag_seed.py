"""GraphRAG against the seed and GraphRAG's defaults (issue 34.5): hierarchical Leiden with a maximum community
size, global search's level 2, seeded report shuffle and general-knowledge option, DRIFT's defaults (5 primer
folds, 20 follow-ups, shuffled actions, the root's answer) and the conversation history of every mode."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import networkx as nx
from click.testing import CliRunner

from sag_pg import SAG
from sag_pg.cli import cli
from sag_pg.graphrag import DriftParams, GlobalParams
from sag_pg.graphrag.global_search import GENERAL_KNOWLEDGE
from sag_pg.graphrag.hierarchy import leiden_levels, parents

from .openai_server import FakeOpenAIServer
from .test_graphrag import batch_ids, demo, rows, tech_dsn, with_llm  # noqa: F401  (demo, tech_dsn: fixtures)

# -- the hierarchy ---------------------------------------------------------------------------------------------


def _ring_of_cliques(cliques: int, size: int) -> nx.Graph:
    graph = nx.ring_of_cliques(cliques, size)
    nx.set_edge_attributes(graph, 1.0, "weight")
    graph.add_node(1000)  # an event without an edge
    return graph


def test_leiden_levels_partition_every_node_nest_and_repeat() -> None:
    graph = _ring_of_cliques(8, 5)
    levels = leiden_levels(graph, max_cluster_size=10)
    for level in levels:
        assert sorted(n for members in level for n in members) == sorted(graph.nodes)  # a partition of all
    assert [1000] in levels[0]  # the lonely event is a community of its own
    up = parents(levels)
    for depth in range(1, len(levels)):
        above = levels[depth - 1]
        for i, members in enumerate(levels[depth]):
            assert set(members) <= set(above[up[depth][i]])  # nested in its parent
    # Only communities of max_cluster_size or more are split again; the others are carried down unchanged.
    for depth in range(1, len(levels)):
        for members in levels[depth - 1]:
            if len(members) < 10:
                assert members in levels[depth]
    assert levels == leiden_levels(graph, max_cluster_size=10)  # the seed makes it repeatable
    # One level when nothing is larger than the maximum: 8 cliques of 5 (Leiden finds the cliques).
    whole = leiden_levels(graph, max_cluster_size=1000)
    assert len(whole) == 1 and sorted(map(len, whole[0])) == [1] + [5] * 8


def test_communities_build_uses_hierarchical_leiden(demo: SAG, tech_dsn: str) -> None:  # noqa: F811
    params = rows(tech_dsn, "select params from sag.cluster_runs where params->>'kind' = 'hierarchy'")[0][0]
    assert (params["method"], params["max_cluster_size"], params["leiden_seed"]) == ("leiden", 10, 0xDEADBEEF)
    run = rows(tech_dsn, "select sag.hierarchy_run('demo')")[0][0]
    # A community of fewer than 10 events has one child, of the same events (its report reused); one of 10 or
    # more is split when Leiden finds a split (graspologic splits membership counts >= max_cluster_size).
    pairs = rows(tech_dsn, """
        select p.size, p.membership_hash, array_agg(c.membership_hash)
          from sag.clusters p join sag.clusters c on c.parent_id = p.id
         where p.run_id = %s group by p.id, p.size, p.membership_hash""", [run])
    assert pairs
    for size, parent_hash, children in pairs:
        if size < 10:
            assert children == [parent_hash]
    assert any(len(children) > 1 for size, _, children in pairs if size >= 10)


# -- global search --------------------------------------------------------------------------------------------


def _global_responder(score: int = 50) -> Any:
    def respond(request: dict[str, Any]) -> str:
        prompt = request["messages"][-1]["content"]
        if "---Analyst Reports---" in prompt:
            return "Reduced."
        return json.dumps({"points": [{"description": "a point", "score": score}]})
    return respond


def test_global_search_reads_level_2_shuffled(demo: SAG, tech_dsn: str,  # noqa: F811
                                              openai_server: FakeOpenAIServer) -> None:
    finest = rows(tech_dsn, "select max(level) from sag.hierarchy_levels(sag.hierarchy_run('demo'))")[0][0]
    level = min(2, finest)
    assert level >= 1
    openai_server.responder = _global_responder()
    answer = with_llm(demo, openai_server).ask("Themes?", mode="global", source="demo",
                                               params=GlobalParams(max_tokens=400))
    assert answer.context["level"] == level
    wanted = [r[0] for r in rows(tech_dsn, "select id from sag.community_reports('demo', %s)", [level])]
    mapped = [batch_ids(r["messages"][-1]["content"]) for r in openai_server.requests[:-1]]
    assert sorted(i for ids in mapped for i in ids) == sorted(wanted)
    # In the seeded shuffle's order (sag.report_batches, seed 86), not best rated first.
    shuffled = [i for r in rows(tech_dsn, "select report_ids from sag.report_batches('demo', %s, 400) order by batch",
                                [level]) for i in r[0]]
    assert sorted(mapped, key=lambda ids: shuffled.index(ids[0])) and \
        [i for ids in sorted(mapped, key=lambda ids: shuffled.index(ids[0])) for i in ids] == shuffled
    ranked = [i for r in rows(tech_dsn, "select report_ids from sag.report_batches('demo', %s, 400, shuffle => false) "
                                      "order by batch", [level]) for i in r[0]]
    assert shuffled != ranked and sorted(shuffled) == sorted(ranked)


def test_global_search_general_knowledge_option(demo: SAG, openai_server: FakeOpenAIServer) -> None:  # noqa: F811
    openai_server.responder = _global_responder()
    sag = with_llm(demo, openai_server)
    sag.ask("Themes?", mode="global", source="demo", params=GlobalParams(level=0))
    assert "[LLM: verify]" not in openai_server.requests[-1]["messages"][-1]["content"]
    openai_server.requests.clear()
    sag.ask("Themes?", mode="global", source="demo", params=GlobalParams(level=0, allow_general_knowledge=True))
    reduce_prompt = openai_server.requests[-1]["messages"][-1]["content"]
    assert reduce_prompt.endswith("\n" + GENERAL_KNOWLEDGE) and "[LLM: verify]" in reduce_prompt
    # Every point scored 0: without the option there is no reduce call; with it the LLM still answers.
    openai_server.responder = _global_responder(score=0)
    openai_server.requests.clear()
    nothing = sag.ask("Themes?", mode="global", source="demo", params=GlobalParams(level=0))
    assert "unable to answer" in nothing.text and all("---Analyst Reports---" not in r["messages"][-1]["content"]
                                                       for r in openai_server.requests)
    known = sag.ask("Themes?", mode="global", source="demo", params=GlobalParams(level=0,
                                                                                 allow_general_knowledge=True))
    assert known.text == "Reduced."


# -- conversation history -----------------------------------------------------------------------------------

HISTORY = [{"role": "user", "content": "Who founded Apple?"}, {"role": "assistant", "content": "Jobs and Wozniak."},
           {"role": "user", "content": "And Pixar?"}]
TABLE = "-----Conversation History-----\nturn|content\nuser|And Pixar?\nuser|Who founded Apple?"


def test_history_goes_before_every_map_batch_from_the_cli(demo: SAG, tech_dsn: str, tmp_path: Path,  # noqa: F811
                                                          openai_server: FakeOpenAIServer) -> None:
    openai_server.responder = _global_responder()
    history = tmp_path / "history.json"
    history.write_text(json.dumps(HISTORY), encoding="utf-8")
    env = {"SAG_DATABASE_URL": tech_dsn, "SAG_HOME": str(tmp_path / "home"), "SAG_LLM": "openai:fake",
           "SAG_LLM_BASE_URL": openai_server.base_url, "SAG_EMBEDDER": ""}
    out = CliRunner().invoke(cli, ["ask", "What else?", "--mode", "global", "--source", "demo", "--history",
                                   str(history), "--json"], env=env)
    assert out.exit_code == 0, out.output
    maps = [r["messages"][-1]["content"] for r in openai_server.requests[:-1]]
    assert maps and all(TABLE + "\n\n-----Reports-----" in prompt for prompt in maps)
    assert all("Jobs and Wozniak" not in prompt for prompt in maps)  # the user's turns only (GraphRAG default)
    wrong = CliRunner().invoke(cli, ["ask", "Q?", "--mode", "fast", "--history", str(history)], env=env)
    assert wrong.exit_code == 2 and "--history: only with --mode local, global or drift" in wrong.output
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"role": "system", "content": "x"}]), encoding="utf-8")
    refused = CliRunner().invoke(cli, ["ask", "Q?", "--mode", "global", "--source", "demo", "--history", str(bad)],
                                 env=env)
    assert refused.exit_code != 0 and "role must be user or assistant" in str(refused.exception or refused.output)


def test_local_search_history_in_the_prompt_and_the_entity_match(demo: SAG,  # noqa: F811
                                                                  openai_server: FakeOpenAIServer) -> None:
    openai_server.responder = lambda request: "Local answer."
    sag = with_llm(demo, openai_server)
    plain = sag.ask("And Pixar?", mode="local", source="demo")
    answer = sag.ask("What else did he found?", mode="local", source="demo", history=HISTORY)
    prompt = openai_server.requests[-1]["messages"][-1]["content"]
    assert TABLE + "\n\n-----Reports-----" in prompt and answer.text == "Local answer."
    # The earlier questions join the text the entities are matched with: Pixar's entities come in.
    assert "Pixar" in answer.context["context_text"].split("-----Relationships-----")[0]
    assert plain.context["context_text"] != answer.context["context_text"]


# -- DRIFT ----------------------------------------------------------------------------------------------------


def _drift_responder(follow_ups: int = 6) -> Any:
    def respond(request: dict[str, Any]) -> str:
        prompt = request["messages"][-1]["content"]
        if prompt.startswith("Create a hypothetical answer"):
            return "A hypothetical report."
        if "The top-ranked community summaries" in prompt:
            return json.dumps({"intermediate_answer": "# Primer", "score": 60,
                               "follow_up_queries": [f"q{i}" for i in range(follow_ups)]})
        if "overall research question" in prompt:
            query = prompt.split("---Question---\n\n", 1)[1].split("\n", 1)[0]
            return json.dumps({"response": f"answer to {query}", "score": 50, "follow_up_queries": []})
        return "Reduced."
    return respond


def test_drift_defaults_are_graphrag_and_the_answer_is_the_root_node(demo: SAG, tech_dsn: str,  # noqa: F811
                                                                     openai_server: FakeOpenAIServer) -> None:
    params = DriftParams()
    assert (params.n_depth, params.k_followups, params.primer_folds, params.primer_k) == (3, 20, 5, 20)
    openai_server.responder = _drift_responder()
    answer = with_llm(demo, openai_server).ask("What did Apple's founders do?", mode="drift", source="demo")
    trace = answer.context
    primer = len(trace["primer_reports"])
    assert primer == min(20, rows(tech_dsn, "select count(*) from sag.community_reports('demo', %s)",
                                  [trace["level"]])[0][0])
    folds = min(5, primer)
    data = answer.to_dict()
    assert data["llm_calls_categories"] == {"hyde": 1, "primer": folds, "local": 6}  # no reduce call
    root = trace["nodes"][0]
    # The root joins the folds' intermediate answers; the answer is the root's (seed: node_list[0]).
    assert root["answer"] == "\n\n".join(["# Primer"] * folds) == answer.text
    assert trace["reduce"] is None


def test_drift_actions_are_shuffled_with_a_seed(demo: SAG, openai_server: FakeOpenAIServer) -> None:  # noqa: F811
    openai_server.responder = _drift_responder()
    sag = with_llm(demo, openai_server)

    def answered(seed: int) -> list[str]:
        answer = sag.ask("Q?", mode="drift", source="demo",
                         params=DriftParams(n_depth=1, k_followups=2, primer_folds=1, seed=seed))
        return sorted(n["query"] for n in answer.context["nodes"][1:] if n["status"] == "done")

    first = {seed: answered(seed) for seed in range(6)}
    assert first[3] == answered(3)  # repeatable
    assert all(len(v) == 2 for v in first.values())
    assert any(v != ["q0", "q1"] for v in first.values())  # not the order they were asked in
    unshuffled = sag.ask("Q?", mode="drift", source="demo",
                         params=DriftParams(n_depth=1, k_followups=2, primer_folds=1, shuffle=False))
    assert [n["query"] for n in unshuffled.context["nodes"] if n["status"] == "done"][1:] == ["q0", "q1"]

"""GraphRAG (issue 19): the community hierarchy and reports offline on the demo corpus, local search, the CLI,
and global / DRIFT search against the scripted OpenAI-compatible server (batching, trace, token counts, bad JSON).
"""

from __future__ import annotations

import json
import math
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner

from sag_pg import SAG, Settings
from sag_pg.cli import cli
from sag_pg.cluster import EventSelection
from sag_pg.demo import demo_paths
from sag_pg.errors import ConfigError
from sag_pg.graphrag import DriftParams, GlobalParams
from sag_pg.graphrag.reports import extractive_report, size_rating
from sag_pg.llm.openai_llm import OpenAILLM

from .databases import CorpusDatabases
from .openai_server import FakeOpenAIServer, Scripted

TECH = [p for p in demo_paths() if p.parent.name == "tech-company"]


def _fill_tech(dsn: str) -> None:
    with tempfile.TemporaryDirectory() as home, SAG(settings=Settings(database_url=dsn, home=Path(home))) as sag:
        sag.ingest_files(TECH, source="demo")  # the English half of the demo corpus keeps the tests quick
        sag.build_communities(EventSelection(source="demo"))


@pytest.fixture
def tech_dsn(corpus_databases: CorpusDatabases) -> Iterator[str]:
    """A fresh database holding the demo's tech-company documents in source demo and their community hierarchy
    (a copy of one built once per session)."""
    yield corpus_databases.copy("tech-communities", _fill_tech)
    corpus_databases.drop_copy("tech-communities")


@pytest.fixture
def demo(tech_dsn: str, tmp_path: Path) -> SAG:
    return SAG(settings=Settings(database_url=tech_dsn, home=tmp_path / "home"))


def rows(dsn: str, query: str, args: list[Any] | None = None) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn) as conn:
        return conn.execute(query, args or []).fetchall()


# -- reports on their own ---------------------------------------------------------------------------------


def test_size_rating_is_log_size_over_the_largest() -> None:
    assert size_rating(7, 7) == 10.0
    assert size_rating(3, 7) == 6.67  # 10 ln 4 / ln 8 = 10 x 2/3
    assert size_rating(1, 1) == 10.0


def test_extractive_report_findings_follow_the_top_keys() -> None:
    keys = [{"id": 1, "type": "person", "name": "Jobs", "score": 4.0},
            {"id": 2, "type": "topic", "name": "NeXT", "score": 1.0}]
    events = [(1, "", "Jobs founded Apple in 1976."), (2, "", "In 1985 he founded NeXT.")]
    draft = extractive_report("Jobs · NeXT", 2, 4, keys, events)
    assert draft.kind == "extractive"
    assert draft.findings == [
        {"summary": "person: Jobs", "explanation": "Jobs founded Apple in 1976.", "rating": 10.0},
        {"summary": "topic: NeXT", "explanation": "In 1985 he founded NeXT.", "rating": 2.5}]
    assert draft.rating == round(10 * math.log(3) / math.log(5), 2)
    assert draft.summary == "Jobs founded Apple in 1976. In 1985 he founded NeXT."  # two sentences: both kept
    assert draft.full_content.startswith("# Jobs · NeXT\n\nJobs founded Apple in 1976.")


# -- the hierarchy, offline ------------------------------------------------------------------------------


def test_hierarchy_levels_nest_and_every_community_has_a_report(demo: SAG, tech_dsn: str) -> None:
    run = rows(tech_dsn, "select sag.hierarchy_run('demo')")[0][0]
    events = rows(tech_dsn, "select count(*) from sag.events")[0][0]
    levels = rows(tech_dsn, "select level, communities, events, reports, llm_reports from sag.hierarchy_levels(%s)",
                  [run])
    assert len(levels) >= 2
    for level, count, held, reports, llm in levels:
        assert held == events  # every event once per level
        assert llm == 0
    assert [lv[1] for lv in levels] == sorted(lv[1] for lv in levels)  # finer levels have more communities
    # Each community's events lie inside its parent's.
    outside = rows(tech_dsn, """
        select count(*) from sag.clusters c join sag.cluster_events ce on ce.cluster_id = c.id
         where c.run_id = %s and c.parent_id is not null
           and not exists (select 1 from sag.cluster_events p where p.cluster_id = c.parent_id
                            and p.event_id = ce.event_id)""", [run])[0][0]
    assert outside == 0
    assert rows(tech_dsn, "select count(*) from sag.clusters where run_id = %s and level > 0 and parent_id is null",
                [run])[0][0] == 0
    # Communities of two or more events have an extractive report; the largest of level 0 is rated 10.
    missing = rows(tech_dsn, "select count(*) from sag.clusters c where c.run_id = %s and c.size >= 2 and not exists "
                           "(select 1 from sag.community_reports r where r.cluster_id = c.id)", [run])[0][0]
    assert missing == 0
    top = rows(tech_dsn, "select r.kind, r.rating from sag.clusters c join sag.community_reports r on r.cluster_id = c.id "
                       "where c.run_id = %s and c.level = 0 order by c.size desc, c.ordinal limit 1", [run])
    assert top == [("extractive", 10.0)]


def test_rebuild_reuses_reports_of_unchanged_communities(demo: SAG, tech_dsn: str) -> None:
    reported = rows(tech_dsn, "select count(*) from sag.community_reports")[0][0]
    again = demo.build_communities(EventSelection(source="demo"))
    assert (again.reports_written, again.reports_reused, again.removed_runs) == (0, reported, 1)
    assert rows(tech_dsn, "select count(*) from sag.cluster_runs where params->>'kind' = 'hierarchy'")[0][0] == 1
    # A changed corpus: only the communities whose membership changed get a new report.
    demo.delete_document(str(next(p for p in TECH if p.name == "pixar.md").resolve()), source="demo")
    changed = demo.build_communities(EventSelection(source="demo"))
    assert changed.reports_written >= 1 and changed.reports_reused >= 1
    stale = rows(tech_dsn, "select count(*) from sag.clusters c join sag.community_reports r on r.cluster_id = c.id "
                         "where r.membership_hash <> c.membership_hash")[0][0]
    assert stale == 0


# -- local search, offline ------------------------------------------------------------------------------


def test_local_context_on_the_demo(demo: SAG) -> None:
    ctx = demo.local_context("Who founded Apple with Steve Jobs?", source="demo")
    assert {"reports", "entities", "relationships", "sources", "context_text", "tokens"} <= ctx.keys()
    assert ctx["entities"] and ctx["relationships"] and ctx["sources"] and ctx["reports"]
    assert ctx["tokens"]["total"] <= 12_000
    for table, budget in (("reports", 1800), ("sources", 6000)):
        assert 0 < ctx["tokens"][table] <= budget
    assert ctx["tokens"]["entities"] + ctx["tokens"]["relationships"] <= 4200
    text = ctx["context_text"]
    sections = re.findall(r"^-----(\w+)-----$", text, flags=re.MULTILINE)
    assert sections == ["Reports", "Entities", "Relationships", "Sources"]
    assert "Wozniak" in text


def test_search_strategy_local_json_and_no_llm_errors(demo: SAG, tech_dsn: str, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    env = {"SAG_DATABASE_URL": tech_dsn, "SAG_HOME": str(tmp_path / "home"), "SAG_LLM": "", "SAG_EMBEDDER": ""}
    runner = CliRunner()
    out = runner.invoke(cli, ["search", "Who designed the Apple II?", "--strategy", "local", "--json",
                              "--source", "demo"], env=env)
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["entities"] and data["sources"] and data["reports"]
    from sag_pg.cli import main

    for mode in ("global", "drift", "local"):
        with pytest.raises(SystemExit) as exit_info:
            main(["--dsn", tech_dsn, "--llm", "", "ask", "What are the main themes?", "--mode", mode, "--source", "demo"])
        assert exit_info.value.code == 1
        assert f"{mode} search needs an LLM: set SAG_LLM" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="SAG_LLM"):
        demo.ask("What are the main themes?", mode="global", source="demo")


def test_communities_cli(db_dsn: str, tmp_path: Path) -> None:
    env = {"SAG_DATABASE_URL": db_dsn, "SAG_HOME": str(tmp_path / "home"), "SAG_LLM": "", "SAG_EMBEDDER": ""}
    runner = CliRunner()
    missing = runner.invoke(cli, ["communities", "list", "--source", "demo"], env=env)
    assert missing.exit_code == 1  # no such source yet
    assert runner.invoke(cli, ["ingest", *map(str, TECH), "--source", "demo"], env=env).exit_code == 0
    nothing = runner.invoke(cli, ["communities", "list", "--source", "demo"], env=env)
    assert nothing.exit_code == 1 and "communities build" in str(nothing.exception)
    built = runner.invoke(cli, ["communities", "build", "--source", "demo", "--max-levels", "2", "--json"], env=env)
    assert built.exit_code == 0, built.output
    result = json.loads(built.output)
    assert [lv["level"] for lv in result["levels"]] == [0, 1]
    listed = json.loads(runner.invoke(cli, ["communities", "list", "--source", "demo", "--level", "0", "--json"],
                                      env=env).output)
    assert listed and all(r["level"] == 0 and r["kind"] == "extractive" for r in listed)
    shown = runner.invoke(cli, ["communities", "show", str(listed[0]["id"])], env=env)
    assert shown.exit_code == 0 and listed[0]["title"] in shown.output and "extractive" in shown.output
    assert runner.invoke(cli, ["communities", "show", "999999"], env=env).exit_code == 1


# -- with the scripted LLM server -----------------------------------------------------------------------


def llm_for(server: FakeOpenAIServer) -> OpenAILLM:
    return OpenAILLM("fake", base_url=server.base_url, max_retries=0, concurrency=2, backoff_base=0.001)


def with_llm(demo: SAG, server: FakeOpenAIServer) -> SAG:
    return SAG(settings=demo.settings, llm=llm_for(server))


def batch_ids(prompt: str) -> list[int]:
    table = prompt.split("-----Reports-----\nid|title|occurrence weight|content|rank\n", 1)[1]
    table = table.split("\n\nThe response should be JSON", 1)[0]
    return [int(line.split("|", 1)[0]) for line in table.splitlines()]


def test_global_search_batches_within_the_budget(demo: SAG, tech_dsn: str, openai_server: FakeOpenAIServer) -> None:
    level0 = [r[0] for r in rows(tech_dsn, "select id from sag.community_reports('demo', 0)")]
    budget = 400

    def respond(request: dict[str, Any]) -> Scripted:
        prompt = request["messages"][-1]["content"]
        if "---Analyst Reports---" in prompt:
            return Scripted(content="The answer.", usage=(100, 20))
        ids = batch_ids(prompt)
        # The first report's batch says nothing (score 0); the others one point each, scored by their size.
        score = 0 if level0[0] in ids else 10 * len(ids)
        return Scripted(content=json.dumps({"points": [{"description": f"point of {ids}", "score": score}]}),
                        usage=(50, 10))

    openai_server.responder = respond
    sag = with_llm(demo, openai_server)
    answer = sag.ask("What are the main themes?", mode="global", source="demo",
                     params=GlobalParams(level=0, max_tokens=budget))
    batches = answer.context["batches"]
    assert len(batches) >= 2
    assert sorted(i for b in batches for i in b["report_ids"]) == sorted(level0)  # each report once
    with psycopg.connect(tech_dsn) as conn:
        for request in openai_server.requests[:-1]:
            prompt = request["messages"][-1]["content"]
            table = "-----Reports-----" + prompt.split("-----Reports-----", 1)[1].split("\n\nThe response", 1)[0]
            assert conn.execute("select sag.estimate_tokens(%s)", [table]).fetchone()[0] <= budget
    reduce_prompt = openai_server.requests[-1]["messages"][-1]["content"]
    assert reduce_prompt.count("----Analyst") == len(batches) - 1  # the 0-scored point was dropped
    assert answer.context["reduce"]["dropped_zero"] == 1
    assert answer.text == "The answer."
    n = len(batches)
    assert answer.to_dict()["llm_calls"] == n + 1
    assert answer.to_dict()["prompt_tokens"] == 50 * n + 100
    assert answer.to_dict()["output_tokens"] == 10 * n + 20
    assert answer.to_dict()["llm_calls_categories"] == {"map": n, "reduce": 1}


def test_global_search_malformed_json_is_retried_then_reported(demo: SAG, tech_dsn: str,
                                                              openai_server: FakeOpenAIServer) -> None:
    first_batch = rows(tech_dsn, "select report_ids from sag.report_batches('demo', 0, 400) where batch = 0")[0][0]

    def respond(request: dict[str, Any]) -> str:
        prompt = request["messages"][-1]["content"]
        if "---Analyst Reports---" in prompt:
            return "Reduced."
        if "could not be used" in prompt:  # the repair request: the batch with the best report stays broken
            return "still {not json"
        return "{not json" if batch_ids(prompt) == first_batch \
            else json.dumps({"points": [{"description": "fine", "score": 40}]})

    openai_server.responder = respond
    sag = with_llm(demo, openai_server)
    answer = sag.ask("Themes?", mode="global", source="demo", params=GlobalParams(level=0, max_tokens=400))
    failed = [b for b in answer.context["batches"] if b["error"]]
    assert len(failed) == 1 and failed[0]["batch"] == 0 and "unusable JSON twice" in failed[0]["error"]
    assert any("failed" in note for note in answer.notes)
    n = len(answer.context["batches"])
    # Map calls: n, one of them two requests (the repair); then the reduce.
    assert answer.to_dict()["llm_calls"] == n + 1
    assert answer.to_dict()["requests"] == n + 2 == openai_server.chat_count
    assert answer.to_dict()["prompt_tokens"] == 10 * (n + 2)


def test_global_search_every_map_failing_is_an_llm_error(demo: SAG, openai_server: FakeOpenAIServer) -> None:
    from sag_pg.errors import LLMError

    openai_server.responder = lambda request: "no json at all"
    with pytest.raises(LLMError, match="every map call failed"):
        with_llm(demo, openai_server).ask("Themes?", mode="global", source="demo",
                                         params=GlobalParams(level=0, max_tokens=400))


FOLLOW_UPS = {"q1": ["q1a", "q1b"], "q2": ["q2a"], "q3": [], "q1a": []}


def test_drift_iterations_follow_ups_trace_and_tokens(demo: SAG, openai_server: FakeOpenAIServer) -> None:
    def respond(request: dict[str, Any]) -> Scripted:
        prompt = request["messages"][-1]["content"]
        if prompt.startswith("Create a hypothetical answer"):
            return Scripted(content="A hypothetical report about Apple.", usage=(7, 3))
        if "The top-ranked community summaries" in prompt:
            return Scripted(content=json.dumps({"intermediate_answer": "# Primer\nApple.", "score": 60,
                                                "follow_up_queries": ["q1", "q2", "q3"]}), usage=(11, 4))
        if "overall research question" in prompt:
            query = prompt.split("---Question---\n\n", 1)[1].split("\n", 1)[0]
            return Scripted(content=json.dumps({"response": f"answer to {query}", "score": 50 + len(query),
                                                "follow_up_queries": FOLLOW_UPS[query]}), usage=(13, 6))
        assert "---Intermediate answers---" in prompt
        return Scripted(content="Final.", usage=(17, 8))

    openai_server.responder = respond
    sag = with_llm(demo, openai_server)
    answer = sag.ask("What did Apple's founders do?", mode="drift", source="demo",
                     params=DriftParams(n_depth=2, k_followups=2, follow_ups=5, primer_k=5, primer_folds=1,
                                        shuffle=False, reduce=True))
    trace = answer.context
    nodes = {n["id"]: n for n in trace["nodes"]}
    # Root 0 asks q1, q2, q3 (1, 2, 3).  Iteration 1 answers the first two pending, 1 and 2: q1 asks q1a, q1b
    # (4, 5), q2 asks q2a (6).  Iteration 2 answers 3 and 4.  5 and 6 stay pending.
    assert [(n["id"], n["query"], n["parent"], n["depth"], n["status"]) for n in trace["nodes"]] == [
        (0, "What did Apple's founders do?", None, 0, "done"), (1, "q1", 0, 1, "done"), (2, "q2", 0, 1, "done"),
        (3, "q3", 0, 1, "done"), (4, "q1a", 1, 2, "done"), (5, "q1b", 1, 2, "pending"), (6, "q2a", 2, 2, "pending")]
    assert trace["iterations"] == 2
    assert trace["edges"] == [{"source": p, "target": t, "weight": 1.0} for p, t in
                              ((0, 1), (0, 2), (0, 3), (1, 4), (1, 5), (2, 6))]
    assert nodes[1]["answer"] == "answer to q1" and nodes[1]["score"] == 52 and nodes[4]["score"] == 53
    assert nodes[0]["score"] == 60 and nodes[0]["follow_ups"] == [1, 2, 3]
    assert nodes[1]["metadata"]["llm_calls"] == 1 and nodes[1]["metadata"]["prompt_tokens"] == 13
    assert nodes[1]["metadata"]["output_tokens"] == 6 and nodes[1]["metadata"]["context_tokens"] > 0
    assert nodes[0]["metadata"] == {"llm_calls": 1, "prompt_tokens": 11, "output_tokens": 4, "context_tokens": None}
    assert trace["hyde"] == "A hypothetical report about Apple." and 1 <= len(trace["primer_reports"]) <= 5
    data = answer.to_dict()
    # hyde 1 + primer 1 + local 4 + reduce 1 = 7 calls; 7 + 11 + 4 x 13 + 17 = 87 prompt, 3 + 4 + 4 x 6 + 8 = 39 out.
    assert (data["llm_calls"], data["prompt_tokens"], data["output_tokens"]) == (7, 87, 39)
    assert data["llm_calls_categories"] == {"hyde": 1, "primer": 1, "local": 4, "reduce": 1}
    assert data["prompt_tokens_categories"] == {"hyde": 7, "primer": 11, "local": 52, "reduce": 17}
    assert answer.text == "Final."
    reduce_prompt = openai_server.requests[-1]["messages"][-1]["content"]
    # The answered actions, best score first: root 60, q1a 53, q1 52, q2 52, q3 52.
    assert reduce_prompt.index("Question: q1a") < reduce_prompt.index("Question: q1\n")


def test_drift_malformed_follow_up_is_reported_and_the_search_goes_on(demo: SAG,
                                                                      openai_server: FakeOpenAIServer) -> None:
    def respond(request: dict[str, Any]) -> str:
        prompt = request["messages"][-1]["content"]
        if prompt.startswith("Create a hypothetical answer"):
            return "hypothetical"
        if "The top-ranked community summaries" in prompt:
            return json.dumps({"intermediate_answer": "primer", "score": 10, "follow_up_queries": ["good", "bad"]})
        if "could not be used" in prompt:
            return "[still bad"
        if "overall research question" in prompt:
            query = prompt.split("---Question---\n\n", 1)[1].split("\n", 1)[0]
            return "{bad" if query == "bad" else json.dumps({"response": "ok", "score": 30, "follow_up_queries": []})
        return "Final."

    openai_server.responder = respond
    answer = with_llm(demo, openai_server).ask("Q?", mode="drift", source="demo",
                                               params=DriftParams(n_depth=1, k_followups=2, primer_folds=1,
                                                                  shuffle=False, reduce=True))
    nodes = answer.context["nodes"]
    assert [(n["query"], n["status"]) for n in nodes] == [("Q?", "done"), ("good", "done"), ("bad", "failed")]
    assert "unusable JSON twice" in nodes[2]["error"] and nodes[2]["metadata"]["llm_calls"] == 1
    assert any("follow-up 2 failed" in note for note in answer.notes)
    assert openai_server.chat_count == 1 + 1 + 1 + 2 + 1  # hyde, primer, good, bad + its repair, reduce


def test_llm_reports_are_json_validated_and_fall_back_to_extractive(db_dsn: str, tmp_path: Path,
                                                                    openai_server: FakeOpenAIServer) -> None:
    calls = {"n": 0}

    def respond(request: dict[str, Any]) -> Scripted:
        prompt = request["messages"][-1]["content"]
        calls["n"] += 1
        if "could not be used" in prompt or "Community (" in prompt and calls["n"] == 1:
            return Scripted(content='{"title": "missing fields"}', usage=(5, 1))
        return Scripted(content=json.dumps({"title": "T", "summary": "S", "rating": 7.5, "rating_explanation": "E",
                                            "findings": [{"summary": "F", "explanation": "X", "rating": 3}]}),
                        usage=(20, 9))

    openai_server.responder = respond
    settings = Settings(database_url=db_dsn, home=tmp_path / "home", llm_concurrency=1)
    SAG(settings=settings).ingest_files(TECH, source="demo")  # offline extraction
    sag = SAG(settings=settings, llm=llm_for(openai_server))
    before = openai_server.chat_count
    result = sag.build_communities(EventSelection(source="demo"))
    # The first community's answer misses fields and so does its repair: it keeps an extractive report.
    assert result.llm_failures == 1
    assert result.reports_written == openai_server.chat_count - before - 1
    kinds = rows(db_dsn, "select kind, count(*) from sag.community_reports group by kind order by kind")
    assert kinds == [("extractive", 1), ("llm", result.reports_written - 1)]
    assert rows(db_dsn, "select distinct rating, findings from sag.community_reports where kind = 'llm'") == [
        (7.5, [{"summary": "F", "explanation": "X", "rating": 3.0}])]
    assert result.prompt_tokens == 20 * (result.reports_written - 1)


def test_no_hierarchy_and_bad_parameters_are_named_errors(db_dsn: str, tmp_path: Path,
                                                          openai_server: FakeOpenAIServer) -> None:
    from sag_pg.errors import NotFoundError, QueryError
    from sag_pg.graphrag import LocalParams

    settings = Settings(database_url=db_dsn, home=tmp_path / "home")
    SAG(settings=settings).ingest_text("Ada Lovelace met Charles Babbage in 1833.", uri="n1", source="s")
    sag = SAG(settings=settings, llm=llm_for(openai_server))
    with pytest.raises(NotFoundError, match="communities build"):
        sag.ask("Themes?", mode="global", source="s")
    with pytest.raises(QueryError, match="text_unit_prop"):
        sag.local_context("Ada?", source="s", params=LocalParams(text_unit_prop=0.9, community_prop=0.2))
    with pytest.raises(NotFoundError):
        sag.local_context("Ada?", source="nope")
    assert sag.local_context("Ada?", source="s")["reports"] == []  # no hierarchy: the other tables only
    assert openai_server.chat_count == 0


def test_ask_cli_global_mode_prints_the_answer_and_its_tokens(demo: SAG, tech_dsn: str, tmp_path: Path,
                                                               openai_server: FakeOpenAIServer) -> None:
    def respond(request: dict[str, Any]) -> str:
        prompt = request["messages"][-1]["content"]
        if "---Analyst Reports---" in prompt:
            return "Apple's story."
        return json.dumps({"points": [{"description": "Apple [Data: Reports (1)]", "score": 70}]})

    openai_server.responder = respond
    env = {"SAG_DATABASE_URL": tech_dsn, "SAG_HOME": str(tmp_path / "home"), "SAG_LLM": "openai:fake",
           "SAG_LLM_BASE_URL": openai_server.base_url, "SAG_EMBEDDER": ""}
    out = CliRunner().invoke(cli, ["ask", "Themes?", "--mode", "global", "--source", "demo", "--json"], env=env)
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    n = openai_server.chat_count
    assert data["answer"] == "Apple's story." and data["mode"] == "global"
    assert (data["llm_calls"], data["prompt_tokens"], data["output_tokens"]) == (n, 10 * n, 5 * n)
    shown = CliRunner().invoke(cli, ["ask", "Themes?", "--mode", "global", "--source", "demo"], env=env)
    assert "Apple's story." in shown.output and "global mode" in shown.output


def test_ask_cli_level_chooses_the_reports_global_search_reads(demo: SAG, tech_dsn: str, tmp_path: Path,
                                                               openai_server: FakeOpenAIServer) -> None:
    finest = rows(tech_dsn, "select max(level) from sag.hierarchy_levels(sag.hierarchy_run('demo'))")[0][0]
    assert finest >= 1
    wanted = sorted(r[0] for r in rows(tech_dsn, "select id from sag.community_reports('demo', %s)", [finest]))
    coarsest = {r[0] for r in rows(tech_dsn, "select id from sag.community_reports('demo', 0)")}
    assert set(wanted) != coarsest

    def respond(request: dict[str, Any]) -> str:
        prompt = request["messages"][-1]["content"]
        if "---Analyst Reports---" in prompt:
            return "Reduced."
        return json.dumps({"points": [{"description": "a point", "score": 50}]})

    openai_server.responder = respond
    env = {"SAG_DATABASE_URL": tech_dsn, "SAG_HOME": str(tmp_path / "home"), "SAG_LLM": "openai:fake",
           "SAG_LLM_BASE_URL": openai_server.base_url, "SAG_EMBEDDER": ""}
    runner = CliRunner()
    out = runner.invoke(cli, ["ask", "Themes?", "--mode", "global", "--level", str(finest), "--source", "demo",
                              "--json"], env=env)
    assert out.exit_code == 0, out.output
    mapped = [request["messages"][-1]["content"] for request in openai_server.requests]
    mapped = [prompt for prompt in mapped if "---Analyst Reports---" not in prompt]
    assert sorted(i for prompt in mapped for i in batch_ids(prompt)) == wanted  # that level's reports, each once
    missing = runner.invoke(cli, ["ask", "Themes?", "--mode", "global", "--level", "99", "--source", "demo"], env=env)
    assert missing.exit_code == 1 and "no community reports on level 99" in str(missing.exception)
    wrong = runner.invoke(cli, ["ask", "Themes?", "--mode", "fast", "--level", "1", "--source", "demo"], env=env)
    assert wrong.exit_code == 2 and "--level: only with --mode global or drift" in wrong.output

"""Deep query (sag-algorithm §3.4): the plan, its validation, the executor, the ReAct rounds and the limits.

The integration tests run against the local OpenAI-compatible server with a small scripted "model"
(:class:`DeepModel`) that answers each prompt from what the prompt says, and records which prompt came
when, so the tests can check order, parallelism and what each node was told.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from rich.console import Console

from sag_pg import SAG, ConfigError, LLMError, QueryError
from sag_pg.answer import DeepAnswer, NodeTrace, print_trace
from sag_pg.answer.execute import run_dag
from sag_pg.answer.plan import PlanError, validate_plan
from sag_pg.cli._common import AppContext
from sag_pg.cli.ask import ask as ask_command

from .openai_server import FakeOpenAIServer, Scripted
from .test_answer import asker, corpus, evidence_ids, last_user, llm_settings  # noqa: F401 - fixtures

# q1 and q2 are independent; q3 needs both; q4 needs q3 (parallel, then a chain).
DIAMOND = {
    "nodes": [
        {"id": "q1", "question": "Who wrote the first published algorithm?"},
        {"id": "q2", "question": "Who designed the Difference Engine?"},
        {"id": "q3", "question": "How did the writer from q1 and the designer from q2 work together?"},
        {"id": "q4", "question": "In which year did the collaboration found in q3 produce the algorithm?"},
    ],
    "edges": [
        {"source": "q1", "target": "q3", "description": "q3 needs the writer"},
        {"source": "q2", "target": "q3", "description": "q3 needs the designer"},
        {"source": "q3", "target": "q4", "description": "q4 needs the collaboration"},
    ],
}
ANSWERS = {
    "Who wrote the first published algorithm?": "Ada Lovelace",
    "Who designed the Difference Engine?": "Charles Babbage",
    "How did the writer from q1 and the designer from q2 work together?": "On the Analytical Engine",
    "In which year did the collaboration found in q3 produce the algorithm?": "1843",
}
CYCLE = {"nodes": [{"id": "a", "question": "A?"}, {"id": "b", "question": "B?"}, {"id": "c", "question": "C?"}],
         "edges": [{"source": "a", "target": "b"}, {"source": "b", "target": "c"}, {"source": "c", "target": "a"}]}


def _between(text: str, start: str, end: str = "\n\n") -> str:
    return text.split(start, 1)[1].split(end, 1)[0].strip()


class DeepModel:
    """Answers the deep-query prompts; ``log`` holds (kind, sub-question or "") in arrival order."""

    def __init__(self, plans: list[Any], *, checks: list[dict[str, Any]] | None = None,
                 slow: dict[str, float] | None = None, unanswered: dict[str, str] | None = None) -> None:
        self.plans = list(plans)
        self.checks = list(checks or [{"answerable": True, "reason": "all found"}])
        self.slow = slow or {}
        self.unanswered = dict(unanswered or {})  # question -> next_query, answered once the query was used
        self.log: list[tuple[str, str]] = []
        self.node_prompts: dict[str, list[str]] = {}
        self._lock = threading.Lock()

    def _note(self, kind: str, question: str, prompt: str) -> None:
        with self._lock:
            self.log.append((kind, question))
            self.node_prompts.setdefault(question, []).append(prompt)

    def __call__(self, request: dict[str, Any]) -> str | Scripted:
        prompt = last_user(request)
        if prompt.startswith("You are a meticulous planning agent"):
            self._note("plan", "", prompt)
            plan = self.plans.pop(0) if len(self.plans) > 1 else self.plans[0]
            return json.dumps(plan)
        if prompt.startswith("You are checking the progress"):
            self._note("check", "", prompt)
            check = self.checks.pop(0) if len(self.checks) > 1 else self.checks[0]
            return json.dumps(check)
        if prompt.startswith("You are one step"):
            question = _between(prompt, "Current sub-question:\n")
            self._note("node_query", question, prompt)
            parents = [line.split(" -> ", 1)[1] for line in
                       _between(prompt, "Answers of the sub-questions it depends on:\n").splitlines() if " -> " in line]
            given = [re.sub(r"\s*\[[\d, ]+\]", "", p) for p in parents]
            query = question + (f" ({'; '.join(given)})" if given else "")
            content = json.dumps({"query": query, "keys": [g for g in given if g[:1].isupper()]})
            return Scripted(content=content, delay=self.slow.get(question, 0.0))
        if prompt.startswith("You answer one sub-question"):
            question = _between(prompt, "Sub-question:\n")
            self._note("node_answer", question, prompt)
            cite = next(iter(evidence_ids(prompt)), "no evidence")
            searched = _between(prompt, "Search that was run:\nquery: ", "\n")
            if question in self.unanswered and searched != self.unanswered[question]:
                return json.dumps({"answer": "not in this evidence", "answered": False,
                                   "next_query": self.unanswered[question], "next_keys": ["Ada Lovelace"]})
            return json.dumps({"answer": f"{ANSWERS.get(question, 'something')} [{cite}]", "answered": True,
                               "next_query": "", "next_keys": []})
        if prompt.startswith("Answer the question using the findings"):
            self._note("final", "", prompt)
            cite = next(iter(evidence_ids(prompt)), "no evidence")
            return json.dumps({"answer": f"In 1843 [{cite}][424242].", "sufficient": True, "missing": ""})
        return Scripted(status=400, body={"error": {"message": f"unexpected prompt: {prompt[:60]}"}})

    def index(self, kind: str, question: str = "") -> int:
        return self.log.index((kind, question))

    def count(self, kind: str) -> int:
        return sum(1 for k, _ in self.log if k == kind)


def _span(node: NodeTrace) -> tuple[float, float]:
    assert node.started_s is not None and node.finished_s is not None
    return node.started_s, node.finished_s


@pytest.fixture
def model(openai_server: FakeOpenAIServer) -> Iterator[DeepModel]:
    fake = DeepModel([DIAMOND])
    openai_server.responder = fake
    yield fake


QUESTION = "In which year did the writer of the first algorithm and the Difference Engine's designer collaborate?"


# -- integration ---------------------------------------------------------------------------------------


def test_dag_runs_parallel_then_chained_with_parent_answers(asker: SAG, model: DeepModel,  # noqa: F811
                                                            corpus: dict[str, int],  # noqa: F811
                                                            openai_server: FakeOpenAIServer) -> None:
    model.slow = {DIAMOND["nodes"][0]["question"]: 0.4, DIAMOND["nodes"][1]["question"]: 0.4}
    answer = asker.ask(QUESTION, mode="deep")
    q1, q2, q3, q4 = (n["question"] for n in DIAMOND["nodes"])
    trace = answer.trace
    assert isinstance(answer, DeepAnswer) and trace.stopped == "answerable"
    assert [[n.key for n in r.nodes] for r in trace.rounds] == [["q1", "q2", "q3", "q4"]]
    assert trace.rounds[0].levels == [["q1", "q2"], ["q3"], ["q4"]]

    # q1 and q2 ran at the same time; q3 only after both were answered, q4 after q3.
    assert openai_server.max_in_flight >= 2
    n1, n2, n3, n4 = (trace.node(k) for k in ("q1", "q2", "q3", "q4"))
    (s1, e1), (s2, e2), (s3, e3), (s4, _) = (_span(n) for n in (n1, n2, n3, n4))
    assert s1 < e2 and s2 < e1  # overlapping
    assert s3 >= max(e1, e2) and s4 >= e3
    assert model.index("node_query", q3) > max(model.index("node_answer", q1), model.index("node_answer", q2))
    assert model.index("node_query", q4) > model.index("node_answer", q3)
    assert model.index("check") > model.index("node_answer", q4) and model.index("final") > model.index("check")

    # The child's prompt carries its parents' answers, and its sub-query is built from them.
    child_prompt = model.node_prompts[q3][0]
    assert f"q1: {q1} -> Ada Lovelace [" in child_prompt and f"q2: {q2} -> Charles Babbage [" in child_prompt
    assert n3.sub_queries[0].query == f"{q3} (Ada Lovelace; Charles Babbage)"
    assert n3.sub_queries[0].keys == ["Ada Lovelace", "Charles Babbage"]
    assert n4.sub_queries[0].query == f"{q4} (On the Analytical Engine)"
    assert "depends on:\n(none)\n" in model.node_prompts[q1][0]
    assert all(n.answered and n.status == "done" and n.cited for n in trace.nodes)
    assert all(set(n.cited) <= set(n.evidence_ids) for n in trace.nodes)

    # One plan, 4 × (sub-query + answer), one check, one final answer; tokens per call add up.
    assert trace.llm_calls == openai_server.chat_count == 11 == trace.requests
    assert (trace.prompt_tokens, trace.completion_tokens) == (110, 55)
    assert [(n.llm_calls, n.prompt_tokens) for n in trace.nodes] == [(2, 20)] * 4
    # The final answer's citations are checked against its evidence.
    assert answer.dropped_citations == [424242] and len(answer.citations) == 1
    assert answer.citations[0].chunk_id in {c.chunk_id for c in answer.evidence}

    # The trace serializes and prints.
    data = json.loads(json.dumps(answer.to_dict()))
    assert data["trace"]["rounds"][0]["edges"][0] == {"source": "q1", "target": "q3",
                                                      "description": "q3 needs the writer"}
    assert data["trace"]["rounds"][0]["nodes"][2]["sub_queries"][0]["keys"] == ["Ada Lovelace", "Charles Babbage"]
    console = Console(record=True, width=160)
    print_trace(console, trace)
    printed = console.export_text()
    assert "round 1" in printed and "q3 ← q1, q2" in printed.replace("  ", " ") and "answerable" in printed


def test_a_node_searches_again_with_the_query_it_wrote(asker: SAG, model: DeepModel,  # noqa: F811
                                                      openai_server: FakeOpenAIServer) -> None:
    question = DIAMOND["nodes"][0]["question"]
    model.plans = [{"nodes": [DIAMOND["nodes"][0]], "edges": []}]
    model.unanswered = {question: "Ada Lovelace algorithm 1843"}
    answer = asker.ask(QUESTION, mode="deep")
    node = answer.trace.node("q1")
    assert [s.query for s in node.sub_queries] == [question, "Ada Lovelace algorithm 1843"]
    assert node.sub_queries[1].keys == ["Ada Lovelace"] and node.answered
    assert node.llm_calls == 3  # sub-query, a first answer (not found), the answer after the second search


def test_a_cyclic_plan_is_refused_after_one_reask(asker: SAG, model: DeepModel,  # noqa: F811
                                                  openai_server: FakeOpenAIServer) -> None:
    model.plans = [CYCLE, CYCLE]
    with pytest.raises(LLMError, match="unusable DAG twice.*cycle: a -> b -> c -> a"):
        asker.ask(QUESTION, mode="deep")
    prompts = openai_server.prompts()
    assert len(prompts) == 2 and model.count("plan") == 2
    assert "Your previous plan could not be used" not in prompts[0]
    reask = prompts[1]
    assert reask.startswith("You are a meticulous planning agent")
    assert "Your previous plan could not be used:\n- the dependencies form a cycle: a -> b -> c -> a" in reask
    assert '"source": "c"' in reask  # the rejected plan is shown back


def test_a_reasked_plan_that_is_valid_is_executed(asker: SAG, model: DeepModel) -> None:  # noqa: F811
    bad = {"nodes": DIAMOND["nodes"], "edges": [*DIAMOND["edges"], {"source": "q4", "target": "q9"}]}
    model.plans = [bad, DIAMOND]
    answer = asker.ask(QUESTION, mode="deep")
    assert answer.trace.rounds[0].plan_problems == ["edge q4 -> q9 names unknown node(s) 'q9'"]
    assert len(answer.trace.nodes) == 4 and answer.trace.stopped == "answerable"


@pytest.mark.parametrize("max_rounds", [1, 2, 3])
def test_the_round_limit_holds(asker: SAG, model: DeepModel, max_rounds: int) -> None:  # noqa: F811
    one = {"nodes": [DIAMOND["nodes"][1]], "edges": []}
    model.plans = [one]
    model.checks = [{"answerable": False, "reason": "need more", "nodes": [{"id": "q1", "question": "When was Babbage born?"}],
                     "edges": []}]
    answer = asker.ask(QUESTION, mode="deep", max_rounds=max_rounds)
    trace = answer.trace
    assert len(trace.rounds) == max_rounds and trace.stopped == "max_rounds"
    assert model.count("plan") == 1 and model.count("check") == max_rounds - 1 and model.count("final") == 1
    assert [n.key for n in trace.nodes] == ["q2", *[f"r{i}.q1" for i in range(2, max_rounds + 1)]]
    # Later rounds see what earlier rounds found.
    if max_rounds > 1:
        assert "q2: Who designed the Difference Engine? -> Charles Babbage [" in model.node_prompts["When was Babbage born?"][0]
        assert [r.check and r.check.answerable for r in trace.rounds[:-1]] == [False] * (max_rounds - 1)


@pytest.mark.parametrize("max_calls", [2, 5, 9, 10])
def test_the_llm_call_limit_holds(asker: SAG, model: DeepModel, openai_server: FakeOpenAIServer,  # noqa: F811
                                  max_calls: int) -> None:
    model.plans = [{"nodes": DIAMOND["nodes"][:2], "edges": []}]
    model.checks = [{"answerable": False, "reason": "need more",
                     "nodes": [{"id": "q1", "question": "Who designed the Difference Engine?"}], "edges": []}]
    answer = asker.ask(QUESTION, mode="deep", max_rounds=10, max_llm_calls=max_calls)
    trace = answer.trace
    assert openai_server.chat_count == trace.llm_calls == max_calls
    assert trace.stopped == "max_llm_calls"
    assert model.count("final") == 1 and answer.text.startswith("In 1843")  # the last call answers
    # 9 calls end exactly after round 2 (plan, 2 nodes, check, 1 node = 8, then the answer); the others
    # stop a node half-way.
    assert any(n.status == "budget" for n in trace.nodes) == (max_calls != 9)


def test_an_unusable_further_plan_ends_the_rounds(asker: SAG, model: DeepModel) -> None:  # noqa: F811
    model.checks = [{"answerable": False, "reason": "loop", **CYCLE}]
    answer = asker.ask(QUESTION, mode="deep")
    assert model.count("check") == 2 and answer.trace.stopped == "no_new_plan"
    assert any("unusable DAG twice" in note for note in answer.notes)


def test_not_answerable_without_a_further_plan_stops(asker: SAG, model: DeepModel) -> None:  # noqa: F811
    model.checks = [{"answerable": False, "reason": "the corpus does not say", "nodes": [], "edges": []}]
    answer = asker.ask(QUESTION, mode="deep")
    assert answer.trace.stopped == "no_new_plan" and len(answer.trace.rounds) == 1
    check = answer.trace.rounds[0].check
    assert check is not None and check.reason == "the corpus does not say"


def test_deep_without_an_llm_is_a_config_error(sag: SAG, corpus: dict[str, int]) -> None:  # noqa: F811
    with pytest.raises(ConfigError, match="deep mode needs an LLM: set SAG_LLM"):
        sag.ask(QUESTION, mode="deep")


def test_deep_parameter_errors(asker: SAG) -> None:  # noqa: F811
    with pytest.raises(QueryError, match="max_llm_calls must be at least 2"):
        asker.ask(QUESTION, mode="deep", max_llm_calls=1)
    with pytest.raises(QueryError, match="max_rounds must be at least 1"):
        asker.ask(QUESTION, mode="deep", max_rounds=0)


def test_cli_ask_deep_prints_the_trace_and_json(db_dsn: str, tmp_path: Path, model: DeepModel,
                                                corpus: dict[str, int],  # noqa: F811
                                                openai_server: FakeOpenAIServer) -> None:
    app = AppContext(settings=llm_settings(db_dsn, tmp_path, openai_server))
    result = CliRunner().invoke(ask_command, [QUESTION, "--mode", "deep", "--max-rounds", "2"], obj=app,
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "round 1" in result.output and "stopped: answerable" in result.output and "In 1843" in result.output
    app = AppContext(settings=llm_settings(db_dsn, tmp_path, openai_server))
    result = CliRunner().invoke(ask_command, [QUESTION, "--mode", "deep", "--json"], obj=app, catch_exceptions=False)
    data = json.loads(result.output)
    assert data["mode"] == "deep" and data["trace"]["llm_calls"] == 11 and data["trace"]["limits"]["max_rounds"] == 3


# -- the plan, without a server ------------------------------------------------------------------------


def test_validate_plan_accepts_and_orders_a_dag() -> None:
    plan = validate_plan(DIAMOND)
    assert [n.id for n in plan.nodes] == ["q1", "q2", "q3", "q4"]
    assert plan.parents("q3") == ["q1", "q2"] and plan.children("q3") == ["q4"]
    assert plan.levels() == [["q1", "q2"], ["q3"], ["q4"]]
    assert plan.repairs == ()


def test_validate_plan_repairs_harmless_repeats() -> None:
    data = {"nodes": [{"id": " q1 ", "question": "A?"}, {"id": "q1", "question": "A?"}, {"id": "q2", "question": "B?"}],
            "edges": [{"source": "q1", "target": "q2"}, {"source": "q1", "target": "q2"}]}
    plan = validate_plan(data)
    assert [n.id for n in plan.nodes] == ["q1", "q2"] and len(plan.edges) == 1
    assert plan.repairs == ("dropped a repeated node q1", "dropped a repeated edge q1 -> q2")


@pytest.mark.parametrize(("data", "problem"), [
    ({"nodes": [{"id": "q1", "question": "A?"}, {"id": "q1", "question": "B?"}]},
     "node id 'q1' is used for two different questions"),
    ({"nodes": [{"id": "q1", "question": "A?"}], "edges": [{"source": "q1", "target": "q7"}]},
     "edge q1 -> q7 names unknown node(s) 'q7'"),
    ({"nodes": [{"id": "q1", "question": "A?"}], "edges": [{"source": "q1", "target": "q1"}]},
     "edge q1 -> q1 makes q1 depend on itself"),
    (CYCLE, "the dependencies form a cycle: a -> b -> c -> a"),
    ({"nodes": [{"id": "x", "question": "X?"}, *CYCLE["nodes"]], "edges": [{"source": "x", "target": "a"},
                                                                         *CYCLE["edges"]]},
     "the dependencies form a cycle: a -> b -> c -> a"),
    ({"nodes": []}, "the plan has no nodes"),
    ({"nodes": [{"id": "", "question": "A?"}]}, "node #1 needs a non-empty id and question"),
    ({"nodes": [{"id": f"q{i}", "question": "?"} for i in range(9)]}, "the plan has 9 nodes; use at most 8"),
    (["not", "an", "object"], "the plan must be a JSON object with a nodes list and an edges list"),
])
def test_validate_plan_refuses(data: Any, problem: str) -> None:
    with pytest.raises(PlanError) as caught:
        validate_plan(data)
    assert problem in caught.value.problems


# -- the executor, without a server --------------------------------------------------------------------


def test_run_dag_runs_independent_nodes_together_and_children_after_parents() -> None:
    plan = validate_plan(DIAMOND)
    both = threading.Barrier(2, timeout=5)  # q1 and q2 can only pass it together
    events: list[str] = []

    def run(node_id: str) -> None:
        events.append(f"start {node_id}")
        if node_id in ("q1", "q2"):
            both.wait()
            time.sleep(0.05 if node_id == "q1" else 0.1)
        events.append(f"end {node_id}")

    run_dag(plan, run, parallelism=4)
    assert events.index("start q3") > max(events.index("end q1"), events.index("end q2"))
    assert events.index("start q4") > events.index("end q3")


def test_run_dag_stops_starting_nodes_after_an_error() -> None:
    plan = validate_plan(DIAMOND)
    ran: list[str] = []

    def run(node_id: str) -> None:
        ran.append(node_id)
        if node_id == "q1":
            raise LLMError("boom")

    with pytest.raises(LLMError, match="boom"):
        run_dag(plan, run, parallelism=1)
    assert ran == ["q1"]

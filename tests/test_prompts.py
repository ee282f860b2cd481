"""The prompt templates: their rendered form is pinned, overrides and placeholder errors work.

The expected renderings live in ``tests/data/prompts/NAME.txt``. After changing a prompt on
purpose, regenerate them with ``SAG_UPDATE_PROMPT_SNAPSHOTS=1 pytest tests/test_prompts.py``
and review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sag_pg import prompts
from sag_pg.errors import ConfigError

SNAPSHOTS = Path(__file__).parent / "data" / "prompts"

# Fixed values per prompt; the keys are the placeholders every caller must supply.
VALUES: dict[str, dict[str, str]] = {
    "summary": {
        "title": "Apple Inc.",
        "sentences": "- Apple was founded in 1976.\n- Steve Jobs introduced the iPhone in 2007.",
    },
    "extract_events": {
        "doc_title": "Apple Inc.",
        "summary": "Apple is a technology company founded by Steve Jobs.",
        "chunk_title": "History",
        "content": "In 1976 Jobs and Wozniak founded Apple. In 2007 Jobs introduced the iPhone.",
    },
    "extract_keys": {
        "event_content": "乔布斯发布iPhone\n2007年1月9日，乔布斯在旧金山发布了第一代iPhone。\n时间: 2007-01-09",
        "summary": "苹果公司的历史。",
        "type": "- person\n- organization\n- time",
        "direct_keys": "- person: 史蒂夫·乔布斯\n- organization: 苹果公司",
        "keys_from_events": "- location: 旧金山",
    },
    "rewrite_query": {
        "query": "when did he launch the phone?",
        "events": "- Steve Jobs introduced the iPhone (2007-01-09)",
        "keys": "- person: Steve Jobs\n- topic: iPhone",
        "key_types": "- person\n- organization\n- time\n- topic",
    },
    "plan_dag": {
        "query": "Which company did the founder of Apple start after leaving it?",
        "background": "- event: Steve Jobs left Apple in 1985\n- key: person: Steve Jobs",
    },
    "answer_json": {"query": "When was the iPhone introduced?",
                    "evidence": "[12] History\nIn 2007 Jobs introduced the iPhone."},
    "deep_answer": {"query": "What did the founder of NeXT sell to fund Apple?",
                    "findings": "- q1: Who founded NeXT? -> Steve Jobs [12]",
                    "evidence": "[12] NeXT\nSteve Jobs founded NeXT in 1985."},
    "node_query": {"query": "Which company did the founder of Apple start after leaving it?",
                   "question": "What did the founder from q1 start?",
                   "parents": "- q1: Who founded Apple? -> Steve Jobs [12]", "findings": "(none)"},
    "node_answer": {"query": "Which company did the founder of Apple start after leaving it?",
                    "question": "What did Steve Jobs start after leaving Apple?",
                    "parents": "- q1: Who founded Apple? -> Steve Jobs [12]",
                    "search": "query: Steve Jobs company after Apple\nkeys: Steve Jobs",
                    "evidence": "[15] NeXT\nIn 1985 Jobs founded NeXT."},
    "react_check": {"query": "Which company did the founder of Apple start after leaving it?",
                    "findings": "- q1: Who founded Apple? -> Steve Jobs [12]"},
    "plan_reask": {"prompt": "You are a meticulous planning agent. …",
                   "problems": "- the dependencies form a cycle: q1 -> q2 -> q1", "previous": "{\"nodes\": []}"},
    "extract_relations": {"events": "1. Steve Jobs founded Apple in 1976.\n   keys: Steve Jobs; Apple; 1976"},
    "graphrag_report": {"size": "3", "level": "0", "keys": "7|person|Steve Jobs|4.159",
                        "events": "12||Jobs founded Apple in 1976.\n13||In 1985 he founded NeXT."},
    "graphrag_local": {"query": "Who founded Apple?", "response_type": "multiple paragraphs",
                       "context_data": "-----Entities-----\nid|entity|description|number of relationships\n7|Jobs|person|2"},
    "graphrag_map": {"query": "What are the main themes?",
                     "context_data": "-----Reports-----\nid|title|occurrence weight|content|rank\n3|Apple|1|# Apple|10"},
    "graphrag_reduce": {"query": "What are the main themes?", "response_type": "multiple paragraphs",
                        "report_data": "----Analyst 1----\nImportance Score: 80\nApple [Data: Reports (3)]"},
    "graphrag_hyde": {"query": "Who founded Apple?", "template": "# Title\n\nSummary\n\n## Finding"},
    "graphrag_drift_primer": {"query": "Who founded Apple?", "follow_ups": "5",
                              "community_reports": "----Report 3----\n# Apple"},
    "graphrag_drift_local": {"query": "Who is Wozniak?", "global_query": "Who founded Apple?", "follow_ups": "5",
                             "context_data": "-----Sources-----\nid|text\n4|Wozniak built the Apple I."},
    "graphrag_drift_reduce": {"query": "Who founded Apple?", "response_type": "multiple paragraphs",
                              "answers": "----Analyst 1----\nImportance Score: 60\nQuestion: q1\nJobs."},
    "cluster_title": {"size": "3", "keys": "- 曹操\n- 官渡\n- 袁绍",
                      "events": "- 公元200年，曹操与袁绍在官渡展开决战。\n- 曹操奇袭乌巢。"},
    "kg_agent": {},
    "kg_force_answer": {},
    "kg_filter_relations": {"top_k": "10", "question": "Who was Ada Lovelace's husband?", "entity": "Ada Lovelace",
                            "relations": '["people.person.spouse_s", "people.person.parents"]'},
}


def test_packaged_prompts_are_the_expected_set() -> None:
    assert prompts.names() == sorted(VALUES)


@pytest.mark.parametrize("name", sorted(VALUES))
def test_placeholders_are_the_documented_interface(name: str) -> None:
    assert prompts.placeholders(prompts.load(name)) == set(VALUES[name])


@pytest.mark.parametrize("name", sorted(VALUES))
def test_rendered_form_is_pinned(name: str) -> None:
    rendered = prompts.render(name, **VALUES[name])
    snapshot = SNAPSHOTS / f"{name}.txt"
    if os.environ.get("SAG_UPDATE_PROMPT_SNAPSHOTS"):
        snapshot.parent.mkdir(parents=True, exist_ok=True)
        snapshot.write_text(rendered + "\n", encoding="utf-8")
    assert rendered + "\n" == snapshot.read_text(encoding="utf-8")
    assert "{{" not in rendered


def test_key_prompt_keeps_the_spec_template() -> None:
    rendered = prompts.render("extract_keys", **VALUES["extract_keys"])
    for line in [
        "你是一个信息提取专家。请根据下面的【事件】，提取出核心的属性，属性的type必须在属性类别中选择。",
        "【事件】:\n乔布斯发布iPhone\n2007年1月9日",
        "【属性type】\n- person\n- organization\n- time",
        "**【参考属性列表】(请优先使用或对齐到列表中的标准名称):**",
        "**直接相关属性:**\n- person: 史蒂夫·乔布斯\n- organization: 苹果公司",
        "**相似事件中的Key示例 (用于参考):**\n- location: 旧金山",
        "1. 提取的属性key必须是事件中的核心实体、概念或行为。",
        "4. 请参考【相似事件中的Key示例】，来提取当前事件的属性。",
        "5. 如果事件中出现了全新的、参考列表中没有的核心概念，可以直接提取。",
        '**输出格式 (JSON):**\n{"keys": [',
    ]:
        assert line in rendered


def test_dag_prompt_keeps_the_spec_template() -> None:
    rendered = prompts.render("plan_dag", **VALUES["plan_dag"])
    assert rendered.startswith("You are a meticulous planning agent.")
    assert "Step 3: Identify Dependencies (Edges)" in rendered
    assert '"question": "Who is the lead actor of the movie \'The Dark Knight\'?"' in rendered
    assert rendered.endswith(
        "User Question:\nWhich company did the founder of Apple start after leaving it?\n\nYour Response:"
    )


def test_answer_prompt_asks_for_citations_and_admits_gaps() -> None:
    rendered = prompts.render("answer_json", **VALUES["answer_json"])
    assert "[12] History" in rendered
    assert "cite the chunk ids" in rendered
    assert "not enough to answer, say so" in rendered
    assert '"sufficient"' in rendered


def test_prompts_dir_overrides_one_prompt(tmp_path: Path) -> None:
    (tmp_path / "summary.txt").write_text("Summarise {{ title }}:\n{{sentences}}\n", encoding="utf-8")
    (tmp_path / "answer_json.md").write_text("Q: {{query}}\nE: {{evidence}}", encoding="utf-8")
    assert prompts.render("summary", prompts_dir=tmp_path, title="T", sentences="- s") == "Summarise T:\n- s"
    assert prompts.render("answer_json", prompts_dir=tmp_path, query="q", evidence="e") == "Q: q\nE: e"
    # Prompts without an override still come from the package.
    assert prompts.load("plan_dag", tmp_path) == prompts.load("plan_dag")


def test_override_with_unknown_placeholder_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "summary.txt").write_text("{{title}} {{sentences}} {{language}}", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"summary.*\{\{language\}\}"):
        prompts.render("summary", prompts_dir=tmp_path, title="T", sentences="s")


def test_missing_value_is_an_error() -> None:
    with pytest.raises(ConfigError, match=r"\{\{sentences\}\}"):
        prompts.render("summary", title="T")


def test_substituted_text_is_not_rendered_again() -> None:
    rendered = prompts.fill("A {{x}} B {{y}}", {"x": "{{y}}", "y": "why"})
    assert rendered == "A {{y}} B why"


def test_unused_values_are_allowed() -> None:
    assert prompts.fill("just {{a}}", {"a": 1, "b": 2}) == "just 1"


def test_unknown_prompt_and_bad_prompts_dir(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown prompt 'nope'"):
        prompts.load("nope")
    with pytest.raises(ConfigError, match="invalid prompt name"):
        prompts.load("../etc/passwd")
    with pytest.raises(ConfigError, match="not a directory"):
        prompts.load("summary", tmp_path / "missing")


def test_bullets() -> None:
    assert prompts.bullets(["a", "b"]) == "- a\n- b"
    assert prompts.bullets([], empty="（无）") == "（无）"

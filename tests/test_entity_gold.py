"""The offline rule extractor on the entity gold set (tests/data/entity_gold.jsonl, issue 33).

The set was written and committed before the rules were changed for it; its figures before and after are in
docs/extraction.md.  The floors below are the figures measured after the change, rounded down a little, so
that a rule change that loses ground on any language or type fails here.  Sentences of the issue's failure
shapes are checked one by one at the end.
"""

from __future__ import annotations

import pytest

from sag_pg.extract.rules import RuleExtractor
from sag_pg.types import EventDraft
from tests.entity_gold import LANGS, NAMED_TYPES, TYPES, load_gold, score

# (lang, type) -> (precision floor, recall floor); measured figures in docs/extraction.md.
FLOORS = {
    ("zh", "person"): (0.95, 0.95),
    ("zh", "organization"): (0.90, 0.93),
    ("zh", "location"): (0.90, 0.88),
    ("zh", "topic"): (0.80, 0.95),
    ("zh", "time"): (0.95, 0.95),
    ("en", "person"): (0.95, 0.93),
    ("en", "organization"): (0.95, 0.95),
    ("en", "location"): (0.92, 0.87),
    ("en", "topic"): (0.95, 0.95),
    ("en", "time"): (0.95, 0.95),
    ("mixed", "person"): (0.78, 0.95),
    ("mixed", "organization"): (0.88, 0.72),
    ("mixed", "location"): (0.95, 0.78),
    ("mixed", "topic"): (0.75, 0.62),
    ("mixed", "time"): (0.95, 0.95),
}


def extract(text: str, chunk_title: str = "") -> list[tuple[str, str]]:
    keys = RuleExtractor().keys(EventDraft("", text), chunk_title=chunk_title)
    return [(k.type, k.name) for k in keys]


@pytest.fixture(scope="module")
def gold_score():
    return score(extract, load_gold())


def test_the_set_is_what_the_brief_asked_for() -> None:
    gold = load_gold()
    sentences = {lang: sum(1 for s in gold if s.lang == lang) for lang in LANGS}
    assert sentences["zh"] >= 60 and sentences["en"] >= 40 and sentences["mixed"] >= 20, sentences
    entities = [(s.lang, t) for s in gold for t, _ in s.entities]
    assert len(entities) >= 300
    for lang in ("zh", "en"):
        for key_type in NAMED_TYPES:
            assert entities.count((lang, key_type)) >= 20, (lang, key_type)
    assert sum(len(s.not_keys) for s in gold) >= 150


@pytest.mark.parametrize(("lang", "key_type"), sorted(FLOORS))
def test_precision_and_recall_floors(gold_score, lang: str, key_type: str) -> None:
    counts = gold_score.counts[(lang, key_type)]
    errors = [e[:4] for e in gold_score.errors if e[1] == lang and e[2] == key_type]
    precision, recall = FLOORS[(lang, key_type)]
    assert counts.precision >= precision, (counts, errors)
    assert counts.recall >= recall, (counts, errors)


def test_every_type_of_every_language_has_a_floor() -> None:
    assert set(FLOORS) == {(lang, t) for lang in LANGS for t in TYPES}


def test_generic_words_and_broken_spans_are_not_keys(gold_score) -> None:
    # Two are left on purpose (docs/extraction.md): 考古队 (X队 stays a key: 阿根廷队 is a team) and 科技
    # (not an organization head: "最新科技" is no company).  Main gave 29.
    assert len(gold_score.forbidden) <= 2, gold_score.forbidden


def test_the_scorer_counts_what_it_should() -> None:
    """The scorer itself, on a sentence whose right answer is known: a glued preposition is a false
    positive and a miss, a broken project span is a topic false positive, a year inside a date counts."""
    gold = [s for s in load_gold() if s.text.startswith("钟离鹤于1956年")]
    wrong = score(lambda text, title: [("person", "钟离"), ("location", "于宁州"), ("time", "1956")], gold)
    assert (wrong.counts[("zh", "person")].tp, wrong.counts[("zh", "person")].fp) == (0, 1)
    assert (wrong.counts[("zh", "location")].fp, wrong.counts[("zh", "location")].fn) == (1, 1)
    assert wrong.counts[("zh", "time")].tp == 1
    right = score(lambda text, title: [("person", "钟离鹤"), ("location", "宁州"), ("time", "1956年")], gold)
    assert right.total(["zh"]).f1 == 1.0


# --------------------------------------------------------------------------- the shapes, one by one


def test_compound_surname_with_a_one_character_given_name() -> None:
    keys = extract("南宫瑾和夏侯川是汉州师范学院的同学。")
    assert ("person", "南宫瑾") in keys and ("person", "夏侯川") in keys
    assert ("organization", "汉州师范学院") in keys
    assert "同学" not in [name for _, name in keys]


def test_a_tenure_verb_is_not_part_of_a_name() -> None:
    keys = extract("吕清风曾任青禾县县长。")
    assert ("person", "吕清风") in keys and ("location", "青禾县") in keys
    assert "曾任青" not in [name for _, name in keys]


def test_roles_and_kinship_are_not_keys() -> None:
    keys = extract("诸葛远帆是一名船长，他的父亲是物理学家，母亲是画家。")
    names = [name for _, name in keys]
    assert ("person", "诸葛远帆") in keys
    for role in ("船长", "父亲", "物理学家", "母亲", "画家"):
        assert role not in names


def test_projects_with_engineering_heads_and_spacecraft() -> None:
    keys = extract("白露工程于2015年启动，嫦娥七号将于2026年发射。")
    assert ("topic", "白露工程") in keys and ("topic", "嫦娥七号") in keys
    assert "白露" not in [name for _, name in keys]


def test_a_ship_name_does_not_take_the_navy_with_it() -> None:
    keys = extract("海军破浪号驱逐舰于3月12日驶离三亚港。")
    assert ("topic", "破浪号") in keys and ("location", "三亚港") in keys
    assert ("time", "3月12日") in keys
    assert "海军破浪号" not in [name for _, name in keys]


def test_words_inside_a_quoted_title_are_not_keys() -> None:
    keys = extract("叶南枝与闻笛合著的《候鸟南飞》获得了文学奖。")
    assert ("topic", "候鸟南飞") in keys and ("person", "叶南枝") in keys and ("person", "闻笛") in keys
    assert not {"南飞", "候鸟"} & {name for _, name in keys}


def test_latin_names_in_chinese_prose() -> None:
    assert ("topic", "Sea Falcon号") in extract("李沐阳驾驶的Sea Falcon号完成了环球航行。")
    assert ("location", "Rotterdam") in extract("货轮在Rotterdam港卸货。")
    assert ("topic", "Gemini项目") in extract("陈雨桐加入了Google DeepMind，负责Gemini项目。")
    assert ("organization", "Google DeepMind") in extract("陈雨桐加入了Google DeepMind，负责Gemini项目。")
    assert ("organization", "Tesla") in extract("Tesla上海超级工厂于2019年开工建设。")


def test_english_heads_cues_and_abbreviations() -> None:
    assert ("organization", "St. Luke's Hospital") in extract("She worked at St. Luke's Hospital in Lagos.")
    committee = extract("The Standing Committee on Fisheries met in Reykjavik.")
    assert ("organization", "Standing Committee on Fisheries") in committee
    assert ("topic", "Queen Adelaide") in extract("He sailed to Halifax aboard the Queen Adelaide.")
    assert ("topic", "Winter Harbour") in extract("The novel Winter Harbour won the prize.")
    assert ("location", "River Tees") in extract("The firm polluted the River Tees.")
    assert ("location", "Plymouth") in extract("The institute moved its headquarters to Plymouth.")
    assert ("organization", "Atlético Verde") in extract("Luis Ortega played for Atlético Verde.")
    assert ("person", "Arthur Penrose") in extract("In 1944, Lieutenant Arthur Penrose landed in Normandy.")

"""Precision and recall of the offline key extractor on the hand-labelled gold set (issue 33, item 1).

The gold set (tests/data/key_gold.jsonl, scored by tests/key_gold.py) was written before the extractor was
changed; the figures it had then and has now are in docs/extraction.md.  The floor is the issue's: 0.85 for
persons, organizations and locations in each language.  tests/data/key_gold_fresh*.jsonl were written after
the first and the second round of rules, measured before any rule was changed for them (figures in
docs/extraction.md), and are held to a lower floor.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sag_pg.extract.rules import RuleExtractor
from sag_pg.types import EventDraft
from tests.key_gold import NAMED_TYPES, load_gold, score

FLOOR = 0.85
FRESH_FLOOR = 0.75


def extract(text: str, chunk_title: str = "") -> list[tuple[str, str]]:
    keys = RuleExtractor().keys(EventDraft("", text), chunk_title=chunk_title)
    return [(k.type, k.name) for k in keys]


@pytest.fixture(scope="module")
def gold_score():
    return score(extract, load_gold())


def test_gold_set_is_big_enough() -> None:
    gold = load_gold()
    for lang in ("zh", "en"):
        named = [e for s in gold if s.lang == lang for e in s.entities if e[0] in NAMED_TYPES]
        assert len(named) >= 100, lang
        for key_type in NAMED_TYPES:
            assert sum(1 for t, _ in named if t == key_type) >= 30, (lang, key_type)


@pytest.mark.parametrize("lang", ["zh", "en"])
@pytest.mark.parametrize("key_type", NAMED_TYPES)
def test_precision_and_recall_per_type_and_language(gold_score, lang: str, key_type: str) -> None:
    counts = gold_score.counts[(lang, key_type)]
    errors = [e for e in gold_score.errors if e[2] == key_type]
    assert counts.precision >= FLOOR, (counts, errors)
    assert counts.recall >= FLOOR, (counts, errors)


def test_projects_and_ships_are_found_whole(gold_score) -> None:
    for lang in ("zh", "en"):
        found, total = gold_score.topic_found[lang]
        assert found >= FLOOR * total, (lang, found, total)


def test_generic_words_and_broken_spans_are_not_keys(gold_score) -> None:
    assert gold_score.forbidden == []


@pytest.mark.parametrize("lang", ["zh", "en"])
@pytest.mark.parametrize("name", ["key_gold_fresh.jsonl", "key_gold_fresh2.jsonl"])
def test_fresh_sentences_written_after_the_change(name: str, lang: str) -> None:
    fresh = score(extract, load_gold(Path(__file__).parent / "data" / name), [lang])
    tp = sum(fresh.counts[(lang, t)].tp for t in NAMED_TYPES)
    fp = sum(fresh.counts[(lang, t)].fp for t in NAMED_TYPES)
    fn = sum(fresh.counts[(lang, t)].fn for t in NAMED_TYPES)
    assert tp / (tp + fp) >= FRESH_FLOOR and tp / (tp + fn) >= FRESH_FLOOR, fresh.table()


# --------------------------------------------------------------------------- the named cases


def test_preposition_is_not_glued_to_a_name_and_the_university_is_kept() -> None:
    keys = extract("沈墨毕业于北溟大学。")
    assert ("person", "沈墨") in keys
    assert ("organization", "北溟大学") in keys
    names = [name for _, name in keys]
    assert "于北溟" not in names and "大学" not in names and "北溟" not in names


def test_a_project_is_one_key_and_a_name_is_whole() -> None:
    keys = extract("青岚计划由陆行舟主持，项目总部设在临川市。")
    assert ("topic", "青岚计划") in keys
    assert ("person", "陆行舟") in keys
    assert ("location", "临川市") in keys
    names = [name for _, name in keys]
    for wrong in ("青岚", "计划", "行舟", "项目", "总部"):
        assert wrong not in names


def test_companies_are_organizations_not_persons() -> None:
    keys = extract("红杉公司与向海集团签订了长期合作协议。")
    assert ("organization", "红杉公司") in keys and ("organization", "向海集团") in keys
    assert not [name for key_type, name in keys if key_type == "person"]


def test_generic_words_are_not_topics() -> None:
    keys = extract("现任所长韩青溪曾在苍梧研究所工作十年，总部的工程师从事研究。")
    assert ("person", "韩青溪") in keys and ("organization", "苍梧研究所") in keys
    topics = {name for key_type, name in keys if key_type in ("topic", "person", "location", "organization")}
    assert not topics & {"现任", "所长", "总部", "工程师", "研究", "研究所"}


def test_mixed_script_splits_at_the_script_boundary() -> None:
    keys = extract("与Polar Robotics签订合作协议后，他在Fjord Maritime工作三年。")
    assert ("organization", "Polar Robotics") in keys
    assert ("organization", "Fjord Maritime") in keys
    mixed = [name for _, name in keys if re.search("[A-Za-z]", name) and re.search("[\u4e00-\u9fff]", name)]
    assert mixed == []  # not "Robotics签订合作协议", "Maritime工作三年"


def test_english_organizations_ships_places_and_headings() -> None:
    assert ("organization", "Fjord Capital") in extract("Fjord Capital invested in Polar Batteries.")
    assert ("organization", "Polar Batteries") in extract("Fjord Capital invested in Polar Batteries.")
    voyage = extract("The research vessel Kronprins Haakon sailed from Longyearbyen to Svalbard.")
    assert ("topic", "Kronprins Haakon") in voyage
    assert ("location", "Longyearbyen") in voyage and ("location", "Svalbard") in voyage
    later = extract("In 1998 she moved to Bergen.", chunk_title="Later life")
    assert ("topic", "Later life") in later and "life" not in [name for _, name in later]
    assert ("location", "Bergen") in later

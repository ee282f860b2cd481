"""Issue #33 item 4 (and #34 item 5): GraphRAG local search maps the question to the entities it names, through
the same corrected keys as the SAG retrieval (named keys, their aliases in another language), never to
unrelated entities of another language by chance cosines; include/exclude entities.

Before: the entities were only the keys nearest to the question's embedding; with the hash embedder an English
question about an English project got Chinese generic keys too, and an English question naming a Chinese project
by its English name never reached the Chinese key or its page.
"""

from __future__ import annotations

import re

from sag_pg import SAG
from sag_pg.graphrag import LocalParams

DOCS = {
    "aurora": ("Aurora Grid Initiative", "The Aurora Grid Initiative is a research programme on arctic power grids, "
               "launched in 2018 and led by Maya Okafor. It is based in Norhaven."),
    "okafor": ("Maya Okafor", "Maya Okafor is an electrical engineer. She graduated from the Calder Institute of "
               "Technology and worked on grid stability."),
    "northgate": ("Northgate University", "Northgate University is a public university. Many engineers graduated "
                  "from Northgate University."),
    "qinglan": ("青岚计划", "青岚计划是一项海上风电储能研究计划，于2019年启动，由沈墨主持。计划总部设在临川。"),
    "signing": ("北溟大学与青岚计划签约", "北溟大学（Beiming University）与青岚计划（Qinglan Project）签订合作协议，"
                "沈墨（Shen Mo）出席签约仪式。"),
    "museum": ("北辰博物馆", "北辰博物馆的馆长何晚晴毕业于南湖大学，博物馆每年评选获奖者。"),
    "prize": ("获奖者名单", "今年的获奖者中有多位大学教授和博物馆馆长。"),
}

_HAN = re.compile(r"[\u4e00-\u9fff]")


def _ingest(sag: SAG) -> None:
    for uri, (title, text) in DOCS.items():
        sag.ingest_text(text, uri=uri, title=title)


def _context(sag: SAG, question: str, **params: object) -> tuple[list[str], list[str]]:
    ctx = sag.local_context(question, params=LocalParams(**params))  # type: ignore[arg-type]
    entities = [e["entity"] for e in ctx["entities"]]
    sources = [s["text"] for s in ctx["sources"]]
    return entities, sources


def test_an_english_question_maps_to_its_english_entities_only(sag: SAG) -> None:
    _ingest(sag)
    entities, sources = _context(sag, "Which institute did the leader of the Aurora Grid Initiative graduate from?")
    assert entities[0] == "Aurora Grid Initiative", entities
    assert not [e for e in entities if _HAN.search(e)], entities  # no 大学, 馆长, 获奖者
    assert any("Aurora Grid Initiative is a research programme" in s for s in sources[:2]), sources


def test_an_english_name_reaches_the_chinese_entity_and_page(sag: SAG) -> None:
    _ingest(sag)
    entities, sources = _context(sag, "When was the Qinglan Project launched?")
    assert {"Qinglan Project", "青岚计划"} <= set(entities[:2]), entities
    assert any(s.startswith("青岚计划是一项") for s in sources[:3]), sources


def test_include_and_exclude_entities(sag: SAG) -> None:
    _ingest(sag)
    question = "Which institute did the leader of the Aurora Grid Initiative graduate from?"
    entities, _ = _context(sag, question, include_entities=("Northgate University",),
                           exclude_entities=("Aurora Grid Initiative",))
    assert "Aurora Grid Initiative" not in entities, entities
    assert entities[0] == "Northgate University", entities
    entities, _ = _context(sag, "When was the Qinglan Project launched?", exclude_entities=("青岚计划",))
    assert "青岚计划" not in entities and "Qinglan Project" not in entities, entities  # the alias goes with it

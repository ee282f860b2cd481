"""Issue #33 item 2: the bridge before the question's words.

A two-hop question names a project; the project's page names its leader (the bridge), whose own page holds the
answer.  Distractors share the question's generic words (毕业 大学 计划 主持人; graduated, university, led,
projects) and no entity, or the named entity and those words but not the bridge (an English news item).  The project's page and the leader's page must be the first two documents, in Chinese
and in English, with the offline defaults (hash embedder, rule extractor).  Before the change the distractor
sharing most words ranked first and the leader's page third or fourth: a Chinese project (青岚计划, a topic key)
was never "named" by the question, so the first hop was the passage with the most words in common.
"""

from __future__ import annotations

from sag_pg import SAG

ZH = {
    "qinglan": ("青岚计划", "青岚计划是一项海上风电储能研究计划，于2019年启动，由沈墨主持。计划总部设在临川，目前有四十名研究人员。"),
    "shenmo": ("沈墨", "沈墨是一位材料科学家，1978年生于江陵。她毕业于北溟大学，曾在红杉电池公司工作三年。"),
    "beiming": ("北溟大学", "北溟大学位于临川，创建于1952年，以海洋工程和船舶设计专业闻名。"),
    "linchuan-univ": ("临川大学", "临川大学的毕业生中有多位计划主持人和项目负责人，该校每年举办科研计划主持人培训班。"),
    "rules": ("科研计划管理办法", "按照管理办法，各类研究计划和项目的主持人须具有博士学位，通常毕业于国内外知名大学。"),
    "nanhu": ("南湖大学", "南湖大学是一所综合性大学。许多工程师毕业于该校，学校曾主持多项国家研究计划和重点项目。"),
    "xingcha": ("星槎计划", "星槎计划是一项深空通信研究计划，于2016年启动，由陆行舟负责。"),
    "luxingzhou": ("陆行舟", "陆行舟是一位射电天文学家，1971年出生于望潮。他毕业于东岳大学。"),
}

EN = {
    "aurora": ("Aurora Grid Initiative", "The Aurora Grid Initiative is a research programme on arctic power grids, "
               "launched in 2018 and led by Maya Okafor. It is based in Norhaven."),
    "okafor": ("Maya Okafor", "Maya Okafor is an electrical engineer. She graduated from the Calder Institute of "
               "Technology and worked on grid stability."),
    "northgate": ("Northgate University", "Northgate University is a public university. Many engineers graduated "
                  "from Northgate University, and its faculty led several research projects and initiatives."),
    "funding": ("Grid research funding", "Research initiatives on power grids are usually led by engineers who "
                "graduated from a technical university or institute of technology."),
    "news": ("Engineers join arctic grid research", "Many engineers who graduated from Northgate University joined "
             "the Aurora Grid Initiative, which leads several research projects on power grids."),
    "kestrel": ("Kestrel Telescope Project", "The Kestrel Telescope Project built a large optical telescope in "
                "Valcrest, completed in 2020. The project is directed by Tomas Reyes."),
    "reyes": ("Tomas Reyes", "Tomas Reyes is an astronomer born in Santa Lucia. He studied at Veldt University."),
}


def _ingest(sag: SAG, docs: dict[str, tuple[str, str]]) -> None:
    for uri, (title, text) in docs.items():
        sag.ingest_text(text, uri=uri, title=title)


def _documents(sag: SAG, question: str) -> list[str]:
    seen: list[str] = []
    for hit in sag.search(question, top_n=10).chunks:
        if hit.document_uri not in seen:
            seen.append(hit.document_uri)
    return seen


def test_chinese_two_hop_question_ranks_the_bridge_above_shared_words(sag: SAG) -> None:
    _ingest(sag, ZH)
    ranked = _documents(sag, "青岚计划的主持人毕业于哪所大学？")
    assert set(ranked[:2]) == {"qinglan", "shenmo"}, ranked
    for distractor in ("linchuan-univ", "rules", "nanhu"):
        assert distractor not in ranked or ranked.index("shenmo") < ranked.index(distractor), ranked
    ranked = _documents(sag, "星槎计划的负责人毕业于哪所大学？")
    assert set(ranked[:2]) == {"xingcha", "luxingzhou"}, ranked


def test_english_two_hop_question_ranks_the_bridge_above_shared_words(sag: SAG) -> None:
    _ingest(sag, EN)
    # Before: aurora, news (the named project and the question's words, not its leader), okafor third.
    ranked = _documents(sag, "Which institute did the person who led the Aurora Grid Initiative graduate from?")
    assert set(ranked[:2]) == {"aurora", "okafor"}, ranked
    assert ranked.index("okafor") < ranked.index("news") < ranked.index("northgate"), ranked
    ranked = _documents(sag, "Which university did the director of the Kestrel Telescope Project study at?")
    assert set(ranked[:2]) == {"kestrel", "reyes"}, ranked

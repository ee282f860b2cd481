"""Issue #33 item 3: one entity's keys in two languages linked (sag.key_aliases), and a question in one language
finding the evidence written in the other through the link.

Chinese news gives English names in parentheses ("北溟大学（Beiming University）"); ingestion links the two keys
(sag.derive_key_aliases); a question naming the English name then names the Chinese key too, and its page (a
Chinese document with no English word in it) is found.  Before: the English question found only the news item
holding the English words; the Chinese page was third or lower (hash embedder: no cross-language cosine).
"""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
from click.testing import CliRunner

from sag_pg import SAG
from sag_pg.cli import cli
from sag_pg.db import aliases

DOCS = {
    "qinglan": ("青岚计划", "青岚计划是一项海上风电储能研究计划，于2019年启动，由沈墨主持。计划总部设在临川。"),
    "shenmo": ("沈墨", "沈墨是一位材料科学家，1978年生于江陵。她毕业于北溟大学，曾在红杉电池公司工作三年。"),
    "beiming": ("北溟大学", "北溟大学位于临川，创建于1952年，以海洋工程和船舶设计专业闻名。"),
    "signing": ("北溟大学与青岚计划签约", "北溟大学（Beiming University）与青岚计划（Qinglan Project）签订合作协议，"
                "沈墨（Shen Mo）出席签约仪式并致辞。"),
    "fjord-news": ("峡湾机器人公司设立研发中心", "峡湾机器人公司（Fjordline Robotics）宣布在临川设立研发中心，"
                   "英格丽·索尔贝格（Ingrid Solberg）出席揭牌仪式。"),
    "fjordline": ("Fjordline Robotics", "Fjordline Robotics is a Norwegian company founded in 2011 in Bodø by Ingrid "
                  "Solberg. It builds underwater inspection robots for offshore platforms."),
    "kestrel": ("Kestrel Telescope Project", "The Kestrel Telescope Project built a large optical telescope in "
                "Valcrest, completed in 2020."),
    "grid": ("Grid research", "Research initiatives on power grids were launched in 2018 by several universities."),
}


def _ingest(sag: SAG) -> None:
    for uri, (title, text) in DOCS.items():
        sag.ingest_text(text, uri=uri, title=title)


def _documents(sag: SAG, question: str) -> list[str]:
    seen: list[str] = []
    for hit in sag.search(question, top_n=10).chunks:
        if hit.document_uri not in seen:
            seen.append(hit.document_uri)
    return seen


def _pairs(conn: psycopg.Connection) -> set[tuple[str, str]]:
    sid = int(conn.execute("select id from sag.sources where name = 'default'").fetchone()[0])
    return {tuple(sorted((p.key_name, p.alias_name))) for p in aliases.list_aliases(conn, sid) if not p.rejected}


def test_ingest_links_names_given_in_parentheses(sag: SAG, db_conn: psycopg.Connection) -> None:
    _ingest(sag)
    pairs = _pairs(db_conn)
    expected = {("Beiming University", "北溟大学"), ("Qinglan Project", "青岚计划"), ("Shen Mo", "沈墨"),
                ("Fjordline Robotics", "峡湾机器人公司"), ("Ingrid Solberg", "英格丽·索尔贝格")}
    assert expected <= pairs, pairs
    # Only the whole name before the parentheses: not 机器人公司 of 峡湾机器人公司, not 贝格 of 索尔贝格.
    assert not any("机器人公司" == a or "机器人公司" == b or "贝格" in (a, b) for a, b in pairs), pairs
    assert len(pairs) == len(expected), pairs


def test_an_english_question_finds_the_chinese_page(sag: SAG) -> None:
    _ingest(sag)
    ranked = _documents(sag, "When was the Qinglan Project launched?")
    assert ranked[0] == "qinglan", ranked
    ranked = _documents(sag, "When was Beiming University founded?")
    assert ranked[0] == "beiming", ranked


def test_a_chinese_question_finds_the_english_page(sag: SAG) -> None:
    _ingest(sag)
    ranked = _documents(sag, "峡湾机器人公司成立于哪一年？")
    assert ranked[0] == "fjordline", ranked


def test_an_undone_alias_stays_undone(sag: SAG, db_conn: psycopg.Connection) -> None:
    _ingest(sag)
    sid = int(db_conn.execute("select id from sag.sources where name = 'default'").fetchone()[0])
    pair = next(p for p in aliases.list_aliases(db_conn, sid) if {p.key_name, p.alias_name} == {"沈墨", "Shen Mo"})
    assert aliases.reject_alias(db_conn, sid, pair.alias_key_id, pair.key_id)
    assert ("Shen Mo", "沈墨") not in _pairs(db_conn)
    assert aliases.derive_aliases(db_conn, sid) == 0  # derivation again adds nothing back
    assert ("Shen Mo", "沈墨") not in _pairs(db_conn)
    assert not aliases.reject_alias(db_conn, sid, pair.key_id, pair.key_id + 10**9)
    # Given again by the user, it counts again.
    assert aliases.add_aliases(db_conn, sid, [("shen mo", "沈墨"), ("Nobody", "沈墨")]) == [
        ("shen mo", "沈墨", 1), ("Nobody", "沈墨", 0)]
    assert ("Shen Mo", "沈墨") in _pairs(db_conn)


def test_cli_lists_adds_and_undoes_aliases(sag: SAG, db_dsn: str, tmp_path: Path) -> None:
    _ingest(sag)
    env = {"SAG_DATABASE_URL": db_dsn, "SAG_HOME": str(tmp_path / "home")}
    listed = CliRunner().invoke(cli, ["source", "default", "--aliases", "--json"], env=env)
    assert listed.exit_code == 0, listed.output
    rows = json.loads(listed.output)["aliases"]
    assert any({r["key"], r["alias"]} == {"organization:北溟大学", "organization:Beiming University"} for r in rows)
    undone = CliRunner().invoke(cli, ["source", "default", "--unalias", "沈墨=Shen Mo"], env=env)
    assert undone.exit_code == 0, undone.output
    names = tmp_path / "aliases.json"
    names.write_text(json.dumps({"Kestrel Telescope Project": "红隼望远镜项目", "青岚计划": "Qinglan Project"}),
                     encoding="utf-8")
    added = CliRunner().invoke(cli, ["source", "default", "--add-aliases", str(names)], env=env)
    assert added.exit_code == 0, added.output
    assert "红隼望远镜项目" in added.output  # named no key: reported
    listed = CliRunner().invoke(cli, ["source", "default", "--aliases", "--json"], env=env)
    rows = json.loads(listed.output)["aliases"]
    shen = [r for r in rows if {r["key"], r["alias"]} == {"person:沈墨", "person:Shen Mo"}]
    assert shen and shen[0]["rejected"] is True

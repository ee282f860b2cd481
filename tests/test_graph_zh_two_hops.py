"""Issue #33: `graph related` two hops from a Chinese project reaches the university where its leader studied —
the extractor keeps 北溟大学 (an organization, not 于北溟) and 青岚计划 (one key), so the co-occurrence graph has
the path 青岚计划 — 沈墨 — 北溟大学."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from sag_pg import SAG
from sag_pg.cli import cli
from sag_pg.config import Settings

DOCS = {
    "qinglan.md": "# 青岚计划\n\n青岚计划由沈墨主持，目标是建造新一代海洋观测平台。青岚计划的总部设在舟山。\n",
    "shenmo.md": "# 沈墨\n\n沈墨毕业于北溟大学，后来在海洋研究所工作了十年。\n",
    "other.md": "# 北辰公司\n\n北辰公司的工程师大多毕业于南岭大学。\n",
}


def test_two_hops_from_a_chinese_project_reach_the_leaders_university(db_dsn: str, tmp_path: Path) -> None:
    with SAG(settings=Settings(database_url=db_dsn, home=tmp_path / "home")) as sag:
        for uri, text in DOCS.items():
            sag.ingest_text(text, uri=uri, source="zh")
        one_hop = {r.name: r.distance for r in sag.graph.get_related("青岚计划", 1, source="zh")}
        two_hops = {r.name: r.distance for r in sag.graph.get_related("青岚计划", 2, source="zh")}
    assert one_hop.get("沈墨") == 1
    assert "北溟大学" not in one_hop and two_hops.get("北溟大学") == 2
    assert "南岭大学" not in two_hops and "于北溟" not in two_hops
    result = CliRunner().invoke(cli, ["graph", "related", "青岚计划", "--depth", "2", "--source", "zh"],
                                env={"SAG_DATABASE_URL": db_dsn, "SAG_HOME": str(tmp_path / "home")})
    assert result.exit_code == 0 and "北溟大学" in result.output

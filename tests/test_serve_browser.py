"""The web page of `sag-pg serve`, used as a person would, in a real headless Chromium (Debian's package,
driven by Playwright): type a question, see the expected document, open it, open a key's graph.

The `browser` lane (deselected by default; `.ci/run` runs `pytest -m browser` after installing Debian's
chromium).  Screenshots go to the test's tmp_path, or to SAG_SCREENSHOTS when set.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from sag_pg import SAG
from sag_pg.config import Settings

from .test_serve import _server

pytestmark = pytest.mark.browser

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
DOCS = {
    "notes/halvard.md": "# Halvard Berg\n\nHalvard Berg founded Fjord Capital in Oslo in 1998. Fjord Capital financed "
                        "the Svalbard expedition of 2004.\n\n## Later life\n\nBerg retired to Tromsø in 2015.\n",
    "notes/expedition.md": "# Svalbard expedition\n\nThe Svalbard expedition of 2004 sailed on the ship Kronprins "
                           "Haakon and mapped the glaciers near Longyearbyen.\n",
    "notes/shenmo.md": "# 沈墨\n\n沈墨毕业于北溟大学，后来主持青岚计划。青岚计划的总部设在上海。\n",
}


@pytest.fixture
def page_server(db_dsn: str, tmp_path: Path):  # type: ignore[no-untyped-def]
    with SAG(settings=Settings(database_url=db_dsn, home=tmp_path / "home")) as sag:
        for uri, text in DOCS.items():
            sag.ingest_text(text, uri=uri, source="research")
    with _server(db_dsn, tmp_path, "--allow-writes") as base:
        yield base


def test_search_open_a_document_and_an_entity_graph(page_server: str, tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    shots = Path(os.environ.get("SAG_SCREENSHOTS") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 860})
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(page_server + "/")
            page.wait_for_selector("body[data-ready='1']")
            assert page.locator("#source option").all_inner_texts()[0].startswith("research")
            # A question, typed and submitted.
            page.fill("#q", "Who financed the Svalbard expedition?")
            page.click("#search-form button")
            page.wait_for_selector("article.hit")
            first = page.locator("article.hit").first
            assert "notes/halvard.md" in first.inner_text() or "notes/expedition.md" in first.inner_text()
            assert "Fjord Capital" in page.locator("#view").inner_text()
            page.screenshot(path=str(shots / "search.png"), full_page=True)
            # The document, in reading order with its events and keys.
            page.locator("article.hit h3 a", has_text="Halvard Berg").first.click()
            page.wait_for_selector("#doc-title")
            assert page.inner_text("#doc-title") == "Halvard Berg"
            assert page.locator("section.chunk").count() >= 2
            page.screenshot(path=str(shots / "document.png"), full_page=True)
            # A key of the document: its entity view with a graph of its neighbours.
            page.locator("section.chunk a.key", has_text="Fjord Capital").first.click()
            page.wait_for_selector("#entity-title")
            page.wait_for_function("window.sagGraph && window.sagGraph.nodes().length > 1")
            names = page.evaluate("window.sagGraph.nodes().map(n => n.data('label'))")
            assert "Fjord Capital" in names[0] and len(names) > 1
            page.screenshot(path=str(shots / "entity.png"), full_page=True)
            # Chinese text searches and renders too.
            page.fill("#q", "沈墨毕业于哪所大学")
            page.click("#search-form button")
            page.wait_for_selector("article.hit")
            assert "北溟大学" in page.locator("article.hit").first.inner_text()
            page.screenshot(path=str(shots / "search-zh.png"), full_page=True)
            assert errors == []
        finally:
            browser.close()

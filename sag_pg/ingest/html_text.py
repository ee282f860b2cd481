"""The text of an HTML page, as Markdown-ish plain text, with the standard library's ``html.parser``.

Headings become ``#`` lines (so the chunker's sections and titles follow the page), list items ``- `` lines,
paragraphs and other blocks are set apart by blank lines; scripts, styles, templates and the head's content
(except the ``<title>``) are dropped; character references are decoded.  No rendering, no CSS: what a reader
of the page's source would call its text.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

__all__ = ["html_to_text"]

_DROPPED = {"script", "style", "template", "noscript", "head", "svg", "iframe", "object"}
_BLOCKS = {"p", "div", "section", "article", "main", "header", "footer", "nav", "aside", "blockquote", "pre",
           "table", "tr", "ul", "ol", "dl", "dt", "dd", "figure", "figcaption", "form", "hr", "address", "body"}
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_VOID = {"br", "hr", "img", "input", "meta", "link", "area", "base", "col", "embed", "source", "track", "wbr"}


class _TextParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title_parts: list[str] = []
        self.dropped = 0  # depth inside elements whose content is not text
        self.in_title = False
        self.in_pre = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self.in_title = True
        elif tag == "body":  # the head's end tag may be left out
            self.dropped = 0
        elif tag in _DROPPED:
            self.dropped += 1
        elif self.dropped:
            return
        elif tag in _HEADINGS:
            self.parts.append("\n\n" + "#" * _HEADINGS[tag] + " ")
        elif tag == "li":
            self.parts.append("\n- ")
        elif tag == "br":
            self.parts.append("\n")
        elif tag in ("td", "th"):
            self.parts.append(" | ")
        elif tag in _BLOCKS:
            self.parts.append("\n\n")
            if tag == "pre":
                self.in_pre += 1

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _VOID:
            self.handle_starttag(tag, attrs)

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self.in_title = False
        elif tag in _DROPPED:
            self.dropped = max(0, self.dropped - 1)
        elif self.dropped:
            return
        elif tag in _HEADINGS or tag in _BLOCKS:
            self.parts.append("\n\n")
            if tag == "pre":
                self.in_pre = max(0, self.in_pre - 1)

    def handle_data(self, data: str) -> None:
        if self.in_title:
            self.title_parts.append(data)
        elif not self.dropped:
            self.parts.append(data if self.in_pre else re.sub(r"\s+", " ", data))


def html_to_text(html: str) -> tuple[str, str]:
    """(title, text) of an HTML document; the title is the ``<title>``'s text ('' without one)."""
    parser = _TextParser()
    parser.feed(html)
    parser.close()
    lines = [line.strip() for line in "".join(parser.parts).split("\n")]
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    return " ".join("".join(parser.title_parts).split()), text

"""Split a Markdown or plain-text document into chunks (dataflow-activation §3.2, done more carefully).

Decisions, all visible in the output:

* Sections start at ATX headings ``#`` .. ``######`` (up to 3 spaces of indent, a space or end of line
  after the hashes, optional closing hashes). ``#`` lines inside fenced code blocks (```` ``` ```` or
  ``~~~``) are code, not headings. Setext headings (``===``/``---`` underlines) are not recognised.
* A chunk's title is its heading path, ``"Parent > Child"``; text before the first heading gets the
  document title. A heading without body text makes no chunk: it lives on only as the parent part of
  the titles below it (a document that is only headings yields no chunks at all).
* ``start_line``/``end_line`` are 1-based, inclusive and cover the chunk's content only (not its
  heading line), so ``lines[start_line-1:end_line]`` is exactly where the content comes from. Lines are
  counted after universal-newline normalisation (``\\r\\n``, ``\\r`` and ``\\n`` all end a line), as
  Python's ``open()`` reads them.
* Control characters other than tab and newline are removed from the content (PostgreSQL rejects NUL in
  text; the rest are junk from binary files). Line numbers are unaffected.
* Size: one weighted measure instead of two thresholds: a wide (CJK) character costs
  ``max_chars / cjk_max_chars`` (2 by default), anything else 1, and a chunk costs at most ``max_chars``.
  So pure Chinese gets ~``cjk_max_chars`` characters, English ``max_chars``, mixed text in between,
  with no jump at a "mostly CJK" threshold.
* A section that is too big is split at blank lines (a fenced code block counts as one paragraph),
  then at sentence ends, then (one giant sentence) at the last space, CJK comma or CJK character before
  the limit, and only as a last resort mid-word. Pieces are packed greedily; if the last piece of a
  section ends up tiny (under a quarter of the limit), pieces are rebalanced so it is not left alone.

:func:`markdown_to_prose` gives the prose of a chunk (markup and code removed) for sentence extraction.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

import numpy as np

from sag_pg.text.tokenize import sentence_spans
from sag_pg.types import Chunk

__all__ = ["chunk_document", "markdown_to_prose", "text_cost"]

_CONTROL_CHARS_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")
_ATX_HEADING_RE = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
_CLOSING_HASHES_RE = re.compile(r"(?:^|[ \t]+)#+$")
_FENCE_RE = re.compile(r" {0,3}(`{3,}|~{3,})")
# Wide (CJK) code points, as inclusive ranges: the regex and the splitter's prefix sums both come from here.
_WIDE_RANGES = (
    (0x1100, 0x11FF), (0x2E80, 0x9FFF), (0xA960, 0xA97F), (0xAC00, 0xD7AF), (0xF900, 0xFAFF),
    (0xFE30, 0xFE4F), (0xFF00, 0xFFEF), (0x20000, 0x3FFFF),
)
_WIDE_CHARS_RE = re.compile("[" + "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in _WIDE_RANGES) + "]")
_MARKDOWN_LINK_RE = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_INLINE_MARKUP_RE = re.compile(r"\*\*|__|`")
_TABLE_SEPARATOR_RE = re.compile(r"\s*\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)*\|?\s*")
_BLOCK_MARKER_RE = re.compile(r"\s*(?:#{1,6}\s+|>+\s?|[-*+]\s+|\d{1,3}[.)]\s+)")
_NEWLINE_RE = re.compile("\n")
_SOFT_CUT_CHARS = "，、：；,;:"
_TINY_TAIL_FRACTION = 0.25


def text_cost(text: str, *, wide_weight: float = 2.0) -> float:
    """Size of ``text`` with wide (CJK) characters counting ``wide_weight`` each."""
    return len(text) + (wide_weight - 1.0) * len(_WIDE_CHARS_RE.findall(text))


@dataclass(frozen=True)
class _Section:
    title: str
    first_line: int  # 0-based index of the first body line
    last_line: int  # 0-based, inclusive


def _clean_lines(text: str) -> list[str]:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return [_CONTROL_CHARS_RE.sub("", line) for line in text.split("\n")]


def _heading_text(raw: str | None) -> str:
    text = _CLOSING_HASHES_RE.sub("", (raw or "").strip()).strip()
    text = _MARKDOWN_LINK_RE.sub(r"\1", text)
    return _INLINE_MARKUP_RE.sub("", text).strip()


def _opens_fence(line: str) -> str | None:
    match = _FENCE_RE.match(line)
    if match is None or (match.group(1)[0] == "`" and "`" in line[match.end() :]):
        return None  # a backtick fence's info string may not contain backticks (CommonMark)
    return match.group(1)


def _closes_fence(line: str, fence: str) -> bool:
    match = _FENCE_RE.match(line)
    return (
        match is not None
        and match.group(1)[0] == fence[0]
        and len(match.group(1)) >= len(fence)
        and not line[match.end() :].strip()
    )


def _sections(lines: list[str], document_title: str) -> list[_Section]:
    sections: list[_Section] = []
    heading_path: list[tuple[int, str]] = []
    title = document_title.strip()
    body_start = 0
    fence: str | None = None
    for index, line in enumerate(lines):
        if fence is not None:
            if _closes_fence(line, fence):
                fence = None
            continue
        fence = _opens_fence(line)
        if fence is not None:
            continue
        match = _ATX_HEADING_RE.match(line)
        if match is None:
            continue
        sections.append(_Section(title, body_start, index - 1))
        level = len(match.group(1))
        while heading_path and heading_path[-1][0] >= level:
            heading_path.pop()
        heading_path.append((level, _heading_text(match.group(2))))
        title = " > ".join(text for _, text in heading_path if text)
        body_start = index + 1
    sections.append(_Section(title, body_start, len(lines) - 1))
    return sections


class _Splitter:
    """Cuts one section's body text into pieces of bounded cost, as (start, end) offsets.

    Every cost is answered in O(1) from prefix counts of wide characters, and the end of a piece is
    found by bisection: linear in the body's length, even for one multi-megabyte line without a
    sentence end (re-measuring the rest of such a line for every piece made it quadratic).
    """

    def __init__(self, body: str, limit: float, wide_weight: float) -> None:
        self.body = body
        self.limit = limit
        self.wide_weight = wide_weight
        codes = np.frombuffer(body.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        wide = np.zeros(len(codes), dtype=bool)
        for low, high in _WIDE_RANGES:
            wide |= (codes >= low) & (codes <= high)
        # _wide_before[i]: wide characters in body[:i]
        self._wide_before = np.zeros(len(codes) + 1, dtype=np.int32 if len(codes) < 2**31 else np.int64)
        np.cumsum(wide, out=self._wide_before[1:])

    def cost(self, start: int, end: int) -> float:
        """``text_cost(body[start:end])``, without looking at the characters."""
        wide = int(self._wide_before[end] - self._wide_before[start])
        return (end - start) + (self.wide_weight - 1.0) * wide

    def _furthest_end(self, start: int, end: int) -> int:
        """The largest ``m`` in ``[start, end]`` with ``cost(start, m) <= limit`` (cost grows with ``m``)."""
        low, high = start, end
        while low < high:
            middle = (low + high + 1) // 2
            if self.cost(start, middle) <= self.limit:
                low = middle
            else:
                high = middle - 1
        return low

    def pieces(self) -> list[tuple[int, int]]:
        units: list[tuple[int, int]] = []
        for paragraph in self._paragraphs():
            if self.cost(*paragraph) <= self.limit:
                units.append(paragraph)
                continue
            for start, end in sentence_spans(self.body[paragraph[0] : paragraph[1]]):
                sentence = (paragraph[0] + start, paragraph[0] + end)
                if self.cost(*sentence) <= self.limit:
                    units.append(sentence)
                else:
                    units.extend(self._hard_split(*sentence))
        return self._pack(units)

    def _paragraphs(self) -> list[tuple[int, int]]:
        """Non-blank line runs separated by blank lines outside fenced code, trailing space trimmed."""
        paragraphs: list[tuple[int, int]] = []
        start = -1
        end = 0
        fence: str | None = None
        offset = 0
        for line in self.body.split("\n"):
            if fence is not None:
                if _closes_fence(line, fence):
                    fence = None
            else:
                fence = _opens_fence(line)
            if line.strip() or fence is not None:
                if start < 0:
                    start = offset
                end = offset + len(line.rstrip())
            elif start >= 0:
                paragraphs.append((start, end))
                start = -1
            offset += len(line) + 1
        if start >= 0:
            paragraphs.append((start, end))
        return [(s, e) for s, e in paragraphs if self.body[s:e].strip()]

    def _hard_split(self, start: int, end: int) -> list[tuple[int, int]]:
        """Cut one over-long sentence: at a space, a CJK comma or between CJK characters if possible."""
        pieces: list[tuple[int, int]] = []
        body = self.body
        while start < end and self.cost(start, end) > self.limit:
            max_end = max(self._furthest_end(start, end), start + 1)
            cut = self._best_cut(start, max_end)
            piece_end = cut
            while piece_end > start and body[piece_end - 1].isspace():
                piece_end -= 1
            if piece_end > start:
                pieces.append((start, piece_end))
            start = cut
            while start < end and body[start].isspace():
                start += 1
        if start < end:
            pieces.append((start, end))
        return pieces

    def _best_cut(self, start: int, max_end: int) -> int:
        body = self.body
        floor = start + (max_end - start) // 2  # never cut off less than half a piece
        for position in range(max_end, floor, -1):
            if body[position].isspace() if position < len(body) else True:
                return position
        for position in range(max_end, floor, -1):
            if body[position - 1] in _SOFT_CUT_CHARS:
                return position
        for position in range(max_end, floor, -1):
            if _WIDE_CHARS_RE.match(body, position - 1) or _WIDE_CHARS_RE.match(body, position):
                return position
        return max_end

    def _pack(self, units: list[tuple[int, int]]) -> list[tuple[int, int]]:
        groups: list[list[tuple[int, int]]] = []
        for unit in units:
            if groups and self.cost(groups[-1][0][0], unit[1]) <= self.limit:
                groups[-1].append(unit)
            else:
                groups.append([unit])
        if len(groups) >= 2:
            self._rebalance_tail(groups[-2], groups[-1])
        return [(group[0][0], group[-1][1]) for group in groups]

    def _rebalance_tail(self, previous: list[tuple[int, int]], last: list[tuple[int, int]]) -> None:
        if self.cost(last[0][0], last[-1][1]) >= self.limit * _TINY_TAIL_FRACTION:
            return
        while len(previous) >= 2:
            new_last_cost = self.cost(previous[-1][0], last[-1][1])
            new_previous_cost = self.cost(previous[0][0], previous[-2][1])
            if new_last_cost > self.limit or new_last_cost > new_previous_cost:
                break
            last.insert(0, previous.pop())


def chunk_document(
    text: str, *, max_chars: int = 1200, cjk_max_chars: int = 600, title: str = ""
) -> list[Chunk]:
    """Chunks of ``text`` with heading-path titles and exact 1-based line ranges (see module docs).

    Example: ``chunk_document("# A\\nx\\n## B\\ny")`` gives chunks titled ``"A"`` (line 2) and
    ``"A > B"`` (line 4).
    """
    if max_chars <= 0 or cjk_max_chars <= 0:
        raise ValueError("max_chars and cjk_max_chars must be positive")
    wide_weight = max_chars / cjk_max_chars
    lines = _clean_lines(text)
    chunks: list[Chunk] = []
    for section in _sections(lines, title):
        if section.first_line > section.last_line:
            continue
        body = "\n".join(lines[section.first_line : section.last_line + 1])
        if not body.strip():
            continue
        newline_offsets = [match.start() for match in _NEWLINE_RE.finditer(body)]
        splitter = _Splitter(body, float(max_chars), wide_weight)
        for start, end in splitter.pieces():
            content = body[start:end]
            # Offsets → 1-based line numbers: count the newlines before the first and last character.
            start_line = section.first_line + 1 + bisect.bisect_left(newline_offsets, start)
            end_line = section.first_line + 1 + bisect.bisect_left(newline_offsets, end - 1)
            chunks.append(Chunk(len(chunks), section.title, content, start_line, end_line))
    return chunks


def markdown_to_prose(markdown: str) -> str:
    """The prose of a Markdown text, for sentence-level extraction.

    Control characters go (as in chunks), fenced code is dropped (it states no facts), table separator
    rows too; links become their text, ``**``/``__``/backticks go; list items, quotes, headings and
    table rows (cells joined with ", ") are set apart by blank lines so that no sentence runs from one
    item into the next.
    """
    lines: list[str] = []
    fence: str | None = None
    for line in _clean_lines(markdown):
        if fence is not None:
            if _closes_fence(line, fence):
                fence = None
            continue
        fence = _opens_fence(line)
        if fence is not None or _TABLE_SEPARATOR_RE.fullmatch(line):
            continue
        stripped = line.strip()
        marker = _BLOCK_MARKER_RE.match(line)
        if stripped.startswith("|"):
            line = ", ".join(cell.strip() for cell in stripped.strip("|").split("|") if cell.strip())
        elif marker is not None:
            line = line[marker.end() :]
        line = _INLINE_MARKUP_RE.sub("", _MARKDOWN_LINK_RE.sub(r"\1", line))
        is_block = stripped.startswith("|") or marker is not None
        lines.extend(("", line, "") if is_block else (line,))
    return "\n".join(lines)

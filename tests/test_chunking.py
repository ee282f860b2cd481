"""Markdown-aware chunking with exact line ranges (sag_pg.text.chunking)."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from types import FrameType

import pytest

from sag_pg.text import chunking
from sag_pg.text.chunking import chunk_document, text_cost
from sag_pg.types import Chunk

MARKDOWN = """Intro paragraph before any heading.

# Three Kingdoms
## Battle of Guandu
公元200年，曹操与袁绍在官渡展开决战。
曹操以少胜多。

## Empty Section
### Red Cliffs
```python
# not a heading
```
Cao Cao lost at Red Cliffs in 208.
"""


def test_markdown_document_titles_and_line_ranges() -> None:
    assert chunk_document(MARKDOWN, title="Doc") == [
        Chunk(0, "Doc", "Intro paragraph before any heading.", 1, 1),
        Chunk(
            1,
            "Three Kingdoms > Battle of Guandu",
            "公元200年，曹操与袁绍在官渡展开决战。\n曹操以少胜多。",
            5,
            6,
        ),
        Chunk(
            2,
            "Three Kingdoms > Empty Section > Red Cliffs",
            "```python\n# not a heading\n```\nCao Cao lost at Red Cliffs in 208.",
            10,
            13,
        ),
    ]


def test_whole_line_chunks_map_back_to_the_source_lines() -> None:
    lines = MARKDOWN.split("\n")
    for chunk in chunk_document(MARKDOWN, title="Doc"):
        assert "\n".join(lines[chunk.start_line - 1 : chunk.end_line]) == chunk.content


def test_plain_text_without_headings_is_one_chunk_with_the_document_title() -> None:
    text = "First paragraph.\n\nSecond paragraph,\nstill second.\n\n\nThird."
    assert chunk_document(text, title="Notes") == [Chunk(0, "Notes", text, 1, 7)]


def test_leading_and_trailing_blank_lines_are_outside_the_range() -> None:
    assert chunk_document("\n\n  \nBody line.\n\n") == [Chunk(0, "", "Body line.", 4, 4)]


def test_oversized_section_is_split_at_blank_lines() -> None:
    paragraphs = [c * 300 for c in "abcde"]
    text = "\n\n".join(paragraphs)  # paragraph i is on line 2i-1
    chunks = chunk_document(text, max_chars=700)
    # 300 + 2 + 300 = 602 fits in 700, a third paragraph would not.
    assert [(c.content, c.start_line, c.end_line) for c in chunks] == [
        (paragraphs[0] + "\n\n" + paragraphs[1], 1, 3),
        (paragraphs[2] + "\n\n" + paragraphs[3], 5, 7),
        (paragraphs[4], 9, 9),
    ]
    assert [c.ordinal for c in chunks] == [0, 1, 2]


def test_tiny_last_piece_is_rebalanced_instead_of_left_alone() -> None:
    text = "\n\n".join(["a" * 400, "b" * 250, "c" * 100])
    # Greedy would give [400 + 250] and [100]; 100 < 700/4, so the 250 moves down to join it.
    chunks = chunk_document(text, max_chars=700)
    assert [(c.content, c.start_line, c.end_line) for c in chunks] == [
        ("a" * 400, 1, 1),
        ("b" * 250 + "\n\n" + "c" * 100, 3, 5),
    ]


def test_oversized_paragraph_is_split_at_sentences() -> None:
    sentences = [f"Item{i} bbbb cccc dddd eeee ffff gggg hhhh iiii." for i in range(10)]  # 46 characters each
    text = "Intro line\n" + " ".join(sentences)
    chunks = chunk_document(text, max_chars=100, title="T")
    # "Intro line" + newline + one sentence is 57 <= 100; two sentences are 46 + 1 + 46 = 93; three are 140.
    assert [(c.content, c.start_line, c.end_line) for c in chunks] == [
        (f"Intro line\n{sentences[0]}", 1, 2),
        (f"{sentences[1]} {sentences[2]}", 2, 2),
        (f"{sentences[3]} {sentences[4]}", 2, 2),
        (f"{sentences[5]} {sentences[6]}", 2, 2),
        (f"{sentences[7]} {sentences[8]}", 2, 2),
        (sentences[9], 2, 2),
    ]


def test_sentence_spanning_lines_gets_both_line_numbers() -> None:
    text = "Alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu\nnu xi omicron. Short end."
    chunks = chunk_document(text, max_chars=90)
    assert [(c.content, c.start_line, c.end_line) for c in chunks] == [
        ("Alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu\nnu xi omicron.", 1, 2),
        ("Short end.", 2, 2),
    ]


def test_50000_character_line_without_spaces_is_hard_split() -> None:
    text = "a" * 50_000
    chunks = chunk_document(text, max_chars=1200)
    assert len(chunks) == 42  # 41 x 1200 + 800
    assert [len(c.content) for c in chunks] == [1200] * 41 + [800]
    assert all((c.start_line, c.end_line) == (1, 1) for c in chunks)
    assert "".join(c.content for c in chunks) == text


def test_giant_sentence_is_never_cut_mid_word() -> None:
    text = ("word " * 10_000).strip()
    chunks = chunk_document(text, max_chars=1200)
    assert all(set(c.content.split(" ")) == {"word"} for c in chunks)
    assert all(len(c.content) <= 1200 for c in chunks)
    assert sum(len(c.content.split(" ")) for c in chunks) == 10_000


def test_cjk_characters_count_double() -> None:
    assert text_cost("abc中文") == 7
    assert [len(c.content) for c in chunk_document("中" * 1000)] == [600, 400]
    assert len(chunk_document("a" * 600 + "中" * 300)) == 1  # cost 600 + 2 x 300 = 1200
    assert len(chunk_document("a" * 600 + "中" * 301)) == 2


def test_long_chinese_text_is_cut_after_commas_when_possible() -> None:
    clause = "曹操率军南下" * 5 + "，"  # 31 characters, cost 62
    chunks = chunk_document(clause * 20, max_chars=200, cjk_max_chars=100)  # 100 CJK characters a chunk
    assert all(c.content.endswith("，") for c in chunks)
    assert [len(c.content) for c in chunks] == [93] * 6 + [62]


@pytest.mark.parametrize("text", ["", "   ", "\n\n\n", "\t \n  \n", "# only heading", "# A\n## B\n\n### C\n"])
def test_no_chunks_from_empty_text_or_headings_only(text: str) -> None:
    assert chunk_document(text, title="Doc") == []


def test_heading_without_body_survives_only_as_parent() -> None:
    assert chunk_document("## A\n## B\ntext") == [Chunk(0, "B", "text", 3, 3)]
    assert chunk_document("# A\n## B\ntext") == [Chunk(0, "A > B", "text", 3, 3)]


def test_heading_syntax() -> None:
    text = (
        "## **Bold** `code` [link](http://x) ##\nbody\n#hashtag is text\n####### seven is text\n"
        "   ### indented ok\nmore"
    )
    assert chunk_document(text) == [
        Chunk(0, "Bold code link", "body\n#hashtag is text\n####### seven is text", 2, 4),
        Chunk(1, "Bold code link > indented ok", "more", 6, 6),
    ]


def test_tilde_fences_and_unclosed_fences_hide_headings() -> None:
    text = "# Real\n~~~\n# fake\n~~~\nafter\n```\n# also fake"
    assert chunk_document(text) == [Chunk(0, "Real", "~~~\n# fake\n~~~\nafter\n```\n# also fake", 2, 7)]


def test_control_characters_are_removed_and_newlines_normalised() -> None:
    text = "abc\x00def\x07\r\nline two\rline three\x1b"
    assert chunk_document(text) == [Chunk(0, "", "abcdef\nline two\nline three", 1, 3)]


def test_binary_junk_does_not_crash() -> None:
    junk = bytes(range(256)).decode("latin-1") * 20
    chunks = chunk_document(junk, max_chars=300)
    assert chunks
    assert all("\x00" not in c.content and c.content.strip() for c in chunks)


def test_invalid_limits() -> None:
    with pytest.raises(ValueError):
        chunk_document("x", max_chars=0)
    with pytest.raises(ValueError):
        chunk_document("x", cjk_max_chars=-1)


UNITS = [
    "Alice met Bob in Paris on Monday. ",   # many sentences
    "alice met bob in paris on monday ",    # one sentence: cut at spaces
    "abcdefghij",                           # one word: cut mid-word
    "爱丽丝在巴黎遇见了鲍勃",                   # unpunctuated Chinese: cut between characters
]
UNIT_IDS = ["sentences", "one-sentence", "one-word", "chinese"]


def _line(unit: str, length: int) -> str:
    return (unit * (length // len(unit) + 1))[:length]


@pytest.mark.parametrize("unit", UNITS, ids=UNIT_IDS)
def test_a_2_mb_single_line_is_cut_into_bounded_pieces(unit: str) -> None:
    text = _line(unit, 2_000_000)
    chunks = chunk_document(text)
    assert "".join(c.content for c in chunks).replace(" ", "") == text.replace(" ", "")
    assert all(text_cost(c.content) <= 1200 for c in chunks)
    assert all(len(c.content) >= 300 for c in chunks[:-1])


class _CountingPattern:
    """The chunker's wide-character regex, counting the characters it is given to scan."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern, self.characters = pattern, 0

    def findall(self, text: str, *args: int) -> list[str]:
        self.characters += len(text)
        return self.pattern.findall(text, *args)

    def match(self, text: str, pos: int = 0, *args: int) -> re.Match[str] | None:
        self.characters += 1
        return self.pattern.match(text, pos, *args)

    def __getattr__(self, name: str) -> object:
        return getattr(self.pattern, name)


def _work(text: str, monkeypatch: pytest.MonkeyPatch) -> int:
    """The work of chunking ``text``, counted: lines of sag_pg/text run, plus characters scanned by the regex
    (a C loop that line counting cannot see; the quadratic splitter re-scanned the rest of the line with it)."""
    counting = _CountingPattern(chunking._WIDE_CHARS_RE)
    monkeypatch.setattr(chunking, "_WIDE_CHARS_RE", counting)
    text_dir = str(Path(chunking.__file__).parent)
    lines = 0

    def count_lines(frame: FrameType, event: str, arg: object) -> object:
        nonlocal lines
        if event == "line":
            lines += 1
        return count_lines

    def tracer(frame: FrameType, event: str, arg: object) -> object:
        return count_lines if frame.f_code.co_filename.startswith(text_dir) else None

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        chunk_document(text)
    finally:
        sys.settrace(previous)
    monkeypatch.undo()
    return lines + counting.characters


@pytest.mark.parametrize("unit", UNITS, ids=UNIT_IDS)
def test_chunking_one_long_line_is_linear_in_counted_work(unit: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Twice the text, twice the work (no clock: counted).  The quadratic splitter (before d5d7654: every
    piece re-measured the rest of the line) does ~4x the work at twice the length."""
    small, large = _work(_line(unit, 100_000), monkeypatch), _work(_line(unit, 200_000), monkeypatch)
    assert small > 100_000 / 1200  # the counting sees the work: at least a step per piece
    assert large / small < 2.3, (small, large)

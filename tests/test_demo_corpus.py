"""The packaged demo corpus: documents are readable Markdown, queries point at real files, and every
two-hop query really needs its hop (no distinctive word shared between the question and the answer)."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

from sag_pg.demo import DEMO_QUERIES, DEMO_SOURCE, DemoQuery, demo_docs_dir, demo_paths
from sag_pg.text.tokenize import load_jieba

HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
HAN_WORD = re.compile(r"^[\u3400-\u4dbf\u4e00-\u9fff]{2,}$")
ENGLISH_WORD = re.compile(r"[a-z0-9]+")

# Function words only: anything distinctive must count as shared.
ENGLISH_STOPWORDS = frozenset(
    {
        "what", "which", "when", "where", "whom", "whose", "that", "this", "these", "those", "with",
        "from", "into", "onto", "have", "been", "were", "does", "they", "them", "their", "there", "then",
        "than", "also", "much", "many", "some", "such", "each", "very", "could", "would", "should", "about",
    }
)  # fmt: skip
CHINESE_STOPWORDS = frozenset({"什么", "哪里", "哪一年", "哪个", "哪位", "那位", "此人", "他的", "她的"})
CHINESE_FUNCTION_CHARS = frozenset("的了在是谁给和与把被却时那这之也就都而及其向中")

TWO_HOP = [q for q in DEMO_QUERIES if q.hops == 2]


def _text(suffix: str) -> str:
    return (demo_docs_dir() / suffix).read_text(encoding="utf-8")


def _english_words(text: str) -> set[str]:
    words = set()
    for word in ENGLISH_WORD.findall(text.lower().replace("'s", "")):
        if len(word) >= 4 and word not in ENGLISH_STOPWORDS:
            words.add(word[:-1] if len(word) > 4 and word.endswith("s") else word)  # "Scotts" ~ "Scott"
    return words


def _chinese_words(text: str) -> set[str]:
    jieba = load_jieba()
    tokens = jieba.lcut(text)
    # lcut_for_search also yields the dictionary words inside long ones (白帝城 -> 白帝, 帝城, 白帝城).
    words = set(tokens) | set(jieba.lcut_for_search(text))
    # Names missing from jieba's dictionary come out as single characters (猇亭 -> 猇, 亭): take the
    # bigrams of such runs too, skipping those with a function character (在猇, 给了, 了谁).
    for first, second in itertools.pairwise(tokens):
        pair = first + second
        if len(pair) == 2 and HAN_WORD.match(pair) and not set(pair) & CHINESE_FUNCTION_CHARS:
            words.add(pair)
    return {w for w in words if HAN_WORD.match(w) and w not in CHINESE_STOPWORDS}


def shared_words(question: str, language: str, document: str) -> set[str]:
    """Distinctive question words that also occur in ``document``.

    English: words of 4+ letters (or digits), plural ``s`` ignored, compared with the document's words.
    Chinese: jieba words of 2+ Han characters, looked up as substrings of the document, which is
    stricter than comparing segmentations (a word the document segments differently still counts).
    """
    if language == "en":
        return _english_words(question) & _english_words(document)
    if language == "zh":
        return {w for w in _chinese_words(question) if w in document}
    raise ValueError(f"unknown language {language!r}")


# ------------------------------------------------------------------------------------------ documents


def test_demo_source_name() -> None:
    assert DEMO_SOURCE == "demo"


def test_demo_paths_are_packaged_markdown() -> None:
    paths = demo_paths()
    assert paths == sorted(paths)
    assert {p.parent.name for p in paths} == {"three-kingdoms", "tech-company"}
    for folder in ("three-kingdoms", "tech-company"):
        assert 5 <= sum(p.parent.name == folder for p in paths) <= 7, folder
    for path in paths:
        assert path.is_file(), path
        assert path.suffix == ".md"
        assert Path(path).is_relative_to(demo_docs_dir())


@pytest.mark.parametrize("path", demo_paths(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_document_is_titled_utf8_markdown(path: Path) -> None:
    text = path.read_bytes().decode("utf-8")  # raises on invalid UTF-8
    assert not text.startswith("\ufeff"), "no byte-order mark"
    lines = text.splitlines()
    assert lines[0].startswith("# ") and lines[0][2:].strip(), "first line is a '# ' title"
    assert sum(line.startswith("# ") for line in lines) == 1, "exactly one '# ' title"
    assert sum(line.startswith("## ") for line in lines) >= 2, "at least two '## ' sections"
    assert text.endswith("\n") and "\r" not in text and "\t" not in text
    body = "\n".join(lines[1:])
    if path.parent.name == "three-kingdoms":
        assert 300 <= len(HAN.findall(body)) <= 900
    else:
        assert not HAN.search(text)
        assert 250 <= len(re.findall(r"[A-Za-z0-9]+(?:[-'’][A-Za-z0-9]+)*", body)) <= 600


# -------------------------------------------------------------------------------------------- queries


def test_query_set_shape() -> None:
    assert 4 <= len(DEMO_QUERIES) <= 6
    assert {q.language for q in DEMO_QUERIES} == {"zh", "en"}
    assert len(TWO_HOP) >= 3
    assert {q.language for q in TWO_HOP} == {"zh", "en"}
    assert len({q.question for q in DEMO_QUERIES}) == len(DEMO_QUERIES)
    for query in DEMO_QUERIES:
        assert isinstance(query, DemoQuery)
        with pytest.raises(AttributeError):
            query.question = "x"  # type: ignore[misc]  # frozen


@pytest.mark.parametrize("query", DEMO_QUERIES, ids=lambda q: q.question[:30])
def test_query_expected_files_exist(query: DemoQuery) -> None:
    assert query.why.strip() and query.question.strip()
    assert len(query.expected_uris_suffix) == query.hops
    assert len(set(query.expected_uris_suffix)) == len(query.expected_uris_suffix)
    folder = "three-kingdoms" if query.language == "zh" else "tech-company"
    packaged = {p.relative_to(demo_docs_dir()).as_posix() for p in demo_paths()}
    for suffix in query.expected_uris_suffix:
        assert suffix in packaged, suffix
        assert suffix.startswith(folder + "/"), suffix
    assert bool(HAN.search(query.question)) == (query.language == "zh")


@pytest.mark.parametrize("query", TWO_HOP, ids=lambda q: q.question[:30])
def test_two_hop_answer_shares_no_word_with_question(query: DemoQuery) -> None:
    bridge_doc, answer_doc = (_text(s) for s in query.expected_uris_suffix)
    shared = shared_words(query.question, query.language, answer_doc)
    assert not shared, f"{query.answer_uri_suffix} shares {sorted(shared)} with the question: not a real hop"
    # The first hop must be reachable: the question does share words with the bridge document ...
    assert shared_words(query.question, query.language, bridge_doc)
    # ... which names the bridge entity, which the answer document is about and the question never says.
    assert query.bridge is not None
    assert query.bridge in bridge_doc and query.bridge in answer_doc
    assert query.bridge.lower() not in query.question.lower()


def test_hop_check_detects_shared_words() -> None:
    """The check above can fail: one-hop phrasings of the same questions are caught."""
    zhuge = _text("three-kingdoms/zhuge-liang.md")
    assert shared_words("诸葛亮最后在哪里去世？", "zh", zhuge) >= {"诸葛亮"}
    shared = shared_words("白帝城托孤之后，这位丞相在五丈原做了什么？", "zh", zhuge)
    assert "丞相" in shared and any(w.startswith("五丈") for w in shared)  # jieba may split 五丈原
    assert shared_words("刘备死在白帝，谁接着主政？", "zh", "刘备回到白帝城后一病不起。") >= {"刘备", "白帝"}
    assert "猇亭" in shared_words("在猇亭兵败的是谁？", "zh", _text("three-kingdoms/yiling.md"))
    founding = _text("tech-company/founding.md")
    assert shared_words("What did Steve Wozniak sell to fund the Apple I?", "en", founding) >= {
        "steve",
        "wozniak",
        "apple",
    }
    assert shared_words("Who crashed near Scotts Valley?", "en", "Directed by Ridley Scott.") == {"scott"}
    assert not shared_words("What did the pilot sell?", "en", "He sold his calculator.")

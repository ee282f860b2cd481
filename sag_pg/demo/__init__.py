"""The demo corpus shipped with sag-pg: a few short documents and questions to try them with.

``sag-pg demo`` ingests :func:`demo_paths` into the :data:`DEMO_SOURCE` source and asks
:data:`DEMO_QUERIES`. There are two small collections:

* ``docs/three-kingdoms/`` - six documents in Chinese on the Three Kingdoms period (the battles of
  Guandu, Chibi and Yiling; Cao Cao, Sun Quan, Zhuge Liang), following the *Records of the Three Kingdoms*;
* ``docs/tech-company/`` - six documents in English on the history of Apple (its founding, Steve
  Wozniak, the Macintosh, NeXT, Pixar, the iPhone).

Some questions are *two-hop*: the document holding the answer shares no distinctive word with the
question and is reachable only through a bridge entity named in another document, e.g. the question
names the battle of Xiaoting (猇亭), the Yiling document says the defeated emperor entrusted his heir to
Zhuge Liang, and only the Zhuge Liang document says where Zhuge Liang died. ``tests/test_demo_corpus.py``
checks that every two-hop question really has no shared words with its answer document.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

__all__ = ["DEMO_QUERIES", "DEMO_SOURCE", "DemoQuery", "demo_docs_dir", "demo_paths"]

DEMO_SOURCE = "demo"


@dataclass(frozen=True)
class DemoQuery:
    """An example question and the documents a good retriever should return for it.

    ``expected_uris_suffix`` holds document paths relative to the ``docs`` folder (e.g.
    ``"three-kingdoms/chibi.md"``); a retriever passes the query if chunks of every one of them are
    among its top 5 results (match with ``uri.endswith(suffix)``). For a two-hop question (``bridge`` is
    set) the first file is the one the question points to and the last one holds the answer; ``bridge``
    is the entity, named in both, that connects them. ``why`` explains the hop in one sentence.
    """

    question: str
    language: str  # "zh" or "en"
    expected_uris_suffix: tuple[str, ...]
    why: str
    # Words of the answer as its document writes them: `sag-pg demo` shows the sentence that holds them.
    answer: str
    bridge: str | None = None

    @property
    def hops(self) -> int:
        return 1 if self.bridge is None else 2

    @property
    def answer_uri_suffix(self) -> str:
        """The file that holds the answer (for a two-hop question, the one reached through the bridge)."""
        return self.expected_uris_suffix[-1]


def demo_docs_dir() -> Path:
    """The folder of packaged demo documents (inside the installed package or the source checkout)."""
    return Path(str(resources.files("sag_pg.demo") / "docs"))


def demo_paths() -> list[Path]:
    """Every packaged demo document (Markdown), sorted by path for a stable ingestion order."""
    return sorted(demo_docs_dir().rglob("*.md"))


DEMO_QUERIES: list[DemoQuery] = [
    DemoQuery(
        question="在猇亭兵败、退守白帝城的那位君主，临终托孤给了谁？此人最后在哪里去世？",
        language="zh",
        expected_uris_suffix=("three-kingdoms/yiling.md", "three-kingdoms/zhuge-liang.md"),
        answer="五丈原",
        why="yiling.md tells how Liu Bei, beaten at 猇亭, entrusted his heir to 诸葛亮 at 白帝城, and only "
        "zhuge-liang.md says that Zhuge Liang died at 五丈原 in 234.",
        bridge="诸葛亮",
    ),
    DemoQuery(
        question="袁绍与对手相持时，暗中谋划袭击许都却遇刺身亡的那位将领，他的继承人后来在哪一年登基？",
        language="zh",
        expected_uris_suffix=("three-kingdoms/guandu.md", "three-kingdoms/sun-quan.md"),
        answer="黄龙元年",
        why="guandu.md says Sun Ce was assassinated while planning to raid 许都 and left his realm to his "
        "brother 孙权, and only sun-quan.md says Sun Quan took the throne in 229 (黄龙元年).",
        bridge="孙权",
    ),
    DemoQuery(
        question="官渡之战中，是谁向曹操献计奇袭乌巢？",
        language="zh",
        expected_uris_suffix=("three-kingdoms/guandu.md",),
        answer="许攸",
        why="One hop: guandu.md names 许攸, the defector from Yuan Shao who told Cao Cao where the grain "
        "at 乌巢 was stored.",
    ),
    DemoQuery(
        question="What price was paid for the venture set up by the man John Sculley pushed out?",
        language="en",
        expected_uris_suffix=("tech-company/macintosh.md", "tech-company/next.md"),
        answer="$429 million",
        why="macintosh.md says Sculley pushed Steve Jobs out and Jobs then founded NeXT, and only next.md "
        "says Apple bought NeXT for $429 million.",
        bridge="NeXT",
    ),
    DemoQuery(
        question="What did the pilot who crashed at Scotts Valley in 1981 sell to bankroll his startup?",
        language="en",
        expected_uris_suffix=("tech-company/wozniak.md", "tech-company/founding.md"),
        answer="HP-65",
        why="wozniak.md identifies the pilot as Steve Wozniak, and only founding.md says Wozniak sold his "
        "HP-65 calculator (and Jobs his Volkswagen van) to pay for the Apple I parts.",
        bridge="Wozniak",
    ),
    DemoQuery(
        question="When was the iPhone unveiled, and which carrier had the exclusive deal?",
        language="en",
        expected_uris_suffix=("tech-company/iphone.md",),
        answer="Cingular",
        why="One hop: iphone.md gives the Macworld unveiling on January 9, 2007 and the exclusive "
        "agreement with Cingular Wireless (later AT&T).",
    ),
]

"""The entity gold set of issue 33 (tests/data/entity_gold.jsonl): loader and precision/recall/F1 per type.

The set is separate from tests/data/key_gold*.jsonl: 134 sentences written for it (68 Chinese, 44 English,
22 mixed-script), in the style of news and encyclopedia prose, with invented names beside real ones.  It was
written and measured before any rule was changed for it (the "before" figures in docs/extraction.md).

Each line: ``lang`` (zh / en / mixed), ``text``, optional ``chunk_title`` (a heading the sentence sits
under), ``entities`` ([name, type] pairs the extractor must give), ``optional`` (keys that are acceptable
but not required: the place inside 云溪县人民医院, the parent 复旦大学 of 复旦大学新闻学院, a heading's own topic
key) and ``not_keys`` (generic words and broken spans that must never be a key of any type: 于北溟-like
prepositions glued to a name, 总部, 项目, the "life" of "Later life", "Robotics签订合作协议").

Types: ``person``, ``organization``, ``location``, ``topic`` (projects, programmes, ships, books, films: a
named work) and ``time`` (an explicit year or date).  Counting, per (language, type):

* person / organization / location: a predicted key of the type that is neither an entity nor an optional
  key of the sentence is a false positive; a missed entity is a false negative.  Names are compared by
  :func:`normalize_key`.
* topic: the extractor also gives common nouns as topics ("发布会", a heading), which are not wrong, so a
  predicted topic is a false positive only when it is a broken span: a ``not_keys`` word, or a strict part
  or extension of an entity of the sentence (远帆 or 计划 of 远帆计划, 长风号科考船 when 长风号 is listed and not
  optional).
* time: a predicted time key is right when it is a part of a gold time of the sentence ("2021年" of
  "2021年5月", "1977" of "2 June 1977"); a gold time is found when a predicted time key is, or is a part of
  it holding its year (a four-digit number), else its first number (the month of "3月12日").
* ``forbidden``: every key, of any type, whose name is a ``not_keys`` word.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from sag_pg.text.normalize import normalize_key

GOLD_PATH = Path(__file__).parent / "data" / "entity_gold.jsonl"
LANGS = ("zh", "en", "mixed")
TYPES = ("person", "organization", "location", "topic", "time")
NAMED_TYPES = ("person", "organization", "location")

# (text, chunk_title) -> [(type, name), ...]
Extract = Callable[[str, str], Iterable[tuple[str, str]]]

_NUMBER_RE = re.compile(r"\d+")


@dataclass(frozen=True)
class GoldSentence:
    lang: str
    text: str
    chunk_title: str
    entities: tuple[tuple[str, str], ...]  # (type, name)
    optional: tuple[tuple[str, str], ...]
    not_keys: tuple[str, ...]


def load_gold(path: Path = GOLD_PATH) -> list[GoldSentence]:
    sentences = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        sentences.append(
            GoldSentence(
                row["lang"],
                row["text"],
                row.get("chunk_title", ""),
                tuple((key_type, name) for name, key_type in row["entities"]),
                tuple((key_type, name) for name, key_type in row.get("optional", ())),
                tuple(row.get("not_keys", ())),
            )
        )
    return sentences


@dataclass
class Counts:
    tp: int = 0
    fp: int = 0
    fn: int = 0

    def add(self, other: Counts) -> None:
        self.tp += other.tp
        self.fp += other.fp
        self.fn += other.fn

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0


@dataclass
class Score:
    counts: dict[tuple[str, str], Counts] = field(default_factory=dict)  # (lang, type)
    forbidden: list[tuple[str, str, str]] = field(default_factory=list)  # (text, type, name)
    errors: list[tuple[str, str, str, str, str]] = field(
        default_factory=list
    )  # (kind, lang, type, name, text)

    def counts_for(self, lang: str, key_type: str) -> Counts:
        return self.counts.setdefault((lang, key_type), Counts())

    def total(self, langs: Iterable[str] = LANGS, types: Iterable[str] = NAMED_TYPES) -> Counts:
        total = Counts()
        for lang in langs:
            for key_type in types:
                total.add(self.counts.get((lang, key_type), Counts()))
        return total

    def table(self) -> str:
        lines = ["lang   type           P      R     F1    tp  fp  fn"]
        for lang in LANGS:
            for key_type in TYPES:
                c = self.counts.get((lang, key_type))
                if c is not None:
                    lines.append(_row(lang, key_type, c))
            lines.append(_row(lang, "named (p/o/l)", self.total([lang])))
        lines.append(_row("all", "named (p/o/l)", self.total()))
        lines.append(_row("all", "all types", self.total(types=TYPES)))
        lines.append(f"forbidden keys produced (not_keys): {len(self.forbidden)}")
        return "\n".join(lines)


def _row(lang: str, label: str, c: Counts) -> str:
    return (
        f"{lang:<6} {label:<13} {c.precision:6.3f} {c.recall:6.3f} {c.f1:6.3f} {c.tp:4d} {c.fp:3d} {c.fn:3d}"
    )


def _time_parts(gold_time: str) -> tuple[str, str]:
    key = normalize_key(gold_time)
    numbers = _NUMBER_RE.findall(key)
    year = next((n for n in numbers if len(n) == 4), numbers[0] if numbers else key)
    return key, year


def score(extract: Extract, sentences: list[GoldSentence], langs: Iterable[str] = LANGS) -> Score:
    """Precision/recall of ``extract`` per (language, type) on the gold sentences (rules: module docstring)."""
    result = Score()
    wanted = set(langs)
    for sentence in sentences:
        if sentence.lang not in wanted:
            continue
        lang, text = sentence.lang, sentence.text
        predicted = {(t, normalize_key(n)) for t, n in extract(text, sentence.chunk_title)}
        predicted = {(t, n) for t, n in predicted if n}
        gold = {(t, normalize_key(n)) for t, n in sentence.entities}
        optional = {(t, normalize_key(n)) for t, n in sentence.optional}
        not_keys = {normalize_key(n) for n in sentence.not_keys}
        gold_names = {n for _, n in gold}
        optional_names = {n for _, n in optional}

        def record(
            kind: str, key_type: str, names: Iterable[str], lang: str = lang, text: str = text
        ) -> None:
            result.errors.extend((kind, lang, key_type, n, text) for n in sorted(names))

        for key_type in NAMED_TYPES:
            p = {n for t, n in predicted if t == key_type}
            g = {n for t, n in gold if t == key_type}
            ok = {n for t, n in optional if t == key_type}
            c = result.counts_for(lang, key_type)
            c.tp += len(p & g)
            c.fp += len(p - g - ok)
            c.fn += len(g - p)
            record("fp", key_type, p - g - ok)
            record("fn", key_type, g - p)

        p = {n for t, n in predicted if t == "topic"}
        g = {n for t, n in gold if t == "topic"}
        broken = {
            n
            for n in p - g - optional_names
            if n in not_keys or any(n != e and (n in e or e in n) for e in gold_names)
        }
        c = result.counts_for(lang, "topic")
        c.tp += len(p & g)
        c.fp += len(broken)
        c.fn += len(g - p)
        record("fp", "topic", broken)
        record("fn", "topic", g - p)

        p = {n for t, n in predicted if t == "time"}
        g_times = [_time_parts(n) for t, n in sentence.entities if t == "time"]
        c = result.counts_for(lang, "time")
        wrong = {n for n in p if not any(n in g for g, _ in g_times)}
        missed = {g for g, year in g_times if not any(n == g or (n in g and year in n) for n in p)}
        c.tp += len(g_times) - len(missed)
        c.fp += len(wrong)
        c.fn += len(missed)
        record("fp", "time", wrong)
        record("fn", "time", missed)

        for t, n in sorted(predicted):
            if n in not_keys:
                result.forbidden.append((text, t, n))
    return result

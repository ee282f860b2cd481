"""The hand-labelled key gold set (tests/data/key_gold.jsonl) and its precision/recall.

Each line is one sentence: ``lang`` (zh/en), ``text``, optional ``chunk_title`` (a heading the sentence sits
under), ``entities`` ([name, type] pairs: every person, organization and location of the sentence, plus
projects and ships as topics) and ``not_keys`` (generic words and broken spans that must not become a
person, organization, location or topic key: 于北溟, 总部, "life" of "Later life").  The names and
sentences are invented; they were written before the extractor was changed (see docs/extraction.md).

Names are compared by :func:`normalize_key`, so "Greenway Analytics Inc" and "Greenway Analytics Inc." are
one name.  Precision and recall are counted per language for the named types (person, organization,
location); topics (projects, ships) get recall only, since a topic the set does not list ("Harbor Review")
is not wrong.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from sag_pg.text.normalize import normalize_key
from tests.entity_gold import Counts, Extract, GoldSentence
from tests.entity_gold import load_gold as _load_gold

GOLD_PATH = Path(__file__).parent / "data" / "key_gold.jsonl"
NAMED_TYPES = ("person", "organization", "location")
FORBIDDEN_TYPES = ("person", "organization", "location", "topic")

__all__ = ["GOLD_PATH", "NAMED_TYPES", "Extract", "Score", "load_gold", "score"]


def load_gold(path: Path = GOLD_PATH) -> list[GoldSentence]:
    """The sentences of ``path`` (entity_gold's format; this set has no ``optional`` names)."""
    return _load_gold(path)


@dataclass
class Score:
    counts: dict[tuple[str, str], Counts] = field(default_factory=dict)  # (lang, type)
    topic_found: dict[str, list[int]] = field(default_factory=dict)  # lang -> [found, total]
    forbidden: list[tuple[str, str, str]] = field(default_factory=list)  # (text, type, name)
    errors: list[tuple[str, str, str, str]] = field(default_factory=list)  # (kind, text, type, name)

    def counts_for(self, lang: str, key_type: str) -> Counts:
        return self.counts.setdefault((lang, key_type), Counts())

    def table(self) -> str:
        lines = ["lang  type          P      R      tp  fp  fn"]
        for (lang, key_type), c in sorted(self.counts.items()):
            lines.append(
                f"{lang:<5} {key_type:<12} {c.precision:6.3f} {c.recall:6.3f} {c.tp:4d} {c.fp:3d} {c.fn:3d}"
            )
        for lang, (found, total) in sorted(self.topic_found.items()):
            lines.append(f"{lang:<5} topic recall {found}/{total}")
        lines.append(f"forbidden keys produced: {len(self.forbidden)}")
        return "\n".join(lines)


def score(extract: Extract, sentences: list[GoldSentence], langs: Iterable[str] = ("zh", "en")) -> Score:
    """Precision/recall of ``extract`` per (language, named type) on the gold sentences."""
    result = Score()
    wanted = set(langs)
    for sentence in sentences:
        if sentence.lang not in wanted:
            continue
        predicted = {(t, normalize_key(n)) for t, n in extract(sentence.text, sentence.chunk_title)}
        gold = {(t, normalize_key(n)) for t, n in sentence.entities}
        for key_type in NAMED_TYPES:
            p = {n for t, n in predicted if t == key_type}
            g = {n for t, n in gold if t == key_type}
            c = result.counts_for(sentence.lang, key_type)
            c.tp += len(p & g)
            c.fp += len(p - g)
            c.fn += len(g - p)
            result.errors += [("fp", sentence.text, key_type, n) for n in sorted(p - g)]
            result.errors += [("fn", sentence.text, key_type, n) for n in sorted(g - p)]
        topics = {n for t, n in gold if t == "topic"}
        found = result.topic_found.setdefault(sentence.lang, [0, 0])
        found[0] += len(topics & {n for t, n in predicted if t == "topic"})
        found[1] += len(topics)
        result.errors += [
            ("fn", sentence.text, "topic", n)
            for n in sorted(topics - {n for t, n in predicted if t == "topic"})
        ]
        for name in sentence.not_keys:
            bad = normalize_key(name)
            for t, n in predicted:
                if n == bad and t in FORBIDDEN_TYPES:
                    result.forbidden.append((sentence.text, t, name))
    return result

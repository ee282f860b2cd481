"""Precision/recall of key extractors on the hand-labelled gold set (tests/data/key_gold.jsonl).

    PYTHONPATH=. python benchmarks/key_gold.py rules            # sag-pg's offline rule extractor
    PYTHONPATH=. python benchmarks/key_gold.py jieba            # jieba.posseg tags alone (nr/ns/nt)
    PYTHONPATH=.:VENV/lib/python3.11/site-packages python benchmarks/key_gold.py thulac   # a candidate
                                                                # (thulac, jiagu, jiojio, pkuseg, lac)
    ... --errors   to list every false positive / negative

Candidates other than ``rules`` are scored on the Chinese sentences only (they tag Chinese).  Besides the
scores it prints import time, the time to tag the gold text, and characters per second.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable

from tests.key_gold import load_gold, score


def rules_extractor():
    from sag_pg.extract.rules import RuleExtractor
    from sag_pg.types import EventDraft

    extractor = RuleExtractor()

    def extract(text: str, chunk_title: str) -> Iterable[tuple[str, str]]:
        keys = extractor.keys(EventDraft("", text), chunk_title=chunk_title)
        return [(k.type, k.name) for k in keys]

    return extract


_JIEBA_TYPES = {"nr": "person", "ns": "location", "nt": "organization"}


def jieba_extractor():
    import jieba
    import jieba.posseg

    jieba.initialize()

    def extract(text: str, chunk_title: str) -> Iterable[tuple[str, str]]:
        return [(_JIEBA_TYPES[p.flag], p.word) for p in jieba.posseg.lcut(text) if p.flag in _JIEBA_TYPES]

    return extract


_THULAC_TYPES = {"np": "person", "ns": "location", "ni": "organization"}


def thulac_extractor():
    import thulac

    model = thulac.thulac()

    def extract(text: str, chunk_title: str) -> Iterable[tuple[str, str]]:
        return [(_THULAC_TYPES[t], w) for w, t in model.cut(text) if t in _THULAC_TYPES]

    return extract


_JIAGU_TYPES = {"PER": "person", "LOC": "location", "ORG": "organization"}


def jiagu_extractor():
    import jiagu

    jiagu.init()

    def extract(text: str, chunk_title: str) -> Iterable[tuple[str, str]]:
        chars = list(text)
        tags = jiagu.ner(chars)
        found, current, kind = [], "", ""
        for ch, tag in zip(chars, tags, strict=False):
            if tag.startswith("B-") or (tag.startswith("I-") and tag[2:] != kind):
                if current:
                    found.append((kind, current))
                current, kind = ch, tag[2:]
            elif tag.startswith("I-"):
                current += ch
            else:
                if current:
                    found.append((kind, current))
                current, kind = "", ""
        if current:
            found.append((kind, current))
        return [(_JIAGU_TYPES[k], w) for k, w in found if k in _JIAGU_TYPES]

    return extract


_PKUSEG_TYPES = {"nr": "person", "ns": "location", "nt": "organization"}


def pkuseg_extractor():
    import pkuseg

    model = pkuseg.pkuseg(postag=True)

    def extract(text: str, chunk_title: str) -> Iterable[tuple[str, str]]:
        return [(_PKUSEG_TYPES[t], w) for w, t in model.cut(text) if t in _PKUSEG_TYPES]

    return extract


_LAC_TYPES = {
    "PER": "person",
    "LOC": "location",
    "ORG": "organization",
    "nr": "person",
    "ns": "location",
    "nt": "organization",
}


def lac_extractor():
    from LAC import LAC

    model = LAC(mode="lac")

    def extract(text: str, chunk_title: str) -> Iterable[tuple[str, str]]:
        words, tags = model.run(text)
        return [(_LAC_TYPES[t], w) for w, t in zip(words, tags, strict=True) if t in _LAC_TYPES]

    return extract


def jiojio_extractor():
    import jiojio

    jiojio.init(pos_rule=True, pos=True)

    def extract(text: str, chunk_title: str) -> Iterable[tuple[str, str]]:
        return [(_JIEBA_TYPES[t], w) for w, t in jiojio.cut(text) if t in _JIEBA_TYPES]

    return extract


EXTRACTORS = {
    "rules": rules_extractor,
    "jieba": jieba_extractor,
    "thulac": thulac_extractor,
    "jiagu": jiagu_extractor,
    "pkuseg": pkuseg_extractor,
    "lac": lac_extractor,
    "jiojio": jiojio_extractor,
}


def main(argv: list[str]) -> None:
    name = argv[0] if argv else "rules"
    gold = load_gold()
    langs = ("zh", "en") if name == "rules" else ("zh",)
    start = time.perf_counter()
    extract = EXTRACTORS[name]()
    loaded = time.perf_counter() - start
    texts = [s for s in gold if s.lang in langs]
    for s in texts[:3]:
        list(extract(s.text, s.chunk_title))  # warm caches
    chars = sum(len(s.text) for s in texts)
    start = time.perf_counter()
    rounds = 5
    for _ in range(rounds):
        for s in texts:
            list(extract(s.text, s.chunk_title))
    seconds = (time.perf_counter() - start) / rounds
    result = score(extract, gold, langs)
    print(f"extractor {name}: load {loaded:.2f} s, {1000 * seconds / chars * 1000:.1f} ms per 1,000 chars")
    print(result.table())
    if "--errors" in argv:
        for kind, text, key_type, key in result.errors:
            print(f"  {kind} {key_type:<12} {key:<24} {text}")
        for text, key_type, key in result.forbidden:
            print(f"  forbidden {key_type:<12} {key:<16} {text}")


if __name__ == "__main__":
    main(sys.argv[1:])

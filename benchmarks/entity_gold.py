"""Precision / recall / F1 of the offline rule extractor on the entity gold set (tests/data/entity_gold.jsonl).

    PYTHONPATH=. .venv/bin/python benchmarks/entity_gold.py              # the table, per language and type
    PYTHONPATH=. .venv/bin/python benchmarks/entity_gold.py --errors     # plus every false positive/negative
    PYTHONPATH=. .venv/bin/python benchmarks/entity_gold.py --keys       # plus every key of every sentence

The set, its labels and how each type is counted: tests/entity_gold.py.  Languages: zh, en and mixed
(Chinese prose naming organizations and people in Latin script, "与Nordic Robotics签订合作协议").  Also
printed: the time to extract the whole set (characters per second) and the keys per sentence.
"""

from __future__ import annotations

import argparse
import sys
import time

from sag_pg.extract.rules import RuleExtractor
from sag_pg.types import EventDraft
from tests.entity_gold import load_gold, score


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--errors", action="store_true", help="list every false positive / negative")
    parser.add_argument("--keys", action="store_true", help="list the keys of every sentence")
    args = parser.parse_args(argv)

    extractor = RuleExtractor()

    def extract(text: str, chunk_title: str) -> list[tuple[str, str]]:
        return [(k.type, k.name) for k in extractor.keys(EventDraft("", text), chunk_title=chunk_title)]

    gold = load_gold()
    extract(gold[0].text, "")  # load jieba before timing
    start = time.perf_counter()
    keys = [extract(s.text, s.chunk_title) for s in gold]
    seconds = time.perf_counter() - start
    chars = sum(len(s.text) for s in gold)
    result = score(extract, gold)
    print(
        f"{len(gold)} sentences, {chars} characters, {chars / seconds:,.0f} chars/s, "
        f"{sum(map(len, keys)) / len(gold):.1f} keys per sentence"
    )
    print(result.table())
    if args.errors:
        for kind, lang, key_type, name, text in result.errors:
            print(f"  {kind} {lang:<5} {key_type:<12} {name:<28} {text}")
        for text, key_type, name in result.forbidden:
            print(f"  forbidden {key_type:<12} {name:<20} {text}")
    if args.keys:
        for sentence, found in zip(gold, keys, strict=True):
            print(sentence.text)
            print("    " + "  ".join(f"{t}:{n}" for t, n in found))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

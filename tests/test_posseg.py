"""sag_pg.text.posseg against jieba.posseg itself: the same tags, word for word, and the same decoded HMM
routes and probabilities, exactly."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from sag_pg.text.posseg import PossegViterbi, fast_posseg
from sag_pg.text.tokenize import contains_han, load_jieba, load_jieba_posseg

ROOT = Path(__file__).resolve().parents[1]


def _chinese_texts() -> list[str]:
    texts = []
    for path in sorted((ROOT / "tests" / "data").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                text = json.loads(line).get("text", "")
                if contains_han(text):
                    texts.append(text)
    for path in sorted((ROOT / "sag_pg" / "demo" / "docs").rglob("*")):
        if path.is_file() and contains_han(text := path.read_text(encoding="utf-8")):
            texts.append(text)
    return texts


@pytest.fixture(scope="module")
def posseg():  # type: ignore[no-untyped-def]
    load_jieba()
    import jieba.posseg

    return jieba.posseg


def _runs(posseg, texts: list[str]) -> list[str]:  # type: ignore[no-untyped-def]
    """Every run of characters jieba hands its HMM while tagging ``texts``."""
    runs: list[str] = []
    original = posseg.viterbi

    def recording(obs, *tables):  # type: ignore[no-untyped-def]
        runs.append(obs)
        return original(obs, *tables)

    posseg.viterbi = recording  # jieba's module global, put back below
    try:
        for text in texts:
            posseg.lcut(text)
    finally:
        posseg.viterbi = original
    return list(dict.fromkeys(runs))


def test_the_corpus_is_tagged_as_jieba_tags_it(posseg) -> None:  # type: ignore[no-untyped-def]
    texts = _chinese_texts()
    assert len(texts) > 150 and sum(map(len, texts)) > 8_000  # a guard: the corpus is where it should be
    ours = load_jieba_posseg()
    for text in texts:
        assert [(p.word, p.flag) for p in ours.lcut(text)] == [(p.word, p.flag) for p in posseg.lcut(text)], text
    assert [(p.word, p.flag) for p in ours.lcut("宋知微说")] == [("宋知微", "nr"), ("说", "v")]  # via the HMM


def test_every_decoded_run_is_jiebas(posseg) -> None:  # type: ignore[no-untyped-def]
    decode = PossegViterbi(posseg.char_state_tab_P, posseg.start_P, posseg.trans_P, posseg.emit_P)
    runs = _runs(posseg, _chinese_texts())
    assert len(runs) > 250 and max(map(len, runs)) >= 6
    # And runs jieba's text never gives it: characters its model has never seen (no states of their own:
    # every state, then the fall-backs of an empty intersection), repeats, Latin letters and digits.
    rng = random.Random(36)
    common = "".join(dict.fromkeys("".join(_chinese_texts()[:40])))
    unseen = "𠀀𠀁𪚥䲜龘䨻"
    pool = common + unseen * 20 + "ab1"
    runs += ["".join(rng.choice(pool) for _ in range(rng.randint(1, 9))) for _ in range(600)]
    runs += ["𠀀", "𠀀𠀀𠀀", "的的的的的", "了" * 12]
    for run in runs:
        expected = posseg.viterbi(run, posseg.char_state_tab_P, posseg.start_P, posseg.trans_P, posseg.emit_P)
        assert decode(run) == expected, run


def test_the_tokenizer_shares_jiebas_dictionary(posseg) -> None:  # type: ignore[no-untyped-def]
    ours = fast_posseg(posseg)
    assert ours.tokenizer is posseg.dt.tokenizer and ours.word_tag_tab is posseg.dt.word_tag_tab
    assert [(p.word, p.flag) for p in ours.lcut("北京大学")] == [("北京大学", "nt")]

"""Extractive summaries with sumy TextRank over our tokenizer (sag_pg.text.summary)."""

from __future__ import annotations


import pytest

from sag_pg.text import summary as summary_module
from sag_pg.text.summary import SumyTokenizer, summarize

GUANDU = (
    "Cao Cao fought Yuan Shao at Guandu in the year 200. "
    "The weather was pleasant that spring. "
    "At Guandu, Cao Cao defeated Yuan Shao with a small army. "
    "Farmers grew rice in the southern valleys. "
    "After Guandu, Cao Cao controlled the north that Yuan Shao had ruled. "
    "Poets later wrote about distant mountains."
)


def test_central_sentences_are_picked_in_document_order() -> None:
    # Sentences 1, 3 and 5 share Cao Cao / Yuan Shao / Guandu; the others share nothing with anything.
    assert summarize(GUANDU, sentences=3) == [
        "Cao Cao fought Yuan Shao at Guandu in the year 200.",
        "At Guandu, Cao Cao defeated Yuan Shao with a small army.",
        "After Guandu, Cao Cao controlled the north that Yuan Shao had ruled.",
    ]


def test_chinese_summary() -> None:
    text = (
        "曹操与袁绍在官渡决战。春天的天气很好。官渡之战曹操击败袁绍。"
        "农民在南方种水稻。袁绍死后曹操统一北方。诗人描写远山。"
    )
    assert summarize(text, sentences=3) == [
        "曹操与袁绍在官渡决战。",
        "官渡之战曹操击败袁绍。",
        "袁绍死后曹操统一北方。",
    ]


def test_short_texts_come_back_whole() -> None:
    assert summarize("Short one. Two here.", sentences=3) == ["Short one.", "Two here."]
    assert summarize("One. Two. Three.", sentences=3) == ["One.", "Two.", "Three."]
    assert summarize("一句话。", sentences=3) == ["一句话。"]


def test_two_sentence_texts_do_not_break_the_ranker() -> None:
    # LexRank gives NaN scores here (every idf is <= 0); TextRank must still pick one sentence.
    assert summarize("Alpha beta gamma. Delta epsilon zeta.", sentences=1) in (
        ["Alpha beta gamma."],
        ["Delta epsilon zeta."],
    )


def test_repeated_sentences_count_once() -> None:
    text = "Click here. Click here. Click here. Cao Cao won at Guandu. Yuan Shao lost at Guandu."
    assert summarize(text, sentences=3) == [
        "Click here.",
        "Cao Cao won at Guandu.",
        "Yuan Shao lost at Guandu.",
    ]


@pytest.mark.parametrize("text", ["", "   \n\t", "\x00\x01\x02", "。。。"])
def test_empty_or_junk_text(text: str) -> None:
    assert summarize(text) == []


def test_zero_sentences_requested() -> None:
    assert summarize(GUANDU, sentences=0) == []


def test_explicit_language() -> None:
    assert summarize(GUANDU, sentences=3, language="en") == summarize(GUANDU, sentences=3)
    assert len(summarize(GUANDU, sentences=2, language="klingon")) == 2  # unknown: no stop words, no stemmer


def test_no_nltk_data_is_ever_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    import nltk.data

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("nltk data must not be needed")

    monkeypatch.setattr(nltk.data, "load", refuse)
    monkeypatch.setattr(nltk.data, "find", refuse)
    summary_module._summarizer.cache_clear()
    assert len(summarize(GUANDU, sentences=2, language="german")) == 2
    assert len(summarize(GUANDU, sentences=2)) == 2


def test_tokenizer_adapter_works_with_sumys_plaintext_parser() -> None:
    from sumy.parsers.plaintext import PlaintextParser

    parser = PlaintextParser.from_string("Hello world. This is sumy.\n\n中文句子。第二句。", SumyTokenizer())
    assert [str(s) for s in parser.document.sentences] == [
        "Hello world.",
        "This is sumy.",
        "中文句子。",
        "第二句。",
    ]
    assert SumyTokenizer().to_words("Cao Cao's army, 200 men") == ("cao", "cao", "s", "army", "200", "men")


def test_long_documents_are_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    text = " ".join(f"Sentence number {i} talks about topic {i % 7} in detail." for i in range(3000))
    picked = summarize(text, sentences=3)
    assert len(picked) == 3
    order = [int(s.split()[2]) for s in picked]
    assert order == sorted(order)


def test_candidates_keep_the_lead_and_sample_the_rest(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(summary_module, "MAX_SUMMARY_CANDIDATES", 4)
    sentences = [f"s{i}" for i in range(10)]
    # The first half of the budget is the lead; the rest is every (8 / 2)-th of the remaining sentences.
    assert summary_module._candidates(sentences) == ["s0", "s1", "s2", "s6"]

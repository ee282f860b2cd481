"""Tokens for full-text search and sentences for summaries/rules (sag_pg.text.tokenize)."""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from sag_pg.text.tokenize import (
    MAX_TOKEN_CHARS,
    contains_han,
    search_tokens,
    sentence_spans,
    split_sentences,
    tokens_to_text,
    word_tokens,
)

# ----------------------------------------------------------------------------------------- tokens


def test_english_tokens_are_lowercased_words_and_numbers_without_punctuation() -> None:
    text = "Carl Rogers founded person-centred therapy in 1942, e.g. at U.S. universities!"
    assert search_tokens(text) == [
        "carl", "rogers", "founded", "person", "centred", "therapy", "in", "1942", "e", "g", "at", "u", "s",
        "universities",
    ]  # fmt: skip


def test_underscores_dots_and_plus_split_tokens_like_postgres_does() -> None:
    # to_tsvector('simple', ...) splits foo_bar, e-mail and c++; a token must stay one lexeme.
    assert search_tokens("foo_bar e-mail c++ 3.14 www.x.com") == [
        "foo",
        "bar",
        "e",
        "mail",
        "c",
        "3",
        "14",
        "www",
        "x",
        "com",
    ]


def test_non_ascii_latin_letters_are_kept_and_lowercased() -> None:
    assert search_tokens("Café Straße naïve ÉCOLE") == ["café", "straße", "naïve", "école"]


def test_nfkc_folds_full_width_ligatures_and_superscripts() -> None:
    assert search_tokens("ＡＢＣ１２３ x² ﬁne ３０２ＡＩ") == ["abc123", "x2", "fine", "302ai"]


def test_combining_marks_stay_inside_the_word() -> None:
    # Python's \w lacks combining marks; without them हिन्दी would fall apart into ह, न, द.
    assert search_tokens("हिन्दी ภาษาไทย e\u0301cole") == ["हिन्दी", "ภาษาไทย", "école"]


def test_tokens_start_with_a_letter_or_digit_and_skip_other_numbers() -> None:
    # NFKC turns the acute accent of "Rogers´s" into a space + combining mark; PostgreSQL would drop
    # a mark at the start of a word, and it drops "other numbers" such as Bengali currency numerators.
    assert search_tokens("Rogers´s \u0301orphan ৴৵x ①②") == ["rogers", "s", "orphan", "x", "12"]


def test_chinese_is_segmented_with_jieba() -> None:
    assert search_tokens("曹操与袁绍在官渡展开决战。") == ["曹操", "与", "袁绍", "在", "官渡", "展开", "决战"]


def test_search_mode_adds_dictionary_words_inside_long_words() -> None:
    assert search_tokens("中国科学院") == ["中国", "科学", "学院", "科学院", "中国科学院"]
    assert word_tokens("中国科学院") == ["中国科学院"]


def test_mixed_chinese_and_latin_in_one_run() -> None:
    assert search_tokens("302AI公司发布了GPT-4") == ["302ai", "公司", "发布", "了", "gpt", "4"]


def test_no_punctuation_or_whitespace_tokens() -> None:
    assert search_tokens("。，！？ ... --- ___ \t\n «» “”") == []
    assert search_tokens("") == []
    assert search_tokens("   \n\t ") == []


def test_control_characters_separate_tokens() -> None:
    assert search_tokens("abc\x00def\x07ghi\x1b") == ["abc", "def", "ghi"]


def test_overlong_tokens_are_dropped() -> None:
    assert search_tokens("a" * MAX_TOKEN_CHARS) == ["a" * MAX_TOKEN_CHARS]
    assert search_tokens("a" * (MAX_TOKEN_CHARS + 1) + " ok") == ["ok"]
    assert search_tokens("é" * (MAX_TOKEN_CHARS + 1) + " ok") == ["ok"]


def test_50000_character_line() -> None:
    assert search_tokens("x" * 50_000) == []
    assert len(search_tokens("word " * 10_000)) == 10_000


def test_tokens_to_text_is_space_joined() -> None:
    assert tokens_to_text(["曹操", "302ai", "", "abc"]) == "曹操 302ai abc"
    assert tokens_to_text([]) == ""


def test_contains_han() -> None:
    assert contains_han("abc 曹操")
    assert not contains_han("abc café")
    assert not contains_han("カタカナ")


def test_english_never_loads_jieba_and_import_has_no_side_effects() -> None:
    code = (
        "import sys\n"
        "from sag_pg.text.tokenize import search_tokens, split_sentences\n"
        "assert 'jieba' not in sys.modules\n"
        "search_tokens('plain English text, café 302ai'); split_sentences('One. Two.')\n"
        "print('jieba' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


def test_jieba_loads_quietly() -> None:
    code = "from sag_pg.text.tokenize import search_tokens\nprint(search_tokens('曹操'))\n"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "['曹操']"
    assert result.stderr == ""  # no "Building prefix dict ..." chatter, no pkg_resources warning


def test_concurrent_first_use_of_jieba_is_safe() -> None:
    text = "诸葛亮出使东吴，说服孙权联合抗曹。"
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda _: search_tokens(text), range(32)))
    assert all(result == results[0] for result in results)
    assert "诸葛亮" in results[0] and "孙权" in results[0]


# -------------------------------------------------------------------------------------- sentences


def test_english_sentences_respect_abbreviations_initials_and_decimals() -> None:
    text = (
        "Dr. Smith went to Washington. He met the U.S. Army there! Was it 3.14? Yes. "
        "J. R. R. Tolkien wrote it, e.g. The Hobbit."
    )
    assert split_sentences(text) == [
        "Dr. Smith went to Washington.",
        "He met the U.S. Army there!",
        "Was it 3.14?",
        "Yes.",
        "J. R. R. Tolkien wrote it, e.g. The Hobbit.",
    ]


def test_period_before_lowercase_or_number_abbreviation_does_not_end_a_sentence() -> None:
    text = "It weighs approx. five tons. Apple Inc. announced it in Jan. 1999. No. 5 was there."
    assert split_sentences(text) == [
        "It weighs approx. five tons.",
        "Apple Inc. announced it in Jan. 1999.",
        "No. 5 was there.",
    ]


def test_chinese_sentences_end_at_cjk_terminators_and_line_breaks() -> None:
    text = "公元200年，曹操与袁绍在官渡展开决战。曹操以少胜多！袁绍败走；后病死。\n刘备投奔刘表"
    assert split_sentences(text) == [
        "公元200年，曹操与袁绍在官渡展开决战。",
        "曹操以少胜多！",
        "袁绍败走；",
        "后病死。",
        "刘备投奔刘表",
    ]


def test_mixed_language_sentences() -> None:
    text = "GPT-4 was released in 2023. 它由OpenAI发布。Then Claude followed."
    assert split_sentences(text) == [
        "GPT-4 was released in 2023.",
        "它由OpenAI发布。",
        "Then Claude followed.",
    ]


def test_line_breaks_wrapped_prose_lists_and_short_lines() -> None:
    text = (
        "This is a long hard-wrapped line of English prose that keeps going on and\n"
        "on to the next line. Then it ends.\n"
        "\n"
        "Name: John\n"
        "Age: 30\n"
        "- item one\n"
        "- item two\n"
        "1. First. Second thing."
    )
    assert split_sentences(text) == [
        "This is a long hard-wrapped line of English prose that keeps going on and on to the next line.",
        "Then it ends.",
        "Name: John",
        "Age: 30",
        "- item one",
        "- item two",
        "1. First.",
        "Second thing.",
    ]


def test_punctuation_only_pieces_join_a_neighbour() -> None:
    assert split_sentences("……开头。结尾……") == ["……开头。", "结尾……"]
    assert split_sentences("Wait... What? !!") == ["Wait...", "What? !!"]


def test_sentence_spans_point_into_the_text() -> None:
    text = "  First one.  Second one!\n\n第三句。"
    spans = sentence_spans(text)
    assert spans == [(2, 12), (14, 25), (27, 31)]
    assert [text[s:e] for s, e in spans] == ["First one.", "Second one!", "第三句。"]


@pytest.mark.parametrize("text", ["", "   ", "\n\n\t", "\x00\x01\x02"])
def test_empty_or_junk_text_has_no_sentences(text: str) -> None:
    assert split_sentences(text) == []


def test_giant_single_line_is_linear_time() -> None:
    text = "Dr. " * 5_000 + "x" * 30_000  # every "Dr." is a candidate end that must be rejected
    sentences = split_sentences(text)
    assert len(sentences) == 1

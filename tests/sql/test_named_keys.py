"""sag.named_keys and sag.query_terms: the question side of a search, analysed in SQL."""

from __future__ import annotations

import psycopg
import pytest

from sag_pg.text.normalize import normalize_key
from tests.sql.graph_builder import GraphBuilder


@pytest.fixture
def graph(db_conn: psycopg.Connection) -> dict[str, int]:
    g = GraphBuilder(db_conn)
    one, two = g.source("one"), g.source("two")
    chunk = g.chunk(g.document(one, "one/a.md"), "text", (1, 0, 0))
    ids = {
        "vance": g.key(one, "Quentin Vance", (0, 0, 1)),
        "vance_person": g.key(one, "Quentin Vance", (0, 0, 1), type="person"),
        "vance_two": g.key(two, "Quentin Vance", (0, 0, 1)),
        "hub": g.key(one, "United States", (0, 1, 0)),
        "year": g.key(one, "1999", number=1999.0),
        "nick": g.key(one, "Nick"),
        "hexum": g.key(one, "Nick Hexum"),
        "king": g.key(one, "Mark King"),
        "empire": g.key(one, "Empire"),
        "british": g.key(one, "British Empire"),
        "film": g.key(one, "film"),
        "sonata": g.key(one, "Bridge over the River Kwai"),
        "zhang": g.key(one, "张伟", type="person"),
        "beijing": g.key(one, "北京", type="location"),
        "work": g.key(one, "工作", type="topic"),
        "plan": g.key(one, "计划", type="topic"),
        "qinglan": g.key(one, "青岚计划", type="topic"),
        "ship": g.key(one, "破浪号", type="topic"),
        "book": g.key(one, "候鸟南飞", type="topic"),
        "creme": g.key(one, "Crème Brûlée"),
        "cpp": g.key(one, "C++"),
        "python": g.key(one, "Python 3.11"),
        "variant": g.key(one, "BA.5.2"),
        "izmir": g.key(one, "İzmir"),
    }
    for _ in range(3):
        g.link(g.event(chunk, "e", (1, 0, 0)), ids["hub"])
    # Ingestion stores normalize_key (GraphBuilder a plain lower case).
    for key_id, name in db_conn.execute("select id, name from sag.keys").fetchall():
        db_conn.execute("update sag.keys set normalized = %s where id = %s", [normalize_key(name), key_id])
    return {**ids, "one": one, "two": two}


def named(conn: psycopg.Connection, question: str, source_ids: list[int] | None = None,
          max_key_events: int | None = None) -> list[tuple[object, ...]]:
    return conn.execute("select key_id, name, first_word, last_word, hub from sag.named_keys(%s, %s, "
                        "max_key_events => %s)", [question, source_ids, max_key_events]).fetchall()


def test_names_of_every_type_in_the_sources(db_conn: psycopg.Connection, graph: dict[str, int]) -> None:
    one = [graph["one"]]
    assert named(db_conn, "Where was Quentin Vance born?", one) == [
        (graph["vance"], "Quentin Vance", 3, 4, False), (graph["vance_person"], "Quentin Vance", 3, 4, False)]
    assert [r[0] for r in named(db_conn, "Where was Quentin Vance born?", [graph["two"]])] == [graph["vance_two"]]
    assert {r[0] for r in named(db_conn, "Where was Quentin Vance born?")} == {
        graph["vance"], graph["vance_person"], graph["vance_two"]}
    # Accents and case do not matter (key normalization); a prefix does.
    assert [r[0] for r in named(db_conn, "Is CREME BRULEE sweet?", one)] == [graph["creme"]]
    assert named(db_conn, "Where was Quentin Vanc born?", one) == []


# Names whose punctuation, case or accents key normalization treats specially (the ingest side's
# normalize_key is the reference): '.' between digits, '+' and '#' after a letter, '%' after a digit, ß, ς, İ.
FOLDED = ["C++", "C#", "F# 8", "Python 3.11", "GPT-4.5", "BA.5.2.49", "50% off", "AT&T", "302.AI", "1,234",
          "3. 5", "e.g. this", "U.S. Army", "Crème Brûlée", "Fürst-Pückler-Straße", "Νότης Σφακιανάκης", "İzmir",
          "Greek Γoρδιoς", "DR Class 23.10", "Today's Country 104.9", "线上+线下", "北京冬奥会", "ＡＢＣ１２３",
          "Dan + Shay", "Your #1 Station for R&B"]


def test_names_fold_as_key_normalization_folds_them(db_conn: psycopg.Connection) -> None:
    def fold(sql: str, name: str) -> str:
        return db_conn.execute(sql, [name]).fetchone()[0]

    whole = "select sag_internal._fold_word(%s)"
    for name in FOLDED:
        assert fold(whole, name) == normalize_key(name), name
    # A question's words, folded one by one and put together, as sag.named_keys compares a span with a key:
    # the same but for a '+' or '#' standing alone between words.
    words = ("select string_agg(sag_internal._fold_word(m[1]), '' order by n) from regexp_matches("
             "normalize(%s, NFKC), sag_internal._word_pattern(), 'g') with ordinality as w(m, n)")
    alone = {"Dan + Shay", "Your #1 Station for R&B"}
    for name in FOLDED:
        assert (fold(words, name) == normalize_key(name)) is (name not in alone), name


def test_names_with_punctuation_or_special_case(db_conn: psycopg.Connection, graph: dict[str, int]) -> None:
    one = [graph["one"]]
    assert [r[0] for r in named(db_conn, "Is C++ older than C?", one)] == [graph["cpp"]]
    assert [r[0] for r in named(db_conn, "What changed in Python 3.11?", one)] == [graph["python"]]
    assert [r[0] for r in named(db_conn, "How fast did BA.5.2 spread?", one)] == [graph["variant"]]
    assert [r[0] for r in named(db_conn, "Where is İzmir?", one)] == [graph["izmir"]]
    assert named(db_conn, "Is Python 3 older?", one) == []


def test_longest_span_takes_its_words(db_conn: psycopg.Connection, graph: dict[str, int]) -> None:
    one = [graph["one"]]
    # "Nick Hexum" leaves no room for "Nick"; both names of the question are found.
    assert [r[0] for r in named(db_conn, "Did Nick Hexum meet Mark King?", one)] == [graph["hexum"], graph["king"]]
    assert [r[0] for r in named(db_conn, "Did Nick meet Mark King?", one)] == [graph["king"], graph["nick"]]
    # Lower-case words inside a name, not at its ends.
    assert [r[0] for r in named(db_conn, "Who filmed the Bridge over the River Kwai?", one)] == [graph["sonata"]]
    # A hub's name is flagged, and takes its words all the same: "British Empire" is not the key "Empire".
    assert named(db_conn, "Was the British Empire in the United States?", one, max_key_events=2) == [
        (graph["british"], "British Empire", 3, 4, False), (graph["hub"], "United States", 7, 8, True)]


def test_what_is_not_a_name(db_conn: psycopg.Connection, graph: dict[str, int]) -> None:
    one = [graph["one"]]
    assert named(db_conn, "Which film came out in 1999?", one) == []   # lower case; numeric keys are values
    assert named(db_conn, "", one) == [] and named(db_conn, None, one) == []  # type: ignore[arg-type]


def test_chinese_names_are_person_organization_or_location_keys(db_conn: psycopg.Connection,
                                                                graph: dict[str, int]) -> None:
    one = [graph["one"]]
    # Han has no capitals: the key's type says whether a run of characters is a name; 工作 is a topic.
    got = named(db_conn, "张伟在北京工作吗", one)
    assert [(r[0], r[1]) for r in got] == [(graph["zhang"], "张伟"), (graph["beijing"], "北京")]


def test_chinese_project_and_ship_names_are_named_by_their_head(db_conn: psycopg.Connection,
                                                                graph: dict[str, int]) -> None:
    """Issue #33: "青岚计划的主持人毕业于哪所大学" starts from the project's key; 计划 alone is no name."""
    one = [graph["one"]]
    got = named(db_conn, "青岚计划的主持人毕业于哪所大学", one)
    assert [(r[0], r[1]) for r in got] == [(graph["qinglan"], "青岚计划")]
    assert [(r[0], r[1]) for r in named(db_conn, "破浪号停在哪里", one)] == [(graph["ship"], "破浪号")]
    assert named(db_conn, "这个计划在北京吗", one) == [(graph["beijing"], "北京", 6, 7, False)]


def test_a_chinese_title_quoted_in_the_question_names_its_topic(db_conn: psycopg.Connection,
                                                                 graph: dict[str, int]) -> None:
    """Issue #33: ingestion keys 《候鸟南飞》 as the topic 候鸟南飞; a question quoting it names that key, as a
    question naming a person does.  Unquoted, the same characters are words of the question, not a name."""
    one = [graph["one"]]
    assert named(db_conn, "《候鸟南飞》的作者是谁", one) == [(graph["book"], "候鸟南飞", 1, 4, False)]
    assert named(db_conn, "候鸟南飞的作者是谁", one) == []
    assert named(db_conn, "《候鸟》南飞的作者是谁", one) == []  # not the whole title


def test_query_terms_segment_chinese_against_the_index(db_conn: psycopg.Connection) -> None:
    g = GraphBuilder(db_conn)
    s = g.source("zh")
    doc = g.document(s, "zh.md")
    # The index holds these words (as jieba's cut_for_search would have written them at ingestion).
    for tokens in (["北京", "冬奥", "冬奥会", "开幕"], ["冬奥会", "开幕", "时间"], ["北京", "大学"], ["北京大学"]):
        g.chunk(doc, "".join(tokens), (1, 0, 0), tokens=tokens)
    db_conn.execute("select sag.flush_term_stats()")
    terms = db_conn.execute("select sag.query_terms(%s, %s)", ["北京冬奥会的开幕时间? Opening, 2022!", [s]]).fetchone()
    # The most probable route over the index's words; 冬奥 inside 冬奥会 added; 的 (not in the index) alone.
    assert terms == (["北京", "冬奥", "冬奥会", "的", "开幕", "时间", "opening", "2022"],)
    # A word the index holds whole stays whole, its parts added.
    assert db_conn.execute("select sag.query_terms('北京大学')").fetchone() == (["北京", "大学", "北京大学"],)
    assert db_conn.execute("select sag.query_terms(null)").fetchone() == ([],)


def test_query_terms_split_letters_and_digits_the_index_writes_apart(db_conn: psycopg.Connection) -> None:
    g = GraphBuilder(db_conn)
    s = g.source("news")
    doc = g.document(s, "news.md")
    # One chunk writes "CVPR 2022" apart, another "cvpr2022" whole; C919 is only ever written whole.
    for tokens in (["cvpr", "2022", "在", "新奥尔良"], ["cvpr2022", "举办"], ["c919", "交付"], ["c", "语言", "919"]):
        g.chunk(doc, " ".join(tokens), (1, 0, 0), tokens=tokens)
    db_conn.execute("select sag.flush_term_stats()")

    def terms(question: str) -> list[str]:
        return db_conn.execute("select sag.query_terms(%s, %s)", [question, [s]]).fetchone()[0]

    # cvpr followed by 2022 is in the index: the runs join the whole word.
    assert terms("CVPR2022 where") == ["cvpr2022", "cvpr", "2022", "where"]
    # c and 919 are both in the index, but never one after the other: C919 stays one term.
    assert terms("C919 delivery") == ["c919", "delivery"]
    # Inside a Chinese question too (the non-Han part of a mixed run).
    assert terms("CVPR2022在") == ["cvpr2022", "cvpr", "2022", "在"]
    # Letters only or digits only: nothing to split.
    assert terms("cvpr 2022") == ["cvpr", "2022"]

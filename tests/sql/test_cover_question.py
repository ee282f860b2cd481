"""sag.cover_question: the order within a search's top list, each next place to what the places above do not
hold of the question yet (idf-weighted BM25 terms, function words left out); place 1, the set of chunks and
their scores stay; pinned chunks stay among the first pinned_within places.

The corpus (source "bands"): six chunks, so a term held by one chunk has idf ln(1 + 5.5/1.5) = 1.54 and one
held by three ln(1 + 3.5/3.5) = 0.69.  The question "Which band was formed first, The Exies or Circus
Diablo?" asks about two bands; its terms without function words: band, formed, first, exies, circus, diablo.
"""

from __future__ import annotations

import numpy as np
import psycopg

from sag_pg.search.retrieve import RetrievalParams, retrieve

from graph_builder import GraphBuilder

QUESTION = "Which band was formed first, The Exies or Circus Diablo?"
TERMS = ["which", "band", "was", "formed", "first", "the", "exies", "or", "circus", "diablo"]


def _corpus(db_conn: psycopg.Connection) -> tuple[int, dict[str, int]]:
    g = GraphBuilder(db_conn)
    s = g.source("bands")
    texts = {
        "exies1": "The Exies are a rock band formed in Los Angeles",
        "exies2": "The Exies band released Head for the Door",
        "exies3": "The Exies band toured with Fuel",
        "circus": "Circus Diablo was formed by Billy Duffy with members of many other groups over the years",
        "what": "what did where when who",  # function words of the question only
        "other": "an unrelated passage about rivers",
    }
    # The question's vector is (1, 0, 0): the Exies' chunks point its way, Circus Diablo's page does not, so
    # the plain ranking puts the three Exies chunks first.
    chunks = {name: g.chunk(g.document(s, f"{name}.md"), text, (1, 0, 0) if name.startswith("exies") else (0, 1, 0))
              for name, text in texts.items()}
    return s, chunks


def _cover(db_conn: psycopg.Connection, ids: list[int], scores: list[float], source: int,
           pinned: list[int] | None = None, terms: list[str] = TERMS) -> list[tuple[int, float]]:
    return [(int(c), float(x)) for c, x in db_conn.execute(
        "select chunk_id, score from sag.cover_question(%s, %s, %s, %s, %s)",
        [ids, scores, terms, [source], pinned or []]).fetchall()]


def test_the_other_half_of_the_question_comes_second(db_conn: psycopg.Connection) -> None:
    s, c = _corpus(db_conn)
    ids = [c["exies1"], c["exies2"], c["exies3"], c["circus"]]
    scores = [0.9, 0.8, 0.7, 0.6]
    got = _cover(db_conn, ids, scores, s)
    # The question's terms (first is in no chunk): band 0.69, exies 0.69, formed (two chunks) 1.03, circus 1.54,
    # diablo 1.54; 5.50 in all.  exies1 holds band, exies and formed; Circus Diablo's page adds circus and
    # diablo: 0.6 * (1 + 3.08 / 5.50) = 0.94 beats exies2's 0.8 * (1 + 0).
    assert [x for x, _ in got] == [c["exies1"], c["circus"], c["exies2"], c["exies3"]]
    # The same chunks with the same scores: only the order changed.
    assert sorted(got) == sorted(zip(ids, scores))


def test_place_one_stays(db_conn: psycopg.Connection) -> None:
    s, c = _corpus(db_conn)
    # The chunk at place 1 holds little of the question; a later one holds more, but place 1 is the ranking's.
    got = _cover(db_conn, [c["other"], c["exies1"], c["circus"]], [0.9, 0.8, 0.7], s)
    assert got[0][0] == c["other"]


def test_function_words_are_no_part_of_the_question(db_conn: psycopg.Connection) -> None:
    s, c = _corpus(db_conn)
    # "what did where when who" are rare in passages (idf 1.54 here), but they ask for nothing.
    got = _cover(db_conn, [c["exies1"], c["exies2"], c["what"]], [0.9, 0.8, 0.7], s,
                 terms=TERMS + ["what", "did", "where", "when", "who"])
    assert [x for x, _ in got] == [c["exies1"], c["exies2"], c["what"]]


def test_without_question_terms_the_order_stays(db_conn: psycopg.Connection) -> None:
    s, c = _corpus(db_conn)
    ids = [c["exies1"], c["exies2"], c["circus"]]
    assert [x for x, _ in _cover(db_conn, ids, [0.9, 0.8, 0.5], s, terms=[])] == ids
    assert [x for x, _ in _cover(db_conn, ids, [0.9, 0.8, 0.5], s, terms=["zzz", "the"])] == ids
    assert _cover(db_conn, [], [], s) == []


def test_a_pinned_chunk_stays_among_the_first_places(db_conn: psycopg.Connection) -> None:
    s, c = _corpus(db_conn)
    # exies2 is a direct match at place 2; coverage would move circus and then other chunks above it, down to
    # place 4; it moves back to just before place 3.
    ids = [c["exies1"], c["exies2"], c["circus"], c["exies3"]]
    scores = [0.9, 0.8, 0.7, 0.6]
    free = [x for x, _ in _cover(db_conn, ids, scores, s)]
    assert free == [c["exies1"], c["circus"], c["exies2"], c["exies3"]]
    ids = [c["exies1"], c["exies2"], c["other"], c["circus"]]
    free = [x for x, _ in _cover(db_conn, ids, [0.9, 0.8, 0.7, 0.6], s)]
    assert free.index(c["exies2"]) == 2
    pinned = [x for x, _ in _cover(db_conn, ids, [0.9, 0.8, 0.7, 0.6], s, pinned=[c["exies2"]])]
    assert pinned.index(c["exies2"]) <= 2


def test_search_orders_its_top_list_so_in_psql_and_python(db_conn: psycopg.Connection) -> None:
    s, c = _corpus(db_conn)
    q = np.array([1, 0, 0], dtype=np.float32)
    plain = retrieve(db_conn, QUESTION, q, source_ids=[s], top_n=4, use_pagerank=False,
                     params=RetrievalParams(cover_question=False)).chunks
    covered = retrieve(db_conn, QUESTION, q, source_ids=[s], top_n=4, use_pagerank=False).chunks
    assert {h.chunk_id for h in covered} == {h.chunk_id for h in plain}
    ids = [h.chunk_id for h in plain]
    expected = [x for x, _ in _cover(db_conn, ids, [h.score for h in plain], s,
                                     pinned=[h.chunk_id for h in plain if h.direct_match])]
    assert [h.chunk_id for h in covered] == expected
    # The Exies' chunks fill the plain top; Circus Diablo comes second once covered.
    assert [h.chunk_id for h in plain] == [c["exies1"], c["exies2"], c["exies3"], c["circus"]]
    assert [h.chunk_id for h in covered] == [c["exies1"], c["circus"], c["exies2"], c["exies3"]]
    psql = [r[0] for r in db_conn.execute(
        "select chunk_id from sag.search(%s, 4, 'bands', '[1,0,0]'::vector)", [QUESTION]).fetchall()]
    assert psql == [h.chunk_id for h in covered]


def test_a_chunk_deleted_since_the_ranking_is_left_out(db_conn: psycopg.Connection) -> None:
    s, c = _corpus(db_conn)
    gone = c["other"]
    db_conn.execute("delete from sag.chunks where id = %s", [gone])
    got = [x for x, _ in _cover(db_conn, [gone, c["exies1"], c["exies2"], c["circus"]], [0.9, 0.8, 0.7, 0.6], s)]
    assert got == [c["exies1"], c["circus"], c["exies2"]]


def test_what_a_chunk_brings_is_its_documents(db_conn: psycopg.Connection) -> None:
    s, c = _corpus(db_conn)
    g = GraphBuilder(db_conn)
    # A document whose first chunk is about the Exies and whose second names Circus Diablo: once the document
    # has place 1, the second chunk brings nothing new, and the other document keeps place 2.  Counted by
    # chunk, it would take place 2.
    doc = g.document(s, "exies-tour.md")
    first = g.chunk(doc, "The Exies are a rock band formed in Los Angeles", (1, 0, 0))
    aside = g.chunk(doc, "They once shared a stage with Circus Diablo", (1, 0, 0))
    got = [x for x, _ in _cover(db_conn, [first, c["exies2"], aside], [0.9, 0.8, 0.7], s)]
    assert got == [first, c["exies2"], aside]
    # In a document of its own the same text does take place 2.
    alone = g.chunk(g.document(s, "aside.md"), "They once shared a stage with Circus Diablo", (1, 0, 0))
    got = [x for x, _ in _cover(db_conn, [first, c["exies2"], alone], [0.9, 0.8, 0.7], s)]
    assert got == [first, alone, c["exies2"]]

"""The embedder's chance level (sql/idempotent/035) and the final spread over documents (034).

Expected numbers worked out by hand.
"""

from __future__ import annotations

import math

import psycopg
import pytest

from tests.sql.graph_builder import GraphBuilder


def a(x: float) -> object:
    return pytest.approx(x, abs=1e-3)  # embeddings are stored at half precision


def test_chance_cosine_is_the_mean_over_pairs(db_conn: psycopg.Connection) -> None:
    # (1,0,0)-(0,1,0): 0; (1,0,0)-(1,1,0): 1/sqrt 2; (0,1,0)-(1,1,0): 1/sqrt 2.  Mean: sqrt(2)/3.
    row = db_conn.execute("select sag_internal._chance_cosine(array['[1,0,0]', '[0,1,0]', '[1,1,0]']::halfvec[])")
    assert float(row.fetchone()[0]) == a(math.sqrt(2) / 3)
    # A zero vector has no cosine (NaN): its pairs do not count.
    row = db_conn.execute("select sag_internal._chance_cosine(array['[1,0,0]', '[0,0,0]', '[1,0,0]']::halfvec[])")
    assert float(row.fetchone()[0]) == a(1.0)


def test_floors_per_source_and_their_mean(db_conn: psycopg.Connection) -> None:
    g = GraphBuilder(db_conn)
    near, far = g.source("near"), g.source("far")
    d1, d2 = g.document(near, "near/a.md"), g.document(far, "far/a.md")
    # "near": its chunks all point the same way (chance cosine 1); "far": orthogonal chunks (0).
    for _ in range(3):
        g.chunk(d1, "x", (1, 0, 0))
    for v in ((1, 0, 0), (0, 1, 0), (0, 0, 1)):
        g.chunk(d2, "y", v)
    # Keys of "near": (1,0,0), (3,4,0), (4,3,0): cosines 0.6, 0.8, 0.96 -> mean 0.786667.
    for name, v in (("k1", (1, 0, 0)), ("k2", (3, 4, 0)), ("k3", (4, 3, 0))):
        g.key(near, name, v)
    db_conn.execute("select sag.calibrate_similarity()")

    def floors(sources: list[int] | None) -> tuple[float, float, float]:
        row = db_conn.execute("select chunk, event, key from sag.similarity_floors(%s)", [sources]).fetchone()
        return float(row[0]), float(row[1]), float(row[2])

    assert floors([near]) == (a(0.99), a(0), a(0.786667))   # clamped below 1: the rescale divides by 1 - floor
    assert floors([far]) == (a(0), a(0), a(0))              # no events, no keys: 0
    assert floors(None)[0] == a(0.5)                        # the mean of 1 and 0
    db_conn.execute("delete from sag.settings where name = 'similarity_floors'")
    assert floors(None) == (0, 0, 0)                        # no calibration: the plain cosine
    # ... and no knowledge of the embedder's lexical redundancy: 1, BM25 keeps its whole share of s.
    assert db_conn.execute("select lexical from sag.similarity_floors()").fetchone() == (1.0,)


def test_lexical_redundancy_is_the_correlation_with_the_words(db_conn: psycopg.Connection) -> None:
    g = GraphBuilder(db_conn)
    # Chunks a and b share their text, c has other words: the hash embedder's cosines of the pairs
    # (a,b), (a,c), (b,c) are (1, x, x) for some x < 1, centred proportional to (2, -1, -1).
    texts = ("alpha beta gamma", "alpha beta gamma", "delta epsilon zeta")

    def redundancy(vectors: tuple[tuple[float, float, float], ...]) -> float:
        s = g.source(f"source {vectors}")
        d = g.document(s, f"{s}/doc.md")
        for text, v in zip(texts, vectors):
            g.chunk(d, text, v)
        db_conn.execute("select sag.calibrate_similarity()")
        return float(db_conn.execute("select lexical from sag.similarity_floors(array[%s]::bigint[])",
                                     [s]).fetchone()[0])

    # Model cosines (1, 0.5, 0.5): also proportional to (2, -1, -1): correlation 1.
    assert redundancy(((1, 0, 0), (1, 0, 0), (0.5, math.sqrt(3) / 2, 0))) == a(1.0)
    # Model cosines (cos 30 deg, 0, 0.5) = (0.8660, 0, 0.5): mean 0.4553, centred (0.4107, -0.4553, 0.0447);
    # dot with (2, -1, -1) = 1.2321; norms 0.6148 and sqrt 6 = 2.4495: correlation 0.8182.
    assert redundancy(((1, 0, 0), (math.sqrt(3) / 2, 0.5, 0), (0, 1, 0))) == a(0.8182)
    # Model cosines (0.5, 1, 0.5): centred proportional to (-1, 2, -1): correlation -0.5, taken as 0.
    assert redundancy(((1, 0, 0), (0.5, math.sqrt(3) / 2, 0), (1, 0, 0))) == a(0.0)


def test_reliability_is_how_well_the_embedder_finds_a_chunk_from_its_event(db_conn: psycopg.Connection) -> None:
    g = GraphBuilder(db_conn)
    # Three chunks, each with one event of the same text: by the words (sag.embed_hash of that text, cosine 1
    # with its own chunk) every event finds its chunk first.
    texts = ("alpha beta gamma", "delta epsilon zeta", "eta theta iota")
    axes = ((1, 0, 0), (0, 1, 0), (0, 0, 1))

    def calibrated(event_axis: list[int]) -> tuple[float, float, float, float]:
        s = g.source(f"source {event_axis}")
        d = g.document(s, f"{s}/doc.md")
        for i, text in enumerate(texts):
            chunk = g.chunk(d, text, axes[i])
            g.event(chunk, text, axes[event_axis[i]])
        db_conn.execute("select sag.calibrate_similarity()")
        row = db_conn.execute("select lexical, reliability, redundancy from sag.similarity_floors(array[%s]::bigint[])",
                              [s]).fetchone()
        words_rr = db_conn.execute(
            "select avg(1.0 / r.words)::float8 from (select e.chunk_id, c.id, rank() over (partition by e.chunk_id "
            "order by sag.embed_hash(e.title || E'\\n' || e.content, 3) <=> sag.embed_hash(c.title || E'\\n' || c.content, 3)) "
            "as words from sag.events e join sag.chunks c on c.source_id = e.source_id where e.source_id = %s) r "
            "where r.id = r.chunk_id", [s]).fetchone()[0]
        return float(row[0]), float(row[1]), float(row[2]), float(words_rr)

    # The embeddings agree: each event's vector is its own chunk's.  Reliability 1.
    lexical, reliability, redundancy, words = calibrated([0, 1, 2])
    assert words == a(1.0)
    assert reliability == a(1.0)
    assert redundancy == a(lexical)
    # Each event's vector is the next chunk's: its own chunk ties with the third at distance 1, rank 2 (the
    # next one is first): model MRR 1/2 against the words' 1.
    lexical, reliability, redundancy, words = calibrated([1, 2, 0])
    assert words == a(1.0)
    assert reliability == a(0.5)
    assert redundancy == a(1 - (1 - lexical) * 0.5)
    # Without a calibration: 1, the cosine taken at its lexical redundancy alone.
    db_conn.execute("delete from sag.settings where name = 'similarity_floors'")
    assert db_conn.execute("select reliability, redundancy from sag.similarity_floors()").fetchone() == (1.0, 1.0)


def test_match_keys_rescales_above_the_floor(db_conn: psycopg.Connection) -> None:
    g = GraphBuilder(db_conn)
    s = g.source("one")
    k = g.key(s, "k", (4, 3, 0))  # cosine 0.8 with the query (1, 0, 0)
    rows = db_conn.execute(
        "select key_id, similarity from sag.match_keys('[1,0,0]'::vector, array[%s]::bigint[], 5, 0, "
        "similarity_floor => 0.6)", [s]).fetchall()
    assert rows == [(k, a((0.8 - 0.6) / (1 - 0.6)))]                        # 0.5
    rows = db_conn.execute(
        "select key_id from sag.match_keys('[1,0,0]'::vector, array[%s]::bigint[], 5, 0.6, similarity_floor => 0.6)",
        [s]).fetchall()
    assert rows == []                                                        # 0.5 < min_similarity 0.6
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="similarity_floor"):
        db_conn.execute("select * from sag.match_keys('[1,0,0]'::vector, null, 5, 0, similarity_floor => 1)")


def test_spread_documents_divides_by_the_rank_within_the_document(db_conn: psycopg.Connection) -> None:
    g = GraphBuilder(db_conn)
    s = g.source("one")
    da, db = g.document(s, "a.md"), g.document(s, "b.md")
    a1, a2, a3 = (g.chunk(da, "a", (1, 0, 0)) for _ in range(3))
    b1 = g.chunk(db, "b", (1, 0, 0))
    rows = db_conn.execute("select chunk_id, score from sag.spread_documents(%s, %s)",
                           [[a1, a2, a3, b1], [1.0, 0.6, 0.45, 0.5]]).fetchall()
    # a1 1.0 / 1, a2 0.6 / 2 = 0.3, a3 0.45 / 3 = 0.15, b1 0.5 / 1.
    assert [r[0] for r in rows] == [a1, b1, a2, a3]
    assert [r[1] for r in rows] == [a(1.0), a(0.5), a(0.3), a(0.15)]
    # Ties keep the given order.
    rows = db_conn.execute("select chunk_id from sag.spread_documents(%s, %s)", [[b1, a1], [0.5, 0.5]]).fetchall()
    assert [r[0] for r in rows] == [b1, a1]
    # The documents given (as sag.retrieve returns them) are the ones used: the same order with the true ones;
    # told a3 is alone in a document of its own, it keeps its whole score.
    given = "select chunk_id, score from sag.spread_documents(%s, %s, document_ids => %s)"
    rows = db_conn.execute(given, [[a1, a2, a3, b1], [1.0, 0.6, 0.45, 0.5], [da, da, da, db]]).fetchall()
    assert [r[0] for r in rows] == [a1, b1, a2, a3]
    rows = db_conn.execute(given, [[a1, a2, a3, b1], [1.0, 0.6, 0.45, 0.5], [da, da, 0, db]]).fetchall()
    assert [r[0] for r in rows] == [a1, b1, a3, a2] and rows[2][1] == a(0.45)


def test_spread_documents_keeps_pinned_chunks_among_the_first_places(db_conn: psycopg.Connection) -> None:
    g = GraphBuilder(db_conn)
    s = g.source("one")
    docs = [g.document(s, f"{name}.md") for name in "abcdef"]
    a1, a2, b1, c1, d1, e1, f1 = (g.chunk(d, "x", (1, 0, 0)) for d in [docs[0], *docs])
    ids, scores = [a1, a2, b1, c1, d1, e1, f1], [1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4]
    # Spread alone: a1 1.0, b1 0.8, c1 0.7, d1 0.6, e1 0.5, a2 0.9 / 2 = 0.45, f1 0.4.
    rows = db_conn.execute("select chunk_id from sag.spread_documents(%s, %s)", [ids, scores]).fetchall()
    assert [r[0] for r in rows] == [a1, b1, c1, d1, e1, a2, f1]
    # f1 then e1 pinned within 3: both outside, so they go, in that order, just before place 3; places 1-2 stay.
    rows = db_conn.execute("select chunk_id, score from sag.spread_documents(%s, %s, pinned => %s, pinned_within => 3)",
                           [ids, scores, [f1, e1]]).fetchall()
    assert [r[0] for r in rows] == [a1, b1, f1, e1, c1, d1, a2]
    assert rows[2][1] == a(0.4)                                   # a moved chunk keeps its score
    # A pinned chunk whose document is already in the first places does not move: a2's document holds place 1.
    rows = db_conn.execute("select chunk_id from sag.spread_documents(%s, %s, pinned => %s, pinned_within => 2)",
                           [ids, scores, [a2, d1]]).fetchall()
    assert [r[0] for r in rows] == [a1, d1, b1, c1, e1, a2, f1]
    # A chunk pinned twice moves once, at its first place in pinned.
    rows = db_conn.execute("select chunk_id from sag.spread_documents(%s, %s, pinned => %s)",
                           [ids, scores, [f1, e1, f1]]).fetchall()
    assert [r[0] for r in rows] == [a1, b1, f1, e1, c1, d1, a2]
    # pinned_within 0: no move.
    rows = db_conn.execute("select chunk_id from sag.spread_documents(%s, %s, pinned => %s, pinned_within => 0)",
                           [ids, scores, [f1]]).fetchall()
    assert [r[0] for r in rows] == [a1, b1, c1, d1, e1, a2, f1]


def _candidates(conn: psycopg.Connection, weights: dict[int, float]) -> list[list]:
    """Candidates as sag.retrieve hands them to its helpers: chunk ids, their documents, and a number each."""
    ids = list(weights)
    docs = dict(conn.execute("select id, document_id from sag.chunks where id = any(%s)", [ids]).fetchall())
    return [ids, [docs[c] for c in ids], list(weights.values())]


def test_direct_matches_are_the_best_s_of_distinct_documents(db_conn: psycopg.Connection) -> None:
    g = GraphBuilder(db_conn)
    s = g.source("one")
    da, db, dc = g.document(s, "a.md"), g.document(s, "b.md"), g.document(s, "c.md")
    a1, a2, b1, c1 = g.chunk(da, "a", (1, 0, 0)), g.chunk(da, "a", (1, 0, 0)), g.chunk(db, "b", (1, 0, 0)), \
        g.chunk(dc, "c", (1, 0, 0))
    chunks = _candidates(db_conn, {a1: 0.9, a2: 0.8, b1: 0.5, c1: 0.0})  # s

    def direct(r: float) -> list[int]:
        return db_conn.execute("select sag_internal._direct_matches(%s, %s, %s, %s)", [*chunks, r]).fetchone()[0]

    # One witness (r = 1, the hash embedder): the best s.  Two (r < 0.5): the best s of another document next
    # (b1, not a2 of the same document).  s = 0 is no match at all (c1 never comes).
    assert direct(1.0) == [a1]
    assert direct(0.6) == [a1]
    assert direct(0.2) == [a1, b1]
    assert direct(0.0) == [a1, b1]


def test_named_matches_are_the_page_about_or_the_best_chunk_of_each_named_key(db_conn: psycopg.Connection) -> None:
    g = GraphBuilder(db_conn)
    s = g.source("one")
    doc = g.document(s, "a.md")
    c1, c2, c3, c4 = (g.chunk(doc, "x", (1, 0, 0)) for _ in range(4))
    k1, k2, k3 = g.key(s, "Ada"), g.key(s, "Babbage"), g.key(s, "Lovelace")
    g.links(g.event(c1, "e", (1, 0, 0)), k1)
    g.links(g.event(c2, "e", (1, 0, 0)), k1, k2)
    g.links(g.event(c3, "e", (1, 0, 0)), k2)
    g.links(g.event(c4, "e", (1, 0, 0)), k3)                    # c4 is no candidate
    chunks = _candidates(db_conn, {c1: 0.3, c2: 0.5, c3: 0.9})  # weight_init

    def named(keys: list[int]) -> list[int]:
        return db_conn.execute("select sag_internal._named_matches(%s, %s, %s, %s, %s)", [*chunks, keys, [s]]).fetchone()[0]

    # Ada: c2 (0.5) beats c1 (0.3); Babbage: c3 (0.9) beats c2; best first.  Lovelace's only chunk is no
    # candidate; a chunk best for two keys comes once.
    assert named([k1, k2]) == [c3, c2]
    assert named([k1]) == [c2]
    assert named([k3]) == []
    assert named([k1, k1]) == [c2]
    # A page about Ada (its document titled "Ada") is her chunk, lighter as it is.
    about = g.chunk(g.document(s, "ada.md", "Ada"), "x", (1, 0, 0))
    g.links(g.event(about, "e", (1, 0, 0)), k1)
    chunks = _candidates(db_conn, {c1: 0.3, c2: 0.5, c3: 0.9, about: 0.1})
    assert named([k1, k2]) == [c3, about]


def test_bridge_match_follows_the_best_passages_strongest_unnamed_key(db_conn: psycopg.Connection) -> None:
    g = GraphBuilder(db_conn)
    s = g.source("one")
    start, other, third = g.document(s, "start.md"), g.document(s, "other.md"), g.document(s, "third.md")
    anchor, sibling = g.chunk(start, "x", (1, 0, 0)), g.chunk(start, "x", (1, 0, 0))
    o1, o2, t1 = g.chunk(other, "x", (1, 0, 0)), g.chunk(other, "x", (1, 0, 0)), g.chunk(third, "x", (1, 0, 0))
    humbert, eagles, nfl, tigers = (g.key(s, n) for n in ("Dick Humbert", "Philadelphia Eagles", "NFL", "Tigers"))
    g.links(g.event(anchor, "e", (1, 0, 0)), humbert, eagles, nfl)   # the question's best passage
    g.links(g.event(sibling, "e", (1, 0, 0)), eagles)               # the same document: never the bridge
    g.links(g.event(o1, "e", (1, 0, 0)), eagles)
    g.links(g.event(o2, "e", (1, 0, 0)), eagles, nfl)
    g.links(g.event(t1, "e", (1, 0, 0)), nfl, tigers)
    chunks = _candidates(db_conn, {anchor: 0.9, sibling: 0.95, o1: 0.4, o2: 0.6, t1: 0.8})

    def bridge(keys: dict[int, float], named: list[int], start_chunk: int | None = anchor) -> int | None:
        return db_conn.execute("select sag_internal._bridge_match(%s, %s, %s, %s, %s, %s, %s, %s)",
                               [*chunks, start_chunk, list(keys), list(keys.values()), named, [s]]).fetchone()[0]

    # Key-final: Humbert 0.5 (named), Eagles 0.3, NFL 0.2, Tigers 0.4 (not in the anchor).  The strongest unnamed
    # key of the anchor is Eagles; its best chunk outside start.md is o2 (0.6 beats o1's 0.4; the sibling's
    # 0.95 is in the anchor's own document).
    kf = {humbert: 0.5, eagles: 0.3, nfl: 0.2, tigers: 0.4}
    assert bridge(kf, [humbert]) == o2
    # Unnamed, Humbert is the strongest, but no other document holds it: the next key, Eagles.
    assert bridge(kf, []) == o2
    # Eagles named too: NFL, whose best chunk elsewhere is t1 (0.8).
    assert bridge(kf, [humbert, eagles]) == t1
    # Eagles out of key-final: NFL again.
    assert bridge({humbert: 0.5, nfl: 0.2, tigers: 0.4}, [humbert]) == t1
    # Nothing to follow: every key of the anchor named, or no anchor at all.
    assert bridge(kf, [humbert, eagles, nfl]) is None
    assert bridge(kf, [humbert], None) is None


def test_bridge_match_prefers_the_page_about_the_key(db_conn: psycopg.Connection) -> None:
    g = GraphBuilder(db_conn)
    s = g.source("one")
    start = g.document(s, "start.md", "Dick Humbert")
    season = g.document(s, "season.md", "1946 NFL season")
    team = g.document(s, "team.md", "Eagles")
    anchor = g.chunk(start, "x", (1, 0, 0))
    in_season, in_team = g.chunk(season, "x", (1, 0, 0)), g.chunk(team, "x", (1, 0, 0))
    humbert, eagles = g.key(s, "Dick Humbert"), g.key(s, "Eagles")
    g.links(g.event(anchor, "e", (1, 0, 0)), humbert, eagles)
    g.links(g.event(in_season, "e", (1, 0, 0)), eagles)
    g.links(g.event(in_team, "e", (1, 0, 0)), eagles)

    def bridge(weights: dict[int, float]) -> int | None:
        return db_conn.execute("select sag_internal._bridge_match(%s, %s, %s, %s, %s, %s, %s, %s)",
                               [*_candidates(db_conn, weights), anchor, [humbert, eagles], [0.6, 0.4], [humbert], [s]]
                               ).fetchone()[0]

    # The season's page weighs more, but the page titled with the key's name is about it: the bridge.
    assert bridge({anchor: 0.9, in_season: 0.7, in_team: 0.2}) == in_team
    # Without a page about the key, the heavier chunk holding it.
    db_conn.execute("update sag.documents set title = 'Philadelphia' where id = %s", [team])
    assert bridge({anchor: 0.9, in_season: 0.7, in_team: 0.2}) == in_season
    # A weaker key of the passage with a page about it wins over the strongest key without one.
    coach = g.key(s, "Coach")
    about_coach = g.chunk(g.document(s, "coach.md", "Coach"), "x", (1, 0, 0))
    g.links(g.event(anchor, "e", (1, 0, 0)), coach)
    g.links(g.event(about_coach, "e", (1, 0, 0)), coach)
    weights = {anchor: 0.9, in_season: 0.7, in_team: 0.2, about_coach: 0.1}
    assert db_conn.execute("select sag_internal._bridge_match(%s, %s, %s, %s, %s, %s, %s, %s)",
                           [*_candidates(db_conn, weights), anchor, [humbert, eagles, coach], [0.6, 0.4, 0.1],
                            [humbert], [s]]).fetchone()[0] == about_coach


def test_second_bridge_is_the_page_about_the_next_key(db_conn: psycopg.Connection) -> None:
    g = GraphBuilder(db_conn)
    s = g.source("one")
    start = g.document(s, "start.md", "Film")
    director, actor, studio = g.key(s, "Director"), g.key(s, "Actor"), g.key(s, "Studio")
    film = g.key(s, "Film")
    anchor = g.chunk(start, "x", (1, 0, 0))
    g.links(g.event(anchor, "e", (1, 0, 0)), film, director, actor, studio)
    about_director = g.chunk(g.document(s, "d.md", "Director"), "x", (1, 0, 0))
    about_actor = g.chunk(g.document(s, "a.md", "Actor"), "x", (1, 0, 0))
    mentions_studio = g.chunk(g.document(s, "s.md", "Some studio history"), "x", (1, 0, 0))
    g.links(g.event(about_director, "e", (1, 0, 0)), director)
    g.links(g.event(about_actor, "e", (1, 0, 0)), actor)
    g.links(g.event(mentions_studio, "e", (1, 0, 0)), studio)
    chunks = _candidates(db_conn, {anchor: 0.9, about_director: 0.2, about_actor: 0.1, mentions_studio: 0.8})
    keys = {film: 0.5, studio: 0.4, director: 0.3, actor: 0.2}

    def second(first: int | None, named: list[int]) -> int | None:
        return db_conn.execute("select sag_internal._second_bridge(%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                               [*chunks, anchor, list(keys), list(keys.values()), named, first, [s]]).fetchone()[0]

    # The first bridge took the director's page: the next key with a page about it is the actor, whatever
    # the heavier chunk that only mentions the studio.
    assert second(about_director, [film]) == about_actor
    # Named keys are not followed; with the actor named too, nothing is left.
    assert second(about_director, [film, actor]) is None
    # Without a first bridge (NULL), the strongest key with a page.
    assert second(None, [film]) == about_director

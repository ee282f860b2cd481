"""get_relations / get_triples on a hand-built KG: PostgreSQL (sag.kg_relations / sag.kg_triples over an
import) against the seed's SPARQL on a real engine (Oxigraph) over the same triples, and both against values
worked out by hand."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sag_pg.db.connection import Database
from sag_pg.kg.backends import PostgresKG
from sag_pg.kg.importer import import_rdf
from sag_pg.kg.sparql import SparqlKG

from .sparql_server import SparqlServer

NS = "http://rdf.freebase.com/ns/"
XSD = "http://www.w3.org/2001/XMLSchema#"
EDGES = [
    ("m.ada", "people.person.spouse_s", "m.cvt1"),
    ("m.cvt1", "people.marriage.spouse", "m.william"),
    ("m.cvt1", "people.marriage.spouse", "m.ada"),
    ("m.cvt1", "people.marriage.location_of_ceremony", "m.church"),
    ("m.ada", "people.person.parents", "m.byron"),
    ("m.ada", "people.person.parents", "m.anne"),
    ("m.ada", "people.person.place_of_birth", "q.unnamed"),
    ("m.charles", "people.person.colleagues", "m.ada"),
    ("m.ada", "type.object.type", "people.person"),
    ("m.cvt2", "award.award_honor.award_winner", "m.ada"),
    ("m.cvt2", "award.award_honor.award", "m.prize"),
    ("m.committee", "award.award_committee.honors", "m.cvt2"),
] + [("m.ada", "people.person.languages_spoken", f"m.l{i}") for i in range(1, 9)]
NAMES = [("m.ada", "Ada Lovelace", "en"), ("m.ada", "艾达", "zh"), ("m.william", "William King", "en"),
         ("m.church", "St George's", "en"), ("m.byron", "Lord Byron", "en"), ("m.byron", "拜伦", "zh"),
         ("m.anne", "Anne Isabella", "fr"), ("m.charles", "Charles Babbage", "en"),
         ("m.prize", "Royal Medal", "en"), ("m.committee", "Royal Society", "en")] + [
            (f"m.l{i}", f"Language {i}", "en") for i in range(1, 9)]
QUESTION = "who was Ada Lovelace's spouse?"


def _ntriples() -> str:
    lines = [f"<{NS}{s}> <{NS}{p}> <{NS}{o}> ." for s, p, o in EDGES]
    lines += [f'<{NS}{s}> <{NS}type.object.name> "{n}"@{lang} .' for s, n, lang in NAMES]
    lines.append(f'<{NS}m.ada> <{NS}people.person.date_of_birth> "1815-12-10"^^<{XSD}date> .')
    lines.append(f'<{NS}m.ada> <{NS}common.topic.description> "A mathematician." .')
    return "\n".join(lines) + "\n"


@pytest.fixture
def backends(db_dsn: str, tmp_path: Path) -> Iterator[tuple[PostgresKG, SparqlKG]]:
    path = tmp_path / "kg.nt"
    path.write_text(_ntriples(), encoding="utf-8")
    db = Database(db_dsn)
    server = SparqlServer(path)
    try:
        import_rdf(db, [path], source="kg")
        yield PostgresKG(db, source="kg"), SparqlKG(server.endpoint, db)
    finally:
        server.stop()
        db.close()


def test_relations_match_sparql_and_hand_ranking(backends: tuple[PostgresKG, SparqlKG]) -> None:
    pg, sparql = backends
    got = pg.relations("m.ada", question=QUESTION)
    assert got == sparql.relations("m.ada", question=QUESTION)
    # Out and in, metadata (type.object.type, common.topic.description, type.object.name) removed.  BM25 by hand
    # (N = 8 names, avgdl 32/8 = 4, k1 1.2, b 0.75): spouse is in 2 names (idf ln(1 + 6.5/2.5) = ln 3.6), s in 1
    # (idf ln(1 + 7.5/1.5) = ln 6).  people person spouse s (dl 4): (ln 3.6 + ln 6) / 2.2 = 1.39668; people
    # marriage spouse (dl 3): ln 3.6 / (1 + 1.2 * 0.8125) = 0.64857; the rest 0, alphabetical.
    assert [r for r, _ in got] == [
        "people.person.spouse_s", "people.marriage.spouse", "award.award_honor.award_winner",
        "people.person.colleagues", "people.person.date_of_birth", "people.person.languages_spoken",
        "people.person.parents", "people.person.place_of_birth"]
    assert got[0][1] == pytest.approx(1.39668, abs=1e-4)
    assert got[1][1] == pytest.approx(0.64857, abs=1e-4)
    # By name (English or not) as well as by id.
    assert pg.resolve("ada lovelace") == pg.resolve("艾达") == sparql.resolve("Ada Lovelace") == "m.ada"


def test_triples_flatten_cvt_nodes_like_sparql(backends: tuple[PostgresKG, SparqlKG]) -> None:
    pg, sparql = backends
    rels = ["people.person.spouse_s", "people.person.parents"]
    got = pg.triples("Ada Lovelace", rels, question=QUESTION)
    assert got == sparql.triples("Ada Lovelace", rels, question=QUESTION)
    shown = [(t["head"], t["relation"], t["tail"]) for t in got["triples"]]
    # Parents: an English name, a French one (no English); the spouse CVT flattened: common prefix "people"
    # cut from the first relation, suffix _1; the marriage's own edge back to Ada (head = tail) dropped; the
    # spouse candidate ranks first (spouse twice in its name).
    assert shown == [
        ("Ada Lovelace", "people.person.parents", "Anne Isabella"),
        ("Ada Lovelace", "people.person.parents", "Lord Byron"),
        ("Ada Lovelace", "person.spouse_s.people.marriage.spouse_1", "William King"),
        ("Ada Lovelace", "person.spouse_s.people.marriage.location_of_ceremony_1", "St George's"),
    ]
    assert [c["cvt_node_id"] for c in got["cvt_info"]] == ["m.cvt1", "m.cvt1"]
    # The flattened relation can be asked for in a later call, with the mapping cvt_info gave.
    mapping = {c["flatten_relation"]: c for c in got["cvt_info"]}
    again = pg.triples("m.ada", ["person.spouse_s.people.marriage.spouse_1"], flatten_map=mapping)
    assert again == sparql.triples("m.ada", ["person.spouse_s.people.marriage.spouse_1"], flatten_map=mapping)
    assert [(t["head"], t["tail"]) for t in again["triples"]] == [("Ada Lovelace", "William King")]


def test_incoming_cvt_and_unnamed_nodes(backends: tuple[PostgresKG, SparqlKG]) -> None:
    pg, sparql = backends
    rels = ["award.award_honor.award_winner", "people.person.place_of_birth", "people.person.date_of_birth"]
    got = pg.triples("m.ada", rels, question="which award did Ada win?")
    assert got == sparql.triples("m.ada", rels, question="which award did Ada win?")
    shown = [(t["head"], t["relation"], t["tail"]) for t in got["triples"]]
    # In through a CVT: the CVT's incoming edge comes first in the name; q.unnamed has no name and is no
    # CVT (not m./g.), so its id is shown; a literal shows its value.
    assert shown == [
        ("Ada Lovelace", "people.person.place_of_birth", "q.unnamed"),
        ("Ada Lovelace", "people.person.date_of_birth", "1815-12-10"),
        ("Royal Society", "award_committee.honors.award.award_honor.award_winner_1", "Ada Lovelace"),
    ]


def test_sampling_is_reproducible(backends: tuple[PostgresKG, SparqlKG]) -> None:
    pg, sparql = backends
    rel = ["people.person.languages_spoken"]
    first = pg.triples("m.ada", rel, seed=7)
    assert first == sparql.triples("m.ada", rel, seed=7) == pg.triples("m.ada", rel, seed=7)
    tails = [t["tail"] for t in first["triples"]]
    assert len(tails) == 5 and set(tails) <= {f"Language {i}" for i in range(1, 9)}
    assert any([t["tail"] for t in pg.triples("m.ada", rel, seed=s)["triples"]] != tails for s in range(1, 5))
    # When the LIMIT bites (2 x 3 = 6 of 8 neighbours), both backends cut the same six: the first by id.
    cut = pg.triples("m.ada", rel, seed=7, limit_per_relation=3)
    assert cut == sparql.triples("m.ada", rel, seed=7, limit_per_relation=3)
    assert len(cut["triples"]) == 3 and {t["tail_id"] for t in cut["triples"]} <= {f"m.l{i}" for i in range(1, 7)}


def test_unknown_entity_is_a_named_error(backends: tuple[PostgresKG, SparqlKG]) -> None:
    from sag_pg.errors import NotFoundError, QueryError

    pg, sparql = backends
    assert pg.resolve("Nobody") is None
    with pytest.raises(NotFoundError, match="Nobody"):
        pg.relations("Nobody")
    with pytest.raises(QueryError, match="Nobody"):
        sparql.relations("Nobody")


def test_relations_of_ingested_documents_are_reachable(sag, db_dsn: str) -> None:  # type: ignore[no-untyped-def]
    import psycopg

    sag.ingest_text("Ada Lovelace worked with Charles Babbage in London.", uri="note-1", source="notes")
    with psycopg.connect(db_dsn) as conn:
        ada, babbage = (conn.execute("select id from sag.keys where name = %s", [n]).fetchone()[0]
                        for n in ("Ada Lovelace", "Charles Babbage"))
        conn.execute("select sag.add_relation(%s, 'worked with', %s)", [ada, babbage])
    kg = PostgresKG(sag.db, source="notes")
    assert "worked_with" in [r for r, _ in kg.relations("Ada Lovelace", question="who worked with Ada?")]
    got = kg.triples("ada lovelace", ["worked_with"])
    assert [(t["head"], t["relation"], t["tail"]) for t in got["triples"]] == [
        ("Ada Lovelace", "worked_with", "Charles Babbage")]
    # From the other end: an incoming relation.
    back = kg.triples("Charles Babbage", ["worked_with"])
    assert [(t["head"], t["tail"]) for t in back["triples"]] == [("Ada Lovelace", "Charles Babbage")]


def test_whitelist_and_its_fallback(backends: tuple[PostgresKG, SparqlKG]) -> None:
    pg, sparql = backends
    listed = ["people.person.parents", "people.marriage.spouse", "people.person.spouse_s"]
    pg.whitelist = sparql.whitelist = listed
    got = pg.relations("m.ada", question=QUESTION)
    assert got == sparql.relations("m.ada", question=QUESTION)
    # Only the listed ones, BM25 over these three now: N = 3, so the scores differ from the full list's.
    assert [r for r, _ in got] == ["people.person.spouse_s", "people.marriage.spouse", "people.person.parents"]
    # The CVT's relations go through the whitelist too: location_of_ceremony is not on it.
    triples = pg.triples("m.ada", ["people.person.spouse_s"], question=QUESTION)
    assert triples == sparql.triples("m.ada", ["people.person.spouse_s"], question=QUESTION)
    assert [t["relation"] for t in triples["triples"]] == ["person.spouse_s.people.marriage.spouse_1"]
    # None of them on the whitelist: all of them, as without one.
    pg.whitelist = sparql.whitelist = ["nothing.on.it"]
    assert len(pg.relations("m.ada", question=QUESTION)) == 8

"""RDF import into a source's knowledge graph: a Freebase-style N-Triples file with a CVT node, names in
several languages and malformed lines (counts worked out by hand from tests/data/kg/freebase-mini.nt)."""

from __future__ import annotations

from pathlib import Path

import psycopg

from sag_pg.db.connection import Database
from sag_pg.kg.importer import import_rdf

DATA = Path(__file__).parent / "data" / "kg" / "freebase-mini.nt"


def test_freebase_style_import_counts_and_bad_lines(db_dsn: str) -> None:
    db = Database(db_dsn)
    try:
        report = import_rdf(db, [DATA], source="fb", batch_rows=4)
    finally:
        db.close()
    # 19 triple lines: 17 parse, 2 are malformed (lines 18 and 19 of the file).
    assert report.triples == 17
    assert report.bad_lines == 2
    assert [b["line"] for b in report.bad] == [18, 19]
    assert all(b["message"] for b in report.bad)
    # Names: ada en/zh/fr, william en, byron en/zh, charles en = 7.
    assert report.names == 7
    # Relations: 17 - 7 names = 10, one of them (ada parents byron) given twice = 9.
    assert report.relations == 9
    # Keys: entities ada, cvt1, william, byron, charles, people.person (the type) = 6; literals: the dates
    # 1835-07-08 and 1815-12-10, the number 1.65 = 3.
    assert report.keys == 9
    with psycopg.connect(db_dsn) as conn:
        types = dict(conn.execute(
            "select k.type, count(*) from sag.keys k join sag.sources s on s.id = k.source_id "
            "where s.name = 'fb' group by 1").fetchall())
        assert types == {"entity": 6, "date": 2, "number": 1}
        assert conn.execute("select value_number from sag.keys where type = 'number'").fetchone() == (1.65,)
        names = conn.execute("select n.lang, n.name from sag.kg_names n join sag.keys k on k.id = n.key_id "
                             "where k.normalized = 'm.ada' order by 1").fetchall()
        assert names == [("en", "Ada Lovelace"), ("fr", "Ada Lovelace"), ("zh", "艾达·洛夫莱斯")]
        assert conn.execute("select count(*) from sag.relations where origin = 'import'").fetchone() == (9,)
        assert conn.execute("select count(*) from sag.kg_import_rows").fetchone() == (0,)


def test_import_twice_adds_nothing(db_dsn: str) -> None:
    db = Database(db_dsn)
    try:
        import_rdf(db, [DATA], source="fb")
        again = import_rdf(db, [DATA], source="fb")
    finally:
        db.close()
    assert (again.triples, again.keys, again.names, again.relations) == (17, 0, 0, 0)


def test_turtle_import_and_a_broken_turtle_file(db_dsn: str, tmp_path: Path) -> None:
    import pytest

    from sag_pg.errors import InputError

    good = tmp_path / "kg.ttl"
    good.write_text('@prefix ns: <http://rdf.freebase.com/ns/> .\n'
                    'ns:m.x ns:type.object.name "X"@en ; ns:film.film.directed_by ns:m.y .\n'
                    'ns:m.y ns:type.object.name "Y"@de .\n', encoding="utf-8")
    bad = tmp_path / "bad.ttl"
    bad.write_text("@prefix ns: <http://rdf.freebase.com/ns/> .\nns:m.x ns:p .\n", encoding="utf-8")
    db = Database(db_dsn)
    try:
        report = import_rdf(db, [good], source="ttl")
        assert (report.triples, report.names, report.relations, report.keys) == (3, 2, 1, 2)
        with pytest.raises(InputError, match="bad.ttl: not valid Turtle"):
            import_rdf(db, [bad], source="ttl")
    finally:
        db.close()

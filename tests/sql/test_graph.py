"""Knowledge graph SQL (sql/idempotent/050-052): entities, relations, get_related, co-occurrence, tags.

Relation graph used by the traversal tests (weights on the arrows):
    A -works_on 0.8-> B -part_of 0.5-> C -cites 1.0-> A (a cycle)      B -uses 0.6-> D        E alone
get_related(A, depth 2, out):  B at 1: path 0.8, score 0.8
                               D at 2: path 0.8 * 0.6 = 0.48, score 0.48 / 2 = 0.24
                               C at 2: path 0.8 * 0.5 = 0.40, score 0.40 / 2 = 0.20
                               A again via C -> A at 3: already visited (the cycle stops)
"""

from __future__ import annotations

import psycopg
import pytest

from tests.sql.graph_builder import GraphBuilder


def _entities(conn: psycopg.Connection) -> tuple[int, dict[str, int]]:
    src = GraphBuilder(conn).source("s")
    ids = {n: conn.execute("select sag.add_entity(%s, 'entity', %s)", [src, n]).fetchone()[0]  # type: ignore[index]
           for n in "ABCDE"}
    return src, ids


def _relations(conn: psycopg.Connection, k: dict[str, int]) -> None:
    for head, kind, tail, weight in [("A", "works_on", "B", 0.8), ("B", "part_of", "C", 0.5),
                                     ("C", "cites", "A", 1.0), ("B", "uses", "D", 0.6)]:
        conn.execute("select sag.add_relation(head_key_id => %s, relation_type => %s, tail_key_id => %s, weight => %s)",
                     [k[head], kind, k[tail], weight])


def _related(conn: psycopg.Connection, key_id: int, **kw: object) -> list[tuple[str, int, float, float]]:
    args = ", ".join(f"{name} => %s" for name in kw)
    rows = conn.execute(f"select name, distance, path_weight, score from sag.get_related(%s{', ' if kw else ''}{args})",
                        [key_id, *kw.values()]).fetchall()
    return [(n, d, pytest.approx(p, abs=1e-6), pytest.approx(s, abs=1e-6)) for n, d, p, s in rows]


def test_get_related_depth_direction_types_and_cycle(db_conn: psycopg.Connection) -> None:
    _, k = _entities(db_conn)
    _relations(db_conn, k)
    assert _related(db_conn, k["A"], depth=2) == [("B", 1, 0.8, 0.8), ("D", 2, 0.48, 0.24), ("C", 2, 0.4, 0.2)]
    # depth 3 reaches nothing new: C -> A closes the cycle onto the start.
    assert _related(db_conn, k["A"], depth=3) == _related(db_conn, k["A"], depth=2)
    assert _related(db_conn, k["A"], depth=1) == [("B", 1, 0.8, 0.8)]
    # in: who points at A: C (1.0); then at C: B (1.0 * 0.5 / 2); then at B: A itself, visited.
    assert _related(db_conn, k["A"], depth=3, direction="in") == [("C", 1, 1.0, 1.0), ("B", 2, 0.5, 0.25)]
    # both from B: A 0.8, C 0.5, D 0.6 at 1; nothing else is left at 2 (E has no relation).
    assert _related(db_conn, k["B"], depth=2, direction="both") == [("A", 1, 0.8, 0.8), ("D", 1, 0.6, 0.6),
                                                                      ("C", 1, 0.5, 0.5)]
    assert _related(db_conn, k["A"], depth=2, relation_types=["Works On"]) == [("B", 1, 0.8, 0.8)]
    assert _related(db_conn, k["E"], depth=2, direction="both") == []


def test_get_related_rejects_bad_arguments(db_conn: psycopg.Connection) -> None:
    _, k = _entities(db_conn)
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="direction"), db_conn.transaction():
        db_conn.execute("select * from sag.get_related(%s, direction => 'sideways')", [k["A"]])
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="depth"), db_conn.transaction():
        db_conn.execute("select * from sag.get_related(%s, depth => 0)", [k["A"]])
    with pytest.raises(psycopg.errors.NoDataFound), db_conn.transaction():
        db_conn.execute("select * from sag.get_related(-1)")


def test_entities_and_relations(db_conn: psycopg.Connection) -> None:
    src, k = _entities(db_conn)
    # Same identity as ingestion: type and normalized name; a second add updates the description.
    again = db_conn.execute("select sag.add_entity(%s, 'Entity', ' A ', 'the first letter')", [src]).fetchone()[0]  # type: ignore[index]
    assert again == k["A"]
    assert db_conn.execute("select name, description, pinned, tags from sag.get_entity(%s)", [k["A"]]).fetchone() == \
        ("A", "the first letter", True, [])
    rel = db_conn.execute("select sag.add_relation(%s, 'Works On', %s, 0.3)", [k["A"], k["B"]]).fetchone()[0]  # type: ignore[index]
    # Re-adding re-weights the same relation.
    assert db_conn.execute("select sag.add_relation(%s, 'works_on', %s, 0.9)", [k["A"], k["B"]]).fetchone()[0] == rel  # type: ignore[index]
    assert db_conn.execute("select relation_type, weight, origin from sag.relations").fetchall() == \
        [("works_on", pytest.approx(0.9), "call")]
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="weight"), db_conn.transaction():
        db_conn.execute("select sag.add_relation(%s, 'x', %s, 1.5)", [k["A"], k["B"]])
    assert db_conn.execute("select sag.remove_relation(%s, %s, 'works on')", [k["A"], k["B"]]).fetchone() == (1,)
    db_conn.execute("select sag.add_relation(%s, 'x', %s)", [k["A"], k["B"]])
    assert db_conn.execute("select sag.remove_entity(%s)", [k["B"]]).fetchone() == (True,)
    assert db_conn.execute("select count(*) from sag.relations").fetchone() == (0,)
    assert db_conn.execute("select count(*) from sag.get_entity(%s)", [k["B"]]).fetchone() == (0,)


def test_find_by_keywords(db_conn: psycopg.Connection) -> None:
    src = GraphBuilder(db_conn).source("s")
    for kind, name in [("person", "Steve Jobs"), ("org", "Apple"), ("org", "Apple Records"), ("concept", "Pineapple"),
                       ("location", "北京大学")]:
        db_conn.execute("select sag.add_entity(%s, %s, %s)", [src, kind, name])
    found = db_conn.execute("select name, matched from sag.find_by_keywords(array['apple', 'jobs'])").fetchall()
    # "apple" is a word of Apple (exact name first) and Apple Records, not of Pineapple; "jobs" of Steve Jobs;
    # the two inexact ones tie (no events) and go by id.
    assert found == [("Apple", 1), ("Steve Jobs", 1), ("Apple Records", 1)]
    assert db_conn.execute("select name from sag.find_by_keywords(array['北京'])").fetchall() == [("北京大学",)]


def test_cooccurrence_relations_follow_documents(db_conn: psycopg.Connection) -> None:
    g = GraphBuilder(db_conn)
    src = g.source("s")
    x, y, z = (g.key(src, n) for n in "XYZ")
    d1, d2 = g.document(src, "d1"), g.document(src, "d2")
    e1 = g.event(g.chunk(d1, "x y z", None), "x y z", None)
    e2 = g.event(g.chunk(d2, "x y", None), "x y", None)
    g.links(e1, x, y, z)   # one link at a time: each pair is counted once all the same
    g.links(e2, x, y)

    def relations() -> list[tuple[str, str, int, float]]:
        return [(h, t, n, pytest.approx(w, abs=1e-6)) for h, t, n, w in db_conn.execute(
            "select h.name, t.name, r.evidence_count, r.weight from sag.relations r join sag.keys h on h.id = r.head_key_id "
            "join sag.keys t on t.id = r.tail_key_id where r.origin = 'cooccurrence' and r.relation_type = 'related_to' "
            "order by 1, 2").fetchall()]

    # weight n / (n + 1): X-Y in 2 events 2/3; the others in 1 event 1/2.
    assert relations() == [("X", "Y", 2, 2 / 3), ("X", "Z", 1, 0.5), ("Y", "Z", 1, 0.5)]
    # Followed both ways whatever the direction asked.
    assert [r[0] for r in _related(db_conn, z, depth=1, direction="out")] == ["X", "Y"]
    assert db_conn.execute("select sag.rebuild_cooccurrence()").fetchone() == (3,)
    assert relations() == [("X", "Y", 2, 2 / 3), ("X", "Z", 1, 0.5), ("Y", "Z", 1, 0.5)]
    db_conn.execute("select sag.delete_document((select source_id from sag.documents where id = %s), %s)", [d2, d2])
    assert relations() == [("X", "Y", 1, 0.5), ("X", "Z", 1, 0.5), ("Y", "Z", 1, 0.5)]
    db_conn.execute("select sag.delete_document((select source_id from sag.documents where id = %s), %s)", [d1, d1])
    assert relations() == []


def test_a_cooccurrence_stated_later_keeps_its_evidence(db_conn: psycopg.Connection) -> None:
    # A co-occurrence relation's evidence is derived from the links, not stored; stated by an LLM later, it is
    # an LLM relation whose evidence is rows: its two events, counted off as their documents go.
    g = GraphBuilder(db_conn)
    src = g.source("s")
    x, y = g.key(src, "X"), g.key(src, "Y")
    d1, d2 = g.document(src, "d1"), g.document(src, "d2")
    g.links(g.event(g.chunk(d1, "x y", None), "x y", None), x, y)
    g.links(g.event(g.chunk(d2, "x y", None), "x y", None), x, y)
    db_conn.execute("select sag.add_relation(%s, 'related_to', %s, 0.9, 'llm')", [x, y])

    def relation() -> list[tuple[str, int, int]]:
        return db_conn.execute(
            "select r.origin, r.evidence_count, (select count(*) from sag.relation_events re "
            "where re.source_id = r.source_id and re.relation_id = r.id)::int from sag.relations r "
            "where r.head_key_id = %s and r.tail_key_id = %s", [x, y]).fetchall()

    assert relation() == [("llm", 2, 2)]
    db_conn.execute("select sag.delete_document(%s, %s)", [src, d1])
    assert relation() == [("llm", 1, 1)]
    db_conn.execute("select sag.delete_document(%s, %s)", [src, d2])
    assert relation() == []


def test_cooccurrence_pairs_entities_only(db_conn: psycopg.Connection) -> None:
    # An event with two entities (a person, a topic), an action and a time: one relation, P-T; the action and
    # the time say what happened and when, they are not entities to relate.
    g = GraphBuilder(db_conn)
    src = g.source("s")
    p, t = g.key(src, "P", type="person"), g.key(src, "T", type="topic")
    a, y = g.key(src, "won", type="action"), g.key(src, "2022", type="time", number=2022)
    e = g.event(g.chunk(g.document(src, "d"), "P won T in 2022", None), "P won T in 2022", None)
    g.links(e, p, t, a, y)
    rows = db_conn.execute(
        "select h.name, t.name, r.evidence_count from sag.relations r join sag.keys h on h.id = r.head_key_id "
        "join sag.keys t on t.id = r.tail_key_id where r.origin = 'cooccurrence' order by 1, 2").fetchall()
    assert rows == [("P", "T", 1)]
    assert db_conn.execute("select sag.rebuild_cooccurrence()").fetchone() == (1,)


def test_pinned_entity_outlives_its_last_event(db_conn: psycopg.Connection) -> None:
    g = GraphBuilder(db_conn)
    src = g.source("s")
    kept = db_conn.execute("select sag.add_entity(%s, 'entity', 'Kept')", [src]).fetchone()[0]  # type: ignore[index]
    gone = g.key(src, "Gone")
    d = g.document(src, "d")
    g.links(g.event(g.chunk(d, "kept gone", None), "kept gone", None), kept, gone)
    db_conn.execute("select sag.delete_document((select source_id from sag.documents where id = %s), %s)", [d, d])
    assert db_conn.execute("select name, event_count from sag.keys order by name").fetchall() == [("Kept", 0)]
    db_conn.execute("delete from sag.sources")   # the cascade from the source still takes it
    assert db_conn.execute("select count(*) from sag.keys").fetchone() == (0,)


def test_tags_cap_order_and_reuse(db_conn: psycopg.Connection) -> None:
    src, k = _entities(db_conn)
    assert db_conn.execute("select sag.set_entity_tags(%s, array['Database', 'Graph DB', 'rust'])", [k["A"]]).fetchone() == (3,)
    # "Databases" reuses "database", "graph-db" is the same tag; ten candidates keep the 8 most relevant.
    ten = ["Databases", "graph db"] + [f"t{i}x" for i in range(8)]
    assert db_conn.execute("select sag.set_entity_tags(%s, %s)", [k["B"], ten]).fetchone() == (8,)
    assert db_conn.execute("select tags from sag.get_entity(%s)", [k["B"]]).fetchone() == \
        (["database", "graph-db", "t0x", "t1x", "t2x", "t3x", "t4x", "t5x"],)
    assert db_conn.execute("select * from sag.find_tags(%s, 'Gr')", [src]).fetchall() == [("graph-db",)]
    assert db_conn.execute("select sag.entity_count_by_tag(%s, 'DATABASE')", [src]).fetchone() == (2,)
    assert db_conn.execute("select sag.entity_count_by_tag(%s, 't7x')", [src]).fetchone() == (0,)
    # Explicit relevances order the tags: the cap keeps the two largest.
    db_conn.execute("select sag.set_entity_tags(%s, array['low', 'high', 'mid'], array[0.1, 0.9, 0.5]::real[], 2)",
                    [k["C"]])
    assert db_conn.execute("select tags from sag.get_entity(%s)", [k["C"]]).fetchone() == (["high", "mid"],)

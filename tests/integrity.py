"""Invariants every stored database must satisfy, whatever happened to the process that wrote it."""

from __future__ import annotations

import psycopg

CHECKS = {
    "document without chunks": "select count(*) from sag.documents d "
    "where not exists (select 1 from sag.chunks c where c.document_id = d.id)",
    "chunk of another source than its document": "select count(*) from sag.chunks c "
    "join sag.documents d on d.id = c.document_id where c.source_id <> d.source_id",
    "event of another document than its chunk": "select count(*) from sag.events e "
    "join sag.chunks c on c.id = e.chunk_id where c.document_id <> e.document_id",
    "key with a wrong event_count": "select count(*) from sag.keys k "
    "where k.event_count <> (select count(*) from sag.event_keys ek where ek.key_id = k.id)",
    "key with no event": "select count(*) from sag.keys k "
    "where not exists (select 1 from sag.event_keys ek where ek.key_id = k.id)",
    "chunk_keys out of step with event_keys": """
        select count(*) from (
            select e.chunk_id, ek.key_id, sum(ek.count) as n from sag.event_keys ek
            join sag.events e on e.id = ek.event_id group by 1, 2) expected
        full join sag.chunk_keys ck on ck.chunk_id = expected.chunk_id and ck.key_id = expected.key_id
        where ck.count is distinct from expected.n""",
    "event linked to a key of another source": "select count(*) from sag.event_keys ek "
    "join sag.events e on e.id = ek.event_id join sag.keys k on k.id = ek.key_id where e.source_id <> k.source_id",
}


def violations(conn: psycopg.Connection) -> dict[str, int]:
    found = {}
    for name, sql in CHECKS.items():
        row = conn.execute(sql).fetchone()
        if row and row[0]:
            found[name] = row[0]
    return found

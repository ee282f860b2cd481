"""Sources by name, and their removal: the statements behind source resolution in the read API,
``SAG.delete_source`` and removing empty sources left by failed ingests (one typed function each)."""

from __future__ import annotations

import psycopg

__all__ = ["delete_if_empty", "delete_source", "source_ids_by_name"]


def source_ids_by_name(conn: psycopg.Connection) -> dict[str, int]:
    """Every source's id by name, in name order."""
    return {str(name): int(id_) for name, id_ in conn.execute("select name, id from sag.sources order by name")}


def delete_source(conn: psycopg.Connection, source_id: int) -> dict[str, int]:
    """Delete a source and everything in it (documents, chunks, events, keys, relations, cluster runs: the
    foreign keys cascade) after counting them; the BM25 statistics of the source go with it.

    The 'sag.vector_indexes' lock comes first, before any table, as for every document write
    (sql/idempotent/022-bulk-load.sql): counting first held ACCESS SHARE on sag.chunks while waiting for that
    lock, which a starting bulk load held while it waited for ACCESS EXCLUSIVE on sag.chunks (issue #36 item 3:
    DeadlockDetected).  ``conn`` must not have read chunks, events or keys in this transaction."""
    conn.execute("select sag_internal._wait_for_index_builds()")
    row = conn.execute(
        """select (select count(*) from sag.documents where source_id = %(id)s),
                  (select count(*) from sag.chunks where source_id = %(id)s),
                  (select count(*) from sag.events where source_id = %(id)s),
                  (select count(*) from sag.keys where source_id = %(id)s)""",
        {"id": source_id},
    ).fetchone()
    assert row is not None
    conn.execute("delete from sag.sources where id = %s", [source_id])
    conn.execute("select sag.flush_term_stats()")  # drops the queued changes of the deleted source
    return {"documents": int(row[0]), "chunks": int(row[1]), "events": int(row[2]), "keys": int(row[3])}


def delete_if_empty(conn: psycopg.Connection, name: str) -> bool:
    """Delete the source called ``name`` if it holds no document and no key (what a failed first ingest
    leaves); False if it does not exist or holds something.  The index lock first, as in :func:`delete_source`."""
    conn.execute("select sag_internal._wait_for_index_builds()")
    row = conn.execute(
        """delete from sag.sources s where s.name = %s
              and not exists (select from sag.documents d where d.source_id = s.id)
              and not exists (select from sag.keys k where k.source_id = s.id)
           returning s.id""",
        [name],
    ).fetchone()
    return row is not None



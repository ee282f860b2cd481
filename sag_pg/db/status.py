"""What `sag-pg db status` reports: server, pgvector, schema revision, embedder, its calibration and row counts."""

from __future__ import annotations

from typing import Any

import psycopg

from . import migrate
from .citus_status import distribution_status


def database_status(conn: psycopg.Connection) -> dict[str, Any]:
    server = conn.execute("select current_setting('server_version'), current_database()").fetchone()
    assert server is not None
    vector = conn.execute("select extversion from pg_extension where extname = 'vector'").fetchone()
    available = conn.execute(
        "select default_version from pg_available_extensions where name = 'vector'"
    ).fetchone()
    schema = migrate.schema_status(conn)
    status: dict[str, Any] = {
        "server_version": server[0],
        "database": server[1],
        "pgvector_version": vector[0] if vector else None,
        "pgvector_available": available[0] if available else None,
        "schema_revision": schema.revision,
        "schema_head": schema.head,
        "schema_state": schema.state.value,
        "embedder": None,
        "counts": {},
        "citus": distribution_status(conn),  # None on one PostgreSQL
    }
    if schema.state is not migrate.SchemaState.EMPTY:
        row = conn.execute("select value from sag.settings where name = 'embedder'").fetchone()
        status["embedder"] = row[0] if row else None
        if schema.state is migrate.SchemaState.CURRENT:
            status["counts"] = dict(conn.execute("select * from sag.table_counts()").fetchall())
            status["calibration"] = calibration(conn)
            status["missing_vector_indexes"] = missing_vector_indexes(conn)
            row = conn.execute("select sag.reembed_state()").fetchone()
            status["reembed"] = row[0] if row else None
    return status


_MISSING = """
select t.tbl || '_embedding_hnsw' from (values ('chunks'), ('events'), ('keys')) t(tbl)
 where to_regclass(format('sag.%s_embedding_hnsw', t.tbl)) is null and sag.bound_embedder() is not null
 order by 1"""


def missing_vector_indexes(conn: psycopg.Connection) -> list[str]:
    """The HNSW indexes that are missing (the ones ``sag.missing_vector_indexes()`` counts): a bulk load is
    running, or one was interrupted before rebuilding them; searches scan meanwhile."""
    return [name for (name,) in conn.execute(_MISSING).fetchall()]


_CALIBRATION = """
select s.name, f.chunk, f.lexical, f.reliability, f.redundancy
  from sag.sources s, sag.similarity_floors(array[s.id]) f
 where exists (select 1 from sag.settings st where st.name = 'similarity_floors' and st.value ? s.id::text)
 order by s.name"""


def calibration(conn: psycopg.Connection) -> list[dict[str, Any]]:
    """What the embedder's calibration measured per source (sag.calibrate_similarity): its chance-level cosine
    between chunks, lexical redundancy, reliability, and the redundancy the retrieval reads."""
    return [{"source": name, "chance_cosine": chunk, "lexical_redundancy": lexical, "reliability": reliability,
             "redundancy": redundancy}
            for name, chunk, lexical, reliability, redundancy in conn.execute(_CALIBRATION).fetchall()]

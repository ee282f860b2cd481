"""Keys naming the same entity under two names (sag.key_aliases, issue 33): derive, add, list, undo.

One typed function per SQL function of ``sql/idempotent/033-named-keys.sql``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import psycopg

__all__ = ["AliasPair", "add_aliases", "derive_aliases", "last_chunk_id", "list_aliases", "reject_alias"]


@dataclass(frozen=True)
class AliasPair:
    key_id: int
    key_type: str
    key_name: str
    alias_key_id: int
    alias_type: str
    alias_name: str
    origin: str            # derived | file
    chunk_id: int | None   # the chunk a derived pair came from
    rejected: bool

    def to_dict(self) -> dict[str, object]:
        return {"key_id": self.key_id, "key": f"{self.key_type}:{self.key_name}", "alias_key_id": self.alias_key_id,
                "alias": f"{self.alias_type}:{self.alias_name}", "origin": self.origin, "chunk_id": self.chunk_id,
                "rejected": self.rejected}


def last_chunk_id(conn: psycopg.Connection, source_id: int) -> int:
    """The source's highest chunk id (0 when it has none): what an ingest derives aliases after."""
    row = conn.execute("select coalesce(max(id), 0) from sag.chunks where source_id = %s", [source_id]).fetchone()
    return int(row[0]) if row else 0


def derive_aliases(conn: psycopg.Connection, source_id: int, *, after_chunk_id: int = 0) -> int:
    """``sag.derive_key_aliases``: link the keys a chunk writes as "name (other name)"; the pairs added."""
    row = conn.execute("select sag.derive_key_aliases(%s, %s)", [source_id, after_chunk_id]).fetchone()
    return int(row[0]) if row else 0


def add_aliases(conn: psycopg.Connection, source_id: int, pairs: Sequence[tuple[str, str]]) -> list[tuple[str, str, int]]:
    """``sag.add_key_aliases``: each (name, other name) with the number of key pairs it linked (0: no key)."""
    rows = conn.execute("select name, alias_name, pairs from sag.add_key_aliases(%s, %s, %s)",
                        [source_id, [a for a, _ in pairs], [b for _, b in pairs]]).fetchall()
    return [(str(a), str(b), int(n)) for a, b, n in rows]


def list_aliases(conn: psycopg.Connection, source_id: int) -> list[AliasPair]:
    """``sag.key_aliases_of``: the source's pairs, each once."""
    return [AliasPair(int(r[0]), str(r[1]), str(r[2]), int(r[3]), str(r[4]), str(r[5]), str(r[6]),
                      None if r[7] is None else int(r[7]), bool(r[8]))
            for r in conn.execute("select * from sag.key_aliases_of(%s)", [source_id]).fetchall()]


def reject_alias(conn: psycopg.Connection, source_id: int, key_id: int, alias_key_id: int) -> bool:
    """``sag.reject_key_alias``: undo a pair (kept as rejected); False when the two keys are not linked."""
    row = conn.execute("select sag.reject_key_alias(%s, %s, %s)", [source_id, key_id, alias_key_id]).fetchone()
    return bool(row and row[0])

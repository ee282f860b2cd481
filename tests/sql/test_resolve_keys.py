"""sag.resolve_keys: which existing key a new key converges on, tier by tier."""

from __future__ import annotations

import psycopg


def _setup(conn: psycopg.Connection) -> int:
    conn.execute("select sag.bind_embedder('test', 3)")
    source = conn.execute("select sag.ensure_source('s')").fetchone()[0]
    conn.execute(
        """insert into sag.keys (source_id, type, name, normalized, value_string, embedding, event_count) values
           (%(s)s, 'person', 'Carl Rogers', 'carlrogers', 'Carl Rogers', '[1,0,0]', 3),
           (%(s)s, 'topic', 'Psychotherapy', 'psychotherapy', 'Psychotherapy', '[0,1,0]', 5),
           (%(s)s, 'organization', '302.AI', '302ai', '302.AI', '[0,0,1]', 1),
           (%(s)s, 'topic', 'Internationalization', 'internationalization', 'Internationalization', '[0.6,0.8,0]', 1)""",
        {"s": source},
    )
    return int(source)


def _resolve(conn: psycopg.Connection, source: int, keys: list[tuple[str, str, list[float]]],
             trigram: float | None = 0.9, vector: float | None = None, across: bool = True) -> list[str | None]:
    """Resolves (type, normalized, embedding) string keys; returns the name each one converged on."""
    ids = conn.execute(
        "select key_id from sag.resolve_keys(%s, %s, %s, %s, %s, %s, %s, %s::vector[], %s, %s, %s)",
        [source, [t for t, _, _ in keys], [n for _, n, _ in keys], [n for _, n, _ in keys], [n for _, n, _ in keys],
         [None] * len(keys), [None] * len(keys), [str(e) for _, _, e in keys], trigram, vector, across],
    ).fetchall()
    names = []
    for (key_id,) in ids:
        row = conn.execute("select name from sag.keys where id = %s", [key_id]).fetchone()
        names.append(row[0] if row else None)
    return names


def test_each_tier(db_conn: psycopg.Connection) -> None:
    s = _setup(db_conn)
    got = _resolve(db_conn, s, [
        ("person", "carlrogers", [1, 0, 0]),             # exact
        ("topic", "carlrogers", [1, 0, 0]),              # same name, another type: across types
        ("organization", "ai302", [0, 0, 1]),            # same signature "302 ai"
        ("topic", "internationalisation", [0, 0, 1]),    # trigram similarity 15/21 = 0.714 >= 0.7
        ("topic", "psychology", [0, 1, 0]),              # trigram similarity with psychotherapy < 0.7: new
    ], trigram=0.7)
    # 'internationalization' and 'internationalisation' have 18 distinct trigrams each; 15 are shared
    # (liz iza zat vs lis isa sat differ), so similarity = 15 / (18 + 18 - 15) = 15/21 = 0.714.
    assert got == ["Carl Rogers", "Carl Rogers", "302.AI", "Internationalization", "psychology"]
    assert db_conn.execute("select count(*) from sag.keys").fetchone() == (5,)


def test_switches(db_conn: psycopg.Connection) -> None:
    s = _setup(db_conn)
    # Without across_types, the topic 'carlrogers' is a new key; with a vector threshold of 0.95 a key whose
    # embedding is [0.6, 0.8, 0] (cosine 1.0 with 'Internationalization') converges although its name differs.
    got = _resolve(db_conn, s, [("topic", "carlrogers", [1, 0, 0]), ("topic", "i18n", [0.6, 0.8, 0])],
                   trigram=None, vector=0.95, across=False)
    assert got == ["carlrogers", "Internationalization"]
    # A vector just under the threshold: cosine([0.6,0.8,0], [0.8,0.6,0]) = 0.96 -> converges at 0.95, not 0.97.
    assert _resolve(db_conn, s, [("topic", "l10n", [0.8, 0.6, 0])], trigram=None, vector=0.97) == ["l10n"]


def test_duplicates_within_one_call_get_one_key(db_conn: psycopg.Connection) -> None:
    s = _setup(db_conn)
    got = _resolve(db_conn, s, [("tag", "new", [0, 1, 0]), ("tag", "new", [0, 1, 0])])
    assert got == ["new", "new"]
    assert db_conn.execute("select count(*) from sag.keys where normalized = 'new'").fetchone() == (1,)

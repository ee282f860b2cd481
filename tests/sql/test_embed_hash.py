"""sag.embed_hash (SQL) against HashEmbedder (Python): the two implementations check each other."""

from __future__ import annotations

import math

import numpy as np
import psycopg
import pytest

from sag_pg.embedders.hashing import STOPWORDS, HashEmbedder

TEXTS = [
    "",
    "Hello World",
    "HELLO WORLD, hello world!",
    "曹操与袁绍在官渡展开决战",
    "官渡之战中曹操击败袁绍，奠定了统一北方的基础。",
    "Cao Cao（曹操）defeated Yuan Shao 袁绍 at Guandu in 200 AD; 302.AI vs 302ai vs GPT-4o.",
    "the of and a in is was who what which",  # stopwords only
    "的了是在",  # CJK stop characters only: no characters, but their pairs
    "1234567890 3.14159 2024-01-31",
    "Ünïcode: café, naïve, ÉCOLE, Straße, İstanbul, Ωmega",
    "emoji 🙂🚀 and symbols ★ ✓ → ∑ ∞",
    "tabs\tand\nnewlines\r\nand   spaces",
    "㐀㐁 extension A ideographs, 鿿 at the end of the block",
    "a",
    "internationalization " * 3,
    " ".join(f"word{i} 第{i}章 Section-{i % 17}" for i in range(400)),  # long text
]


def sql_vector(conn: psycopg.Connection, text: str, dimension: int) -> np.ndarray:
    row = conn.execute("select sag.embed_hash(%s, %s)", [text, dimension]).fetchone()
    assert row is not None
    return row[0].to_numpy()


@pytest.mark.parametrize("dimension", [512, 7, 1536])
def test_sql_equals_python(db_conn: psycopg.Connection, dimension: int) -> None:
    python = HashEmbedder(dimension).embed(TEXTS)
    for text, expected in zip(TEXTS, python, strict=True):
        got = sql_vector(db_conn, text, dimension)
        assert got.shape == (dimension,)
        np.testing.assert_allclose(got, expected, atol=1e-6, err_msg=repr(text[:60]))
        # Bit for bit, in fact: all sums are exact and both round a double once to float4.
        assert np.array_equal(got, expected), repr(text[:60])


def test_default_dimension_and_hand_worked_vectors(db_conn: psycopg.Connection) -> None:
    # md5('w:cat') = 68467192b..: bucket 0x192 = 402, 'b' odd -> -1 (see tests/test_embedders.py).
    cat = db_conn.execute("select sag.embed_hash('cat')").fetchone()[0].to_numpy()
    assert cat.shape == (512,) and cat[402] == -1.0 and np.count_nonzero(cat) == 1
    # md5('w:ox') = e2453b785..: 3796188024 % 7 = 6 needs the unsigned reading; '5' odd -> -1.
    assert sql_vector(db_conn, "OX", 7).tolist() == [0, 0, 0, 0, 0, 0, -1]
    # w:ox -> 376 (-1), w:ai -> 509 (+1)
    ox_ai = sql_vector(db_conn, "ox ai", 512)
    assert ox_ai[376] == pytest.approx(-1 / math.sqrt(2)) and ox_ai[509] == pytest.approx(1 / math.sqrt(2))


def test_features_worked_by_hand(db_conn: psycopg.Connection) -> None:
    rows = db_conn.execute(
        "select feature, weight from sag_internal._embed_hash_features('Cats sat, 302.AI 曹操与袁绍')"
    ).fetchall()
    assert sorted(rows) == sorted([
        ("w:cats", 1.0), ("t:#ca", 0.25), ("t:cat", 0.25), ("t:ats", 0.25), ("t:ts#", 0.25),
        ("w:sat", 1.0), ("w:302", 1.0), ("w:ai", 1.0),
        ("c:曹", 0.5), ("c:操", 0.5), ("c:袁", 0.5), ("c:绍", 0.5),
        ("b:曹操", 1.0), ("b:操与", 1.0), ("b:与袁", 1.0), ("b:袁绍", 1.0),
    ])  # fmt: skip


def test_stopword_lists_are_identical(db_conn: psycopg.Connection) -> None:
    words = db_conn.execute("select sag_internal._embed_hash_stopwords()").fetchone()[0]
    assert len(words) == len(set(words))
    assert set(words) == STOPWORDS


def test_texts_without_features_give_the_zero_vector(db_conn: psycopg.Connection) -> None:
    for text in ["", "the of and", "!!! ...", "🙂🚀"]:
        vector = sql_vector(db_conn, text, 16)
        assert vector.tolist() == [0.0] * 16


def test_null_content_gives_null(db_conn: psycopg.Connection) -> None:
    assert db_conn.execute("select sag.embed_hash(null)").fetchone()[0] is None


@pytest.mark.parametrize("dimension", [0, -5, 16001])
def test_bad_dimension_raises_22023(db_conn: psycopg.Connection, dimension: int) -> None:
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="between 1 and 16000"):
        db_conn.execute("select sag.embed_hash('x', %s)", [dimension])


def test_named_parameters_volatility_and_comments(db_conn: psycopg.Connection) -> None:
    got = db_conn.execute("select sag.embed_hash(content => 'cat', dimension => 512)").fetchone()[0]
    assert got.to_numpy()[402] == -1.0
    rows = db_conn.execute(
        """
        select n.nspname, p.proname, p.provolatile, p.proparallel, obj_description(p.oid, 'pg_proc') is not null
        from pg_proc p join pg_namespace n on n.oid = p.pronamespace
        where n.nspname in ('sag', 'sag_internal')
          and p.proname in ('embed_hash', '_embed_hash_features', '_embed_hash_stopwords')
        order by p.proname
        """
    ).fetchall()
    assert rows == [
        ("sag_internal", "_embed_hash_features", "i", "s", True),
        ("sag_internal", "_embed_hash_stopwords", "i", "s", True),
        ("sag", "embed_hash", "i", "s", True),
    ]


def test_cosine_in_sql_ranks_the_related_text_first(db_conn: psycopg.Connection) -> None:
    rows = db_conn.execute(
        """
        select t, sag.embed_hash('曹操与袁绍在官渡展开决战') <=> sag.embed_hash(t) as distance
        from unnest(array['官渡之战中曹操击败袁绍', '今天天气很好，适合去公园散步']) as t
        order by distance
        """
    ).fetchall()
    assert rows[0][0] == "官渡之战中曹操击败袁绍" and rows[0][1] < rows[1][1]

"""Compiled ``sql`` restrictions (sag_pg.db.restrict) run against a real database.

The dataset (built by ``data``), with every expected answer worked out by hand from it::

    source main:
      doc1  uri docs/history.md     title History     created 2020-01-01   metadata {}
        c1 "Intro"    e1  1999-06-01  keys: person 曹操, time 1999
        c2 "Results"  e2  2021-03-01  keys: person 刘备, time 2005, flag true
      doc2  uri notes/draft-plan.md title Draft plan  created now()        metadata {"lang": "en"}
        c3 "Results"  e3  2019-06-15  keys: person O'Brien, flag false
                      e4  (no time)   (no keys)
    source other:
      doc3  uri docs/other.md       title Other       created now()
        c4 "Intro"    e5  2022-01-01  keys: person 曹操 (other source's key), time 2010
"""

from __future__ import annotations

import time
from typing import Any

import psycopg
import pytest

from sag_pg.errors import QueryError
from sag_pg.db import restrict
from sag_pg.db.restrict import allowed_events, parse_restriction


class Data:
    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn
        self.main = self._one("insert into sag.sources (name) values ('main') returning id")
        self.other = self._one("insert into sag.sources (name) values ('other') returning id")
        self.doc1 = self.document(self.main, "docs/history.md", "History", "2020-01-01T00:00:00Z", "{}")
        self.doc2 = self.document(self.main, "notes/draft-plan.md", "Draft plan", None, '{"lang": "en"}')
        self.doc3 = self.document(self.other, "docs/other.md", "Other", None, "{}")
        self.c1 = self.chunk(self.doc1, 0, "Intro")
        self.c2 = self.chunk(self.doc1, 1, "Results")
        self.c3 = self.chunk(self.doc2, 0, "Results")
        self.c4 = self.chunk(self.doc3, 0, "Intro")
        self.e1 = self.event(self.c1, "1999-06-01T00:00:00Z")
        self.e2 = self.event(self.c2, "2021-03-01T00:00:00Z")
        self.e3 = self.event(self.c3, "2019-06-15T00:00:00Z")
        self.e4 = self.event(self.c3, None)
        self.e5 = self.event(self.c4, "2022-01-01T00:00:00Z")
        cao = self.key(self.main, "person", "曹操", string="曹操")
        liu = self.key(self.main, "person", "刘备", string="刘备")
        obrien = self.key(self.main, "person", "O'Brien", string="O'Brien")
        t1999 = self.key(self.main, "time", "1999", number=1999)
        t2005 = self.key(self.main, "time", "2005", number=2005)
        flag_true = self.key(self.main, "flag", "done", boolean=True)
        flag_false = self.key(self.main, "flag", "pending", boolean=False)
        cao_other = self.key(self.other, "person", "曹操", string="曹操")
        t2010 = self.key(self.other, "time", "2010", number=2010)
        for event, keys in [(self.e1, [cao, t1999]), (self.e2, [liu, t2005, flag_true]),
                            (self.e3, [obrien, flag_false]), (self.e5, [cao_other, t2010])]:
            for key in keys:
                conn.execute("insert into sag.event_keys (source_id, event_id, key_id) "
                             "select e.source_id, e.id, %s from sag.events e where e.id = %s", [key, event])

        self.chunk_of = {self.e1: self.c1, self.e2: self.c2, self.e3: self.c3, self.e4: self.c3, self.e5: self.c4}

    def _one(self, query: str, args: list[object] | None = None) -> int:
        row = self.conn.execute(query, args).fetchone()  # type: ignore[arg-type]
        assert row is not None
        return int(row[0])

    def document(self, source: int, uri: str, title: str, created: str | None, metadata: str) -> int:
        return self._one(
            "insert into sag.documents (source_id, uri, title, content, content_hash, metadata, created_at)"
            " values (%s, %s, %s, '', md5(%s), %s::jsonb, coalesce(%s::timestamptz, now())) returning id",
            [source, uri, title, uri, metadata, created])

    def chunk(self, document: int, ordinal: int, title: str) -> int:
        return self._one(
            "insert into sag.chunks (document_id, source_id, ordinal, title, content, start_line, end_line)"
            " select id, source_id, %s, %s, 'text', 1, 1 from sag.documents where id = %s returning id",
            [ordinal, title, document])

    def event(self, chunk: int, event_time: str | None) -> int:
        return self._one(
            "insert into sag.events (chunk_id, document_id, source_id, ordinal, content, event_time)"
            " select c.id, c.document_id, c.source_id,"
            "        (select count(*) from sag.events e where e.chunk_id = c.id), 'something happened',"
            "        %s::timestamptz"
            "   from sag.chunks c where c.id = %s returning id",
            [event_time, chunk])

    def key(self, source: int, type_: str, name: str, *, string: str | None = None, number: float | None = None,
            boolean: bool | None = None) -> int:
        return self._one(
            "insert into sag.keys (source_id, type, name, normalized, value_string, value_number, value_bool)"
            " values (%s, %s, %s, lower(%s), %s, %s, %s) returning id",
            [source, type_, name, name, string, number, boolean])

    def ids(self, *names: str) -> list[int]:
        return sorted(getattr(self, n) for n in names)


@pytest.fixture
def data(db_conn: psycopg.Connection[Any]) -> Data:
    d = Data(db_conn)
    db_conn.commit()
    return d


# restriction -> events expected with no source filter, and within source "main" only
CASES: list[tuple[str, tuple[str, ...], tuple[str, ...]]] = [
    # the examples of sag-algorithm §3.1
    ("key.type = 'time' AND key.value_number >= 2000", ("e2", "e5"), ("e2",)),
    ("document.created_at > now() - interval '30 days'", ("e3", "e4", "e5"), ("e3", "e4")),
    ("document.uri LIKE 'docs/%' AND event.event_time >= '2020-01-01'", ("e2", "e5"), ("e2",)),
    ("key.name IN ('曹操', '刘备')", ("e1", "e2", "e5"), ("e1", "e2")),
    ("NOT (document.title ILIKE '%draft%')", ("e1", "e2", "e5"), ("e1", "e2")),
    ("chunk.title = 'Results'", ("e2", "e3", "e4"), ("e2", "e3", "e4")),
    # one key at a time: no single key is both a person and a time
    ("key.name = '曹操' AND key.type = 'time'", (), ()),
    # ... and NOT applies per key: every event having some non-person key; e4 (no keys) sees NULL -> out
    ("NOT (key.type = 'person')", ("e1", "e2", "e3", "e5"), ("e1", "e2", "e3")),
    ("key.id IS NULL", ("e4",), ("e4",)),
    ("key.name = 'O''Brien'", ("e3",), ("e3",)),
    ("lower(key.name) = 'o''brien'", ("e3",), ("e3",)),
    ("key.value_bool", ("e2",), ("e2",)),
    ("key.value_bool = false", ("e3",), ("e3",)),
    ("key.value_bool IS FALSE", ("e3",), ("e3",)),
    ("key.value_number BETWEEN 2000 AND 2006", ("e2",), ("e2",)),
    ("key.value_number NOT BETWEEN 1000 AND 2006", ("e5",), ()),
    ("key.value_number::int = 1999 OR key.value_number > 2009.5", ("e1", "e5"), ("e1",)),
    ("extract(year from event.event_time) = 2019", ("e3",), ("e3",)),
    ("date_part('year', event.event_time) < 2000", ("e1",), ("e1",)),
    ("date_trunc('month', event.event_time)::date = '2021-03-01'", ("e2",), ("e2",)),
    ("coalesce(event.event_time, '1900-01-01') < '2000-01-01'", ("e1", "e4"), ("e1", "e4")),
    ("event.event_time IS NULL", ("e4",), ("e4",)),
    ("event.event_time < CURRENT_DATE AND event.event_time > CURRENT_TIMESTAMP - interval '100 years'",
     ("e1", "e2", "e3", "e5"), ("e1", "e2", "e3")),
    ("document.metadata ->> 'lang' = 'en'", ("e3", "e4"), ("e3", "e4")),
    ("documents.title = 'History' AND chunks.title <> 'Intro'", ("e2",), ("e2",)),
    ("length(chunk.title) = 5", ("e1", "e5"), ("e1",)),
    ("upper(key.type) = 'FLAG' AND key.value_bool IS NOT TRUE", ("e3",), ("e3",)),
    ("event.id = 0 OR -key.value_number + 2011 = 1", ("e5",), ()),
    ("key.value_string IS NOT DISTINCT FROM NULL AND key.type = 'person'", (), ()),
    ("document.uri NOT LIKE 'docs/%' OR event.title ILIKE ''", ("e1", "e2", "e3", "e4", "e5"),
     ("e1", "e2", "e3", "e4")),
]


def test_restrictions_select_the_expected_events(data: Data, db_conn: psycopg.Connection[Any]) -> None:
    # One database for all the cases (a fresh copy per case would cost a second each); every mismatch
    # is collected so a failure names all the cases that went wrong.
    wrong = []
    for text, everywhere, in_main in CASES:
        r = parse_restriction(text)
        events, chunks = allowed_events(db_conn, r, None)
        main_events, main_chunks = allowed_events(db_conn, r, [data.main])
        if events != data.ids(*everywhere) or main_events != data.ids(*in_main):
            wrong.append(f"{text}: got {events} / {main_events}, expected {data.ids(*everywhere)} / "
                         f"{data.ids(*in_main)}")
        if chunks != [data.chunk_of[e] for e in events] or main_chunks != [data.chunk_of[e] for e in main_events]:
            wrong.append(f"{text}: chunk ids {chunks} not aligned with events {events}")
    assert not wrong, "\n".join(wrong)


def test_source_filter(data: Data, db_conn: psycopg.Connection[Any]) -> None:
    r = parse_restriction("event.id IS NOT NULL")
    assert allowed_events(db_conn, r, [data.other]) == ([data.e5], [data.c4])
    assert allowed_events(db_conn, r, [data.main, data.other])[0] == data.ids("e1", "e2", "e3", "e4", "e5")
    assert allowed_events(db_conn, r, []) == ([], [])


@pytest.mark.parametrize(("text", "message"), [
    ("key.name = 5", "operator does not exist"),
    ("event.event_time > 'not a date'", "invalid input syntax"),
    ("key.type", "argument of AND must be type boolean"),
    ("key.value_number > 1 / 1", None),  # refused before reaching the database
])
def test_database_errors_of_the_condition_become_query_errors(data: Data, db_conn: psycopg.Connection[Any],
                                                             text: str, message: str | None) -> None:
    with pytest.raises(QueryError, match=message or "refused"):
        allowed_events(db_conn, parse_restriction(text), None)
    # the connection is still usable afterwards
    assert db_conn.execute("select 1").fetchone() == (1,)


def _probe(timeout_shown: str) -> Any:
    """A stand-in for allowed_events_query whose one row says (1, 1) iff, inside allowed_events' own
    transaction, statement_timeout shows ``timeout_shown`` and the transaction is read only."""
    query = psycopg.sql.SQL(
        "select (current_setting('statement_timeout') = {})::int,"
        "       (current_setting('transaction_read_only') = 'on')::int").format(psycopg.sql.Literal(timeout_shown))
    return lambda restriction, source_ids: (query, {})


def test_runs_read_only_with_a_local_statement_timeout(data: Data, db_conn: psycopg.Connection[Any],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    r = parse_restriction("key.id = 1")
    monkeypatch.setattr(restrict, "allowed_events_query", _probe("1500ms"))
    assert allowed_events(db_conn, r, None, timeout=1.5) == ([1], [1])
    monkeypatch.setattr(restrict, "allowed_events_query", _probe("2s"))
    assert allowed_events(db_conn, r, None) == ([1], [1])  # the default: 2 s
    monkeypatch.setattr(restrict, "allowed_events_query", _probe("0"))  # the probe can fail
    assert allowed_events(db_conn, r, None) == ([0], [1])
    # and the caller's session is back to its own settings
    assert db_conn.execute("select current_setting('statement_timeout'), "
                           "current_setting('transaction_read_only')").fetchone() == ("0", "off")


def test_a_slow_statement_is_cancelled(data: Data, db_conn: psycopg.Connection[Any],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(restrict, "allowed_events_query",
                        lambda r, s: (psycopg.sql.SQL("select 1, 1 from pg_sleep(10)"), {}))
    start = time.monotonic()
    with pytest.raises(QueryError, match="cancelled after the 0.2 s statement_timeout"):
        allowed_events(db_conn, parse_restriction("key.id = 1"), None, timeout=0.2)
    assert time.monotonic() - start < 5


def test_writes_are_refused(data: Data, db_conn: psycopg.Connection[Any], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(restrict, "allowed_events_query", lambda r, s: (psycopg.sql.SQL(
        "insert into sag.sources (name) values ('evil') returning id, id"), {}))
    with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
        allowed_events(db_conn, parse_restriction("key.id = 1"), None)
    assert db_conn.execute("select count(*) from sag.sources where name = 'evil'").fetchone() == (0,)


@pytest.mark.slow
def test_a_slow_real_restriction_is_cancelled(data: Data, db_conn: psycopg.Connection[Any]) -> None:
    """Without any monkeypatching: enough events that a LIKE scan cannot finish in 1 ms."""
    db_conn.execute(
        "insert into sag.events (chunk_id, document_id, source_id, ordinal, content)"
        " select %s, %s, %s, 100 + g, repeat(md5(g::text), 4) from generate_series(1, 100000) g",
        [data.c1, data.doc1, data.main])
    db_conn.commit()
    r = parse_restriction("lower(event.content) LIKE '%zzz%' AND upper(event.content) NOT LIKE '%QQQ%'")
    with pytest.raises(QueryError, match="statement_timeout"):
        allowed_events(db_conn, r, None, timeout=0.001)


def test_callers_transaction_is_left_writable_and_intact(data: Data, db_conn: psycopg.Connection[Any]) -> None:
    """Called in the middle of the caller's transaction: a savepoint, rolled back, undoes READ ONLY and the
    timeout, and keeps the caller's earlier writes."""
    db_conn.execute("insert into sag.sources (name) values ('before')")
    assert db_conn.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
    events, _ = allowed_events(db_conn, parse_restriction("key.value_bool"), None)
    assert events == [data.e2]
    assert db_conn.execute("select current_setting('transaction_read_only'), "
                           "current_setting('statement_timeout')").fetchone() == ("off", "0")
    db_conn.execute("insert into sag.sources (name) values ('after')")
    db_conn.commit()
    assert db_conn.execute("select count(*) from sag.sources where name in ('before', 'after')").fetchone() == (2,)


def test_works_on_an_autocommit_connection(data: Data, db_conn: psycopg.Connection[Any]) -> None:
    db_conn.autocommit = True
    assert allowed_events(db_conn, parse_restriction("key.value_bool"), None) == ([data.e2], [data.c2])
    assert db_conn.execute("show transaction_read_only").fetchone() == ("off",)


def test_timeout_must_be_positive(data: Data, db_conn: psycopg.Connection[Any]) -> None:
    with pytest.raises(QueryError, match="timeout must be positive"):
        allowed_events(db_conn, parse_restriction("key.value_bool"), None, timeout=0)

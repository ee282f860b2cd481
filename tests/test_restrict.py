"""The ``sql`` restriction of a search (sag_pg.db.restrict): what is accepted, how it compiles, what is refused.

No database here: these tests look at the compiled SQL text and its parameters.  tests/sql/test_restrict_sql.py
runs the compiled restrictions against a real database.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from sag_pg.errors import QueryError
from sag_pg.db.restrict import MAX_DEPTH, MAX_LENGTH, Restriction, allowed_events_query, parse_restriction


def compiled(text: str) -> str:
    return parse_restriction(text).sql.as_string(None)


def values(r: Restriction) -> list[object]:
    """Bound values in placeholder order (Int8 wrappers compare as plain ints)."""
    return [int(v) if type(v).__name__ == "Int8" else v for v in r.params.values()]


# ---------------------------------------------------------------------------------------------------------
# accepted


@pytest.mark.parametrize(
    ("text", "expected_sql", "expected_values"),
    [
        ("key.type = 'time' AND key.value_number >= 2000",
         '(("key"."type") = (%(restrict_0)s)) AND (("key"."value_number") >= (%(restrict_1)s))', ["time", 2000]),
        ("document.created_at > now() - interval '30 days'",
         '("document"."created_at") > ((pg_catalog.now()) - (CAST((%(restrict_0)s) AS interval)))', ["30 days"]),
        ("document.uri LIKE 'docs/%' AND event.event_time >= '2020-01-01'",
         '(("document"."uri") LIKE (%(restrict_0)s)) AND (("event"."event_time") >= (%(restrict_1)s))',
         ["docs/%", "2020-01-01"]),
        ("key.name IN ('曹操', '刘备')", '("key"."name") IN (%(restrict_0)s, %(restrict_1)s)', ["曹操", "刘备"]),
        ("NOT (document.title ILIKE '%draft%')", 'NOT (("document"."title") ILIKE (%(restrict_0)s))', ["%draft%"]),
        ("chunk.title = 'Results'", '("chunk"."title") = (%(restrict_0)s)', ["Results"]),
        # plural table names are synonyms of the aliases; != is <>; ~~* is ILIKE
        ("documents.title != 'x'", '("document"."title") <> (%(restrict_0)s)', ["x"]),
        ("keys.name ~~* 'a%'", '("key"."name") ILIKE (%(restrict_0)s)', ["a%"]),
        ("key.name NOT IN ('a')", '("key"."name") NOT IN (%(restrict_0)s)', ["a"]),
        ("document.title NOT ILIKE 'a'", '("document"."title") NOT ILIKE (%(restrict_0)s)', ["a"]),
        ("key.value_number NOT BETWEEN 1 AND 2.5",
         '("key"."value_number") NOT BETWEEN (%(restrict_0)s) AND (%(restrict_1)s)', [1, Decimal("2.5")]),
        ("key.value_number BETWEEN SYMMETRIC -1 AND 1",
         '("key"."value_number") BETWEEN SYMMETRIC (%(restrict_0)s) AND (%(restrict_1)s)', [-1, 1]),
        ("key.value_bool IS NOT TRUE", '("key"."value_bool") IS NOT TRUE', []),
        ("key.value_bool = false", '("key"."value_bool") = (%(restrict_0)s)', [False]),
        ("key.id IS NULL OR event.event_time IS NOT NULL",
         '(("key"."id") IS NULL) OR (("event"."event_time") IS NOT NULL)', []),
        ("key.value_string IS DISTINCT FROM NULL", '("key"."value_string") IS DISTINCT FROM (NULL)', []),
        ("-key.value_number + 1 < 0",
         '((-("key"."value_number")) + (%(restrict_0)s)) < (%(restrict_1)s)', [1, 0]),
        ("extract(year from event.event_time) = 2019",
         '(EXTRACT(year FROM ("event"."event_time"))) = (%(restrict_0)s)', [2019]),
        ("date_part('month', event.event_time) = 3",
         '(pg_catalog.date_part(%(restrict_0)s, "event"."event_time")) = (%(restrict_1)s)', ["month", 3]),
        ("date_trunc('year', event.event_time)::date = '2021-01-01'",
         '(CAST((pg_catalog.date_trunc(%(restrict_0)s, "event"."event_time")) AS date)) = (%(restrict_1)s)',
         ["year", "2021-01-01"]),
        ("coalesce(event.event_time, '1900-01-01') < CURRENT_DATE",
         '(COALESCE("event"."event_time", %(restrict_0)s)) < (CURRENT_DATE)', ["1900-01-01"]),
        ("lower(key.name) = upper('x') AND length(chunk.title) > 3",
         ('((pg_catalog.lower("key"."name")) = (pg_catalog.upper(%(restrict_0)s))) AND '
         '((pg_catalog.length("chunk"."title")) > (%(restrict_1)s))'), ["x", 3]),
        ("CAST(key.value_number AS int) = 3 AND key.value_number::float8 > 1e3",
         ('((CAST(("key"."value_number") AS integer)) = (%(restrict_0)s)) AND '
         '((CAST(("key"."value_number") AS double precision)) > (%(restrict_1)s))'), [3, Decimal("1e3")]),
        ("document.metadata ->> 'lang' = 'en'",
         '(("document"."metadata" ->> CAST(%(restrict_0)s AS text))) = (%(restrict_1)s)', ["lang", "en"]),
        ("event.created_at < CURRENT_TIMESTAMP", '("event"."created_at") < (CURRENT_TIMESTAMP)', []),
        # quoted identifiers name the same columns; keywords are case-insensitive
        ('"key"."type" = \'t\' and KEY.NAME like \'x\'',
         '(("key"."type") = (%(restrict_0)s)) AND (("key"."name") LIKE (%(restrict_1)s))', ["t", "x"]),
    ],
)
def test_accepted_restrictions_compile(text: str, expected_sql: str, expected_values: list[object]) -> None:
    r = parse_restriction(text)
    assert r.text == text
    assert r.sql.as_string(None) == expected_sql
    assert values(r) == expected_values


def test_literals_are_bound_never_inlined() -> None:
    r = parse_restriction("key.name = 'O''Brien' OR document.title LIKE '%'' OR 1=1 --%'")
    text = r.sql.as_string(None)
    assert "Brien" not in text and "OR 1=1" not in text and "'" not in text
    assert list(r.params.values()) == ["O'Brien", "%' OR 1=1 --%"]


def test_no_quote_survives_in_any_compiled_sql() -> None:
    text = ("(key.type = 'time' AND key.value_number >= 2000.5) OR (document.created_at > now() - interval '1 day'"
            " AND event.event_time BETWEEN '2020-01-01'::date AND '2021-01-01'::timestamptz)"
            " OR document.metadata ->> 'a' IN ('b', 'c') OR extract(year from event.event_time) = 2020")
    assert "'" not in compiled(text)


def test_numbers_keep_their_exact_value() -> None:
    r = parse_restriction("key.value_number = 99999999999999999999.000000001")
    assert list(r.params.values()) == [Decimal("99999999999999999999.000000001")]


def test_allowed_events_query_shape() -> None:
    r = parse_restriction("key.type = 'time'")
    q, params = allowed_events_query(r, [3, 4])
    text = q.as_string(None)
    assert text.startswith("SELECT DISTINCT event.id AS event_id, event.chunk_id FROM sag.events AS event")
    assert 'LEFT JOIN sag.keys AS "key"' in text
    assert text.endswith('WHERE (event.source_id = ANY(CAST(%(source_ids)s AS bigint[]))) AND '
                         '(("key"."type") = (%(restrict_0)s)) ORDER BY event.id')
    assert params == {"restrict_0": "time", "source_ids": [3, 4]}
    assert r.params == {"restrict_0": "time"}  # not mutated

    q, params = allowed_events_query(r, None)
    assert "source_ids" not in q.as_string(None) and params == {"restrict_0": "time"}


# ---------------------------------------------------------------------------------------------------------
# refused


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("1=1; DROP TABLE sag.keys", "';' is not allowed"),
        ("key.type = 'x';", "';' is not allowed"),
        ("key.type = 'x' OR (SELECT count(*) FROM pg_user) > 0", "sub-queries are not allowed"),
        ("pg_sleep(5) IS NULL", "function pg_sleep is not allowed"),
        ("key.type = 'x' -- comment", "comments are not allowed"),
        ("key.type = 'x' /* */ ; select 1", "comments are not allowed"),
        ("sag.keys.type = 'x'", "column sag.keys.type is not allowed"),
        ("type = 'time'", "column type is not allowed"),
        ("key.type = $1", "parameters ($1) are not allowed"),
        ("key.type = 'a' UNION SELECT 1", "no ORDER BY, LIMIT, GROUP BY, UNION"),
        ("key.type = 'a' ORDER BY 1", "no ORDER BY"),
        ("key.type = 'a' LIMIT 1", "no ORDER BY"),
        ("key.type = 'a' GROUP BY 1 HAVING true", "no ORDER BY"),
        ("key.type = 'a' FOR UPDATE", "no ORDER BY"),
        ("(select 1) = 1", "sub-queries are not allowed"),
        ("EXISTS (select 1 from sag.keys)", "sub-queries are not allowed"),
        ("key.name IN (select name from sag.keys)", "sub-queries are not allowed"),
        ("key.type = 'a'::regclass", "type regclass is not allowed"),
        ("key.type::varchar(3) = 'a'", "type pg_catalog.varchar is not allowed"),
        ("key.value_number::numeric(10, 2) = 1", "without modifiers"),
        ("key.value_number = 1::public.int4", "type public.int4 is not allowed"),
        ("set_config('x','y',false) = 'y'", "function set_config is not allowed"),
        ("lower(key.name) = lower((select current_user))", "sub-queries are not allowed"),
        ("dblink('host=x', 'select 1') IS NULL", "function dblink is not allowed"),
        ("public.lower(key.name) = 'a'", "function public.lower is not allowed"),
        ("count(*) > 0", "function count is not allowed"),
        ("lower(key.name ORDER BY key.name) = 'a'", "plain arguments"),
        ("lower(VARIADIC key.name) = 'a'", "plain arguments"),
        ("lower(x => key.name) = 'a'", "named function arguments are not allowed"),
        ("lower(key.name, key.type) = 'a'", "takes 1 arguments"),
        ("now() at time zone 'utc' > event.event_time", "function pg_catalog.timezone is not allowed"),
        # a ';' inside a literal is just text (the scanner knows), and the field is still checked
        ("extract('; drop' from event.event_time) = 1", "extract field ; drop is not allowed"),
        ("extract(foo from event.event_time) = 1", "extract field foo is not allowed"),
        ("current_user = 'postgres'", "current_user is not allowed"),
        ("key.* IS NULL", "'*' is not allowed"),
        ("key.embedding IS NULL", "column key.embedding is not allowed"),
        ("document.content LIKE '%a%'", "column document.content is not allowed"),
        ("chunk.tokens = 'a'", "column chunk.tokens is not allowed"),
        ("ek.key_id = 1", "table ek is not allowed"),
        ("sources.name = 'x'", "table sources is not allowed"),
        ("document.metadata = '{}'", "document.metadata can only be used as document.metadata ->> 'name'"),
        ("document.metadata ->> key.name = 'x'", "->> needs a constant string key"),
        ("document.title ->> 'x' = 'y'", "->> is only allowed as document.metadata ->> 'name'"),
        ("document.metadata -> 'a' IS NULL", "operator -> is not allowed"),
        ("key.type = 'a' COLLATE \"C\"", "COLLATE is not allowed"),
        ("key.name ~ 'x'", "operator ~ is not allowed"),
        ("key.name SIMILAR TO 'x'", "SIMILAR TO"),
        ("document.title LIKE 'a!%' ESCAPE '!'", "ESCAPE"),
        ("key.value_number * 2 > 1", "operator * is not allowed"),
        ("key.value_number OPERATOR(pg_catalog.=) 1", "operator pg_catalog.= is not allowed"),
        ("key.type = ANY(ARRAY['a'])", "ANY(...) is not allowed"),
        ("key.type = ARRAY['a']", "arrays are not allowed"),
        ("row(key.type, key.name) = row('a', 'b')", "row constructors are not allowed"),
        ("(key.name)[1] = 'a'", "subscripts"),
        ("CASE WHEN true THEN true END", "CASE is not allowed"),
        ("key.value_number = B'101'", "constant BitString is not allowed"),
        ("key.type = = 'x'", "not a valid condition"),
        ("key.type = 'abc", "cannot be read"),
        ("true) OR (true", "not a valid condition"),
        ("", "it is empty"),
        ("   ", "it is empty"),
        ("key.type = 'a\x00'", "NUL characters are not allowed"),
    ],
)
def test_refused(text: str, reason: str) -> None:
    with pytest.raises(QueryError) as info:
        parse_restriction(text)
    message = str(info.value)
    assert message.startswith("sql restriction refused: ")
    assert reason in message
    if text.strip():
        assert message.endswith(f"in: {text}")  # the original text, for the user or the LLM to fix


def test_refusal_names_the_allowed_functions_and_the_position() -> None:
    with pytest.raises(QueryError) as info:
        parse_restriction("key.type = 'x' AND pg_sleep(5) IS NULL")
    assert "function pg_sleep is not allowed (allowed: coalesce, current_date, current_timestamp, date_part, " \
           "date_trunc, extract, length, lower, now, upper) at character 20 in:" in str(info.value)


def test_positions_count_characters_not_bytes() -> None:
    with pytest.raises(QueryError, match="table foo is not allowed .* at character 17 in"):
        parse_restriction("key.name = '曹操' AND foo.bar = 1")


def test_length_limit() -> None:
    clause = "key.name = 'aaaaaaaaaa'"
    text = " OR ".join([clause] * (100_000 // len(clause)))  # ~100 kB
    with pytest.raises(QueryError, match=f"longer than {MAX_LENGTH} characters") as info:
        parse_restriction(text)
    assert len(str(info.value)) < 500  # the message quotes the start of the text, not all of it
    # just under the limit is fine
    ok = " OR ".join([clause] * ((MAX_LENGTH - 30) // (len(clause) + 4)))
    assert len(ok) <= MAX_LENGTH
    parse_restriction(ok)


def test_depth_limit_parentheses() -> None:
    deep = "(" * 1000 + "key.type = 'x'" + ")" * 1000
    with pytest.raises(QueryError, match=f"parentheses nested deeper than {MAX_DEPTH} levels"):
        parse_restriction(deep)
    parse_restriction("(" * MAX_DEPTH + "key.type = 'x'" + ")" * MAX_DEPTH)


def test_depth_limit_expression_tree() -> None:
    # NOT NOT NOT ... needs no parentheses, so the tree walk has its own limit
    with pytest.raises(QueryError, match=f"nested deeper than {MAX_DEPTH} levels"):
        parse_restriction("NOT " * 500 + "key.value_bool")
    with pytest.raises(QueryError, match="nested deeper"):
        parse_restriction("key.value_number" + " + 1" * 200 + " > 0")
    parse_restriction("NOT " * 10 + "key.value_bool")

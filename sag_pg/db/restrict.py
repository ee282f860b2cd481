"""The ``sql`` restriction of a search (sag-algorithm §3.1): a whitelisted boolean condition, compiled safely.

``search(query, sql="key.type = 'time' AND key.value_number >= 2000")`` narrows retrieval to the events
for which the condition holds.  The text comes from a user or an LLM, so it is untrusted: it is parsed
with PostgreSQL's own parser (pglast), every node is checked against a whitelist, and the SQL we run is
*rebuilt* from the tree with :mod:`psycopg.sql` — columns through ``Identifier``, every literal as a bound
parameter, operators/functions/types only from the tables below.  The user's text is never spliced into
a statement, so quoting tricks have nothing to escape from.

What a restriction may contain
------------------------------
* ``AND`` / ``OR`` / ``NOT``; comparisons ``= <> != < <= > >=``; ``[NOT] LIKE``, ``[NOT] ILIKE`` (also
  written ``~~ ~~* !~~ !~~*``, no ``ESCAPE``); ``[NOT] IN (list of values)``; ``[NOT] BETWEEN [SYMMETRIC]``;
  ``IS [NOT] NULL``; ``IS [NOT] TRUE/FALSE/UNKNOWN``; ``IS [NOT] DISTINCT FROM``; ``+`` and ``-``
  (binary and unary, e.g. ``now() - interval '30 days'``).
* Constants: strings, integers, decimals, ``true``/``false``, ``NULL``.
* Casts (``x::type``, ``CAST(x AS type)``, ``interval '1 day'``) to: date, timestamptz, timestamp,
  interval, numeric, int/integer, bigint, float8/double precision, text, boolean — without type modifiers.
* Functions: now(), lower(x), upper(x), length(x), coalesce(x, ...), date_trunc(field, x[, zone]),
  date_part(field, x), extract(field FROM x) — positional arguments only; CURRENT_DATE, CURRENT_TIMESTAMP.
* Columns, always qualified by one of four aliases (the plural table names ``documents``, ``chunks``,
  ``events``, ``keys`` are accepted as synonyms, because LLMs write them)::

      document: id, uri, title, created_at, updated_at, and metadata only as  document.metadata ->> 'name'
      chunk:    id, title, ordinal, start_line, end_line
      event:    id, title, content, event_time, created_at
      key:      id, type, name, normalized, value_string, value_number, value_bool

Everything else is refused with :class:`~sag_pg.errors.QueryError`: sub-queries, other tables or schemas
(``sag.keys.type``), unqualified columns, ``*``, ``$1`` parameters, comments, ``;``, COLLATE, arrays,
rows, ``ANY``, regular expressions, other functions (``pg_sleep``, ``set_config``, ``dblink`` ...),
expressions longer than :data:`MAX_LENGTH` characters or nested deeper than :data:`MAX_DEPTH`.

Semantics (one key at a time)
-----------------------------
:func:`allowed_events_query` joins each event to its chunk, its document and — with a LEFT JOIN — each
of its keys, and keeps the event if the condition holds for **at least one** (event, key) row.  So
``key.type = 'time' AND key.value_number >= 2000`` means "has a time key ≥ 2000";
``key.name = 'A' AND key.name = 'B'`` matches nothing (no single key has both names);
``NOT (key.type = 'person')`` keeps events having some key that is not a person; and an event without
keys is seen once with every ``key`` column NULL (``key.id IS NULL`` finds those events).

Running it
----------
:func:`allowed_events` runs the query in a READ ONLY (sub)transaction with a local ``statement_timeout``
and always rolls that (sub)transaction back, so the caller's transaction keeps its own settings.
"""

from __future__ import annotations

import decimal
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import psycopg
import psycopg.errors
from pglast import ast, enums, parse_sql
from pglast.parser import ParseError, scan
from psycopg import sql
from psycopg.types.numeric import Int8

from ..errors import QueryError

__all__ = [
    "MAX_DEPTH",
    "MAX_LENGTH",
    "Restriction",
    "allowed_events",
    "allowed_events_query",
    "parse_restriction",
]

#: Longest restriction accepted, in characters: a real condition is a line or two; anything bigger is
#: either a mistake or an attempt to make the parser or planner work hard.
MAX_LENGTH = 4000
#: Deepest nesting accepted, counted both in parentheses and in expression tree levels.
MAX_DEPTH = 32

# alias (and its plural synonym) -> (table, allowed columns).  Only these columns can be named.
_TABLES: dict[str, str] = {"document": "documents", "chunk": "chunks", "event": "events", "key": "keys"}
_COLUMNS: dict[str, frozenset[str]] = {
    "document": frozenset({"id", "uri", "title", "created_at", "updated_at"}),
    "chunk": frozenset({"id", "title", "ordinal", "start_line", "end_line"}),
    "event": frozenset({"id", "title", "content", "event_time", "created_at"}),
    "key": frozenset({"id", "type", "name", "normalized", "value_string", "value_number", "value_bool"}),
}
_ALIASES: dict[str, str] = {**{a: a for a in _TABLES}, **{t: a for a, t in _TABLES.items()}}
# jsonb is only reachable as document.metadata ->> 'constant': a text value, no path tricks.
_JSON_COLUMNS = {("document", "metadata")}

# user spelling -> SQL we emit.  The emitted text is always ours (a constant of this table).
_COMPARISONS = {"=": "=", "<>": "<>", "<": "<", "<=": "<=", ">": ">", ">=": ">=",
                "~~": "LIKE", "~~*": "ILIKE", "!~~": "NOT LIKE", "!~~*": "NOT ILIKE"}
_ARITHMETIC = {"+": "+", "-": "-"}
_BETWEEN = {
    enums.A_Expr_Kind.AEXPR_BETWEEN: "BETWEEN",
    enums.A_Expr_Kind.AEXPR_NOT_BETWEEN: "NOT BETWEEN",
    enums.A_Expr_Kind.AEXPR_BETWEEN_SYM: "BETWEEN SYMMETRIC",
    enums.A_Expr_Kind.AEXPR_NOT_BETWEEN_SYM: "NOT BETWEEN SYMMETRIC",
}
# type name as pglast reports it (after the parser's own aliasing: int -> int4, ...) -> SQL type.
_TYPES = {"date": "date", "timestamptz": "timestamptz", "timestamp": "timestamp", "interval": "interval",
          "numeric": "numeric", "int4": "integer", "int8": "bigint", "float8": "double precision",
          "text": "text", "bool": "boolean"}
# function -> (min args, max args); emitted schema-qualified so a search_path cannot redirect them.
_FUNCTIONS: dict[str, tuple[int, int]] = {"now": (0, 0), "lower": (1, 1), "upper": (1, 1), "length": (1, 1),
                                          "date_trunc": (2, 3), "date_part": (2, 2), "extract": (2, 2)}
_ALLOWED_FUNCTIONS = "coalesce, current_date, current_timestamp, " + ", ".join(sorted(_FUNCTIONS))
# extract(field FROM x) is emitted with its SQL syntax (works on every PostgreSQL version), so its
# field becomes SQL text: it must be one of these words.
_EXTRACT_FIELDS = frozenset({"century", "day", "decade", "dow", "doy", "epoch", "hour", "isodow", "isoyear",
                             "julian", "microseconds", "millennium", "milliseconds", "minute", "month",
                             "quarter", "second", "timezone", "timezone_hour", "timezone_minute", "week",
                             "year"})
_VALUE_FUNCTIONS = {enums.SQLValueFunctionOp.SVFOP_CURRENT_DATE: "CURRENT_DATE",
                    enums.SQLValueFunctionOp.SVFOP_CURRENT_TIMESTAMP: "CURRENT_TIMESTAMP"}
_BOOL_TESTS = {enums.BoolTestType.IS_TRUE: "IS TRUE", enums.BoolTestType.IS_NOT_TRUE: "IS NOT TRUE",
               enums.BoolTestType.IS_FALSE: "IS FALSE", enums.BoolTestType.IS_NOT_FALSE: "IS NOT FALSE",
               enums.BoolTestType.IS_UNKNOWN: "IS UNKNOWN",
               enums.BoolTestType.IS_NOT_UNKNOWN: "IS NOT UNKNOWN"}

_PREFIX = "SELECT 1 WHERE "
_PARAM_PREFIX = "restrict_"
# SelectStmt fields that must keep their default for "SELECT 1 WHERE <text>": anything else set means
# the text carried a clause of its own (ORDER BY, LIMIT, UNION, GROUP BY, FOR UPDATE, WINDOW ...).
_SELECT_DEFAULTS: dict[str, object] = {
    "distinctClause": None, "intoClause": None, "fromClause": None, "groupClause": None,
    "groupDistinct": False, "havingClause": None, "windowClause": None, "valuesLists": None,
    "sortClause": None, "limitOffset": None, "limitCount": None,
    "limitOption": enums.LimitOption.LIMIT_OPTION_DEFAULT, "lockingClause": None, "withClause": None,
    "op": enums.SetOperation.SETOP_NONE, "all": False, "larg": None, "rarg": None,
}


@dataclass(frozen=True)
class Restriction:
    """A checked restriction: ``sql`` is a boolean expression over the aliases document, chunk, event
    and key whose constants are the named placeholders of ``params``; ``text`` is the original."""

    sql: psycopg.sql.Composed
    params: dict[str, object] = field(hash=False)
    text: str


def _refuse(text: str, reason: str, position: int | None = None) -> QueryError:
    shown = text if len(text) <= 200 else text[:200] + f"... ({len(text)} characters)"
    where = f" at character {position + 1}" if position is not None and position >= 0 else ""
    return QueryError(f"sql restriction refused: {reason}{where} in: {shown}")


class _Compiler:
    """Walks the pglast tree of one restriction and rebuilds it with psycopg.sql, refusing the rest."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.wrapped = (_PREFIX + text).encode()
        self.params: dict[str, object] = {}

    # -- errors ----------------------------------------------------------------------------------------
    def position(self, byte_offset: int | None) -> int | None:
        """pglast locations are byte offsets into the wrapped statement; report characters of ``text``."""
        if byte_offset is None or byte_offset < 0:
            return None
        return len(self.wrapped[:byte_offset].decode(errors="ignore")) - len(_PREFIX)

    def refuse(self, reason: str, node: object = None) -> QueryError:
        loc = getattr(node, "location", None) if node is not None else None
        return _refuse(self.text, reason, self.position(loc if isinstance(loc, int) else None))

    # -- pieces ----------------------------------------------------------------------------------------
    def bind(self, value: object) -> sql.Composable:
        name = f"{_PARAM_PREFIX}{len(self.params)}"
        self.params[name] = value
        return sql.Placeholder(name)

    def column(self, node: ast.ColumnRef) -> tuple[str, str]:
        fields = node.fields or ()
        if not all(isinstance(f, ast.String) for f in fields):
            raise self.refuse("'*' is not allowed", node)
        names = [f.sval for f in fields]
        if len(names) != 2:
            hint = " (qualify it, e.g. key.type)" if len(names) == 1 else ""
            raise self.refuse(f"column {'.'.join(names)} is not allowed{hint}; columns are written "
                              "alias.column with alias document, chunk, event or key", node)
        table, col = names
        alias = _ALIASES.get(table)
        if alias is None:
            raise self.refuse(f"table {table} is not allowed (allowed: document, chunk, event, key)", node)
        return alias, col

    def column_sql(self, node: ast.ColumnRef) -> sql.Composable:
        alias, col = self.column(node)
        if (alias, col) in _JSON_COLUMNS:
            raise self.refuse(f"{alias}.{col} can only be used as {alias}.{col} ->> 'name'", node)
        if col not in _COLUMNS[alias]:
            raise self.refuse(f"column {alias}.{col} is not allowed (allowed for {alias}: "
                              f"{', '.join(sorted(_COLUMNS[alias]))})", node)
        return sql.Identifier(alias, col)

    def const(self, node: ast.A_Const) -> sql.Composable:
        if node.isnull:
            return sql.SQL("NULL")
        val = node.val
        if isinstance(val, ast.Integer):
            # int8 rather than psycopg's smallest fitting type: `30000 + 30000` must not overflow int2.
            return self.bind(Int8(val.ival))
        if isinstance(val, ast.Float):
            return self.bind(decimal.Decimal(val.fval))  # numeric: exact, as PostgreSQL would read it
        if isinstance(val, ast.Boolean):
            return self.bind(bool(val.boolval))
        if isinstance(val, ast.String):
            if "\x00" in val.sval:
                raise self.refuse("NUL characters are not allowed", node)
            # str is sent with the "unknown" type, so PostgreSQL types it from context as it would a literal
            return self.bind(val.sval)
        raise self.refuse(f"constant {type(val).__name__} is not allowed", node)

    def type_name(self, node: ast.TypeName) -> str:
        names = [n.sval for n in node.names or () if isinstance(n, ast.String)]
        if (node.typmods or node.arrayBounds or node.setof or node.pct_type
                or not 1 <= len(names) <= 2 or (len(names) == 2 and names[0] != "pg_catalog")):
            raise self.refuse(f"type {'.'.join(names) or '?'} is not allowed (allowed: "
                              f"{', '.join(sorted(set(_TYPES.values())))}, without modifiers)", node)
        sql_type = _TYPES.get(names[-1])
        if sql_type is None:
            raise self.refuse(f"type {names[-1]} is not allowed (allowed: "
                              f"{', '.join(sorted(set(_TYPES.values())))})", node)
        return sql_type

    # -- expressions -----------------------------------------------------------------------------------
    def expr(self, node: object, depth: int) -> sql.Composable:
        """The SQL of ``node``; every sub-expression is parenthesised so precedence is never re-guessed."""
        if depth > MAX_DEPTH:
            raise self.refuse(f"expression nested deeper than {MAX_DEPTH} levels", node)
        d = depth + 1
        if isinstance(node, ast.BoolExpr):
            args = [self.expr(a, d) for a in node.args or ()]
            if node.boolop == enums.BoolExprType.NOT_EXPR:
                return sql.SQL("NOT ({})").format(args[0])
            joiner = " AND " if node.boolop == enums.BoolExprType.AND_EXPR else " OR "
            return sql.SQL(joiner).join(sql.SQL("({})").format(a) for a in args)
        if isinstance(node, ast.A_Expr):
            return self.a_expr(node, d)
        if isinstance(node, ast.NullTest):
            test = "IS NULL" if node.nulltesttype == enums.NullTestType.IS_NULL else "IS NOT NULL"
            return sql.SQL("({}) " + test).format(self.expr(node.arg, d))
        if isinstance(node, ast.BooleanTest):
            return sql.SQL("({}) " + _BOOL_TESTS[node.booltesttype]).format(self.expr(node.arg, d))
        if isinstance(node, ast.ColumnRef):
            return self.column_sql(node)
        if isinstance(node, ast.A_Const):
            return self.const(node)
        if isinstance(node, ast.TypeCast):
            sql_type = self.type_name(node.typeName)
            return sql.SQL("CAST(({}) AS " + sql_type + ")").format(self.expr(node.arg, d))
        if isinstance(node, ast.FuncCall):
            return self.func(node, d)
        if isinstance(node, ast.CoalesceExpr):
            return sql.SQL("COALESCE({})").format(sql.SQL(", ").join(self.expr(a, d) for a in node.args))
        if isinstance(node, ast.SQLValueFunction):
            if node.op not in _VALUE_FUNCTIONS:
                raise self.refuse(f"{node.op.name.removeprefix('SVFOP_').lower()} is not allowed "
                                  f"(allowed functions: {_ALLOWED_FUNCTIONS})", node)
            return sql.SQL(_VALUE_FUNCTIONS[node.op])
        raise self.refuse(_describe(node), node)

    def a_expr(self, node: ast.A_Expr, d: int) -> sql.Composable:
        kind = node.kind
        names = [n.sval for n in node.name or () if isinstance(n, ast.String)]
        op = names[0] if len(names) == 1 else ".".join(names)  # OPERATOR(schema.op) has two names
        if isinstance(node.rexpr, ast.FuncCall) and node.rexpr.funcname and \
                node.rexpr.funcname[-1].sval in ("like_escape", "similar_to_escape"):
            raise self.refuse("LIKE ... ESCAPE and SIMILAR TO are not allowed", node)
        if kind == enums.A_Expr_Kind.AEXPR_OP:
            if op == "->>":
                return self.json_field(node, d)
            if op in _ARITHMETIC and node.lexpr is None:  # unary minus / plus
                return sql.SQL(_ARITHMETIC[op] + "({})").format(self.expr(node.rexpr, d))
            emitted = _COMPARISONS.get(op) or _ARITHMETIC.get(op)
            if emitted is None or node.lexpr is None:
                raise self.refuse(f"operator {op} is not allowed (allowed: = <> != < <= > >= LIKE ILIKE "
                                  "NOT LIKE NOT ILIKE IN BETWEEN IS NULL + -)", node)
            return sql.SQL("({}) " + emitted + " ({})").format(self.expr(node.lexpr, d),
                                                               self.expr(node.rexpr, d))
        if kind in (enums.A_Expr_Kind.AEXPR_LIKE, enums.A_Expr_Kind.AEXPR_ILIKE) and op in _COMPARISONS:
            return sql.SQL("({}) " + _COMPARISONS[op] + " ({})").format(self.expr(node.lexpr, d),
                                                                        self.expr(node.rexpr, d))
        if kind == enums.A_Expr_Kind.AEXPR_IN and op in ("=", "<>") and isinstance(node.rexpr, (list, tuple)):
            items = sql.SQL(", ").join(self.expr(i, d) for i in node.rexpr)
            return sql.SQL("({}) " + ("IN" if op == "=" else "NOT IN") + " ({})").format(
                self.expr(node.lexpr, d), items)
        if kind in _BETWEEN and isinstance(node.rexpr, (list, tuple)) and len(node.rexpr) == 2:
            low, high = (self.expr(i, d) for i in node.rexpr)
            return sql.SQL("({}) " + _BETWEEN[kind] + " ({}) AND ({})").format(
                self.expr(node.lexpr, d), low, high)
        if kind in (enums.A_Expr_Kind.AEXPR_DISTINCT, enums.A_Expr_Kind.AEXPR_NOT_DISTINCT) and op == "=":
            test = "IS DISTINCT FROM" if kind == enums.A_Expr_Kind.AEXPR_DISTINCT else "IS NOT DISTINCT FROM"
            return sql.SQL("({}) " + test + " ({})").format(self.expr(node.lexpr, d), self.expr(node.rexpr, d))
        what = {enums.A_Expr_Kind.AEXPR_OP_ANY: "ANY(...)", enums.A_Expr_Kind.AEXPR_OP_ALL: "ALL(...)",
                enums.A_Expr_Kind.AEXPR_NULLIF: "NULLIF", enums.A_Expr_Kind.AEXPR_SIMILAR: "SIMILAR TO",
                enums.A_Expr_Kind.AEXPR_IN: "IN with something other than a list of values"}.get(kind)
        raise self.refuse(f"{what or 'operator ' + op} is not allowed", node)

    def json_field(self, node: ast.A_Expr, d: int) -> sql.Composable:
        left, right = node.lexpr, node.rexpr
        if not (isinstance(left, ast.ColumnRef) and self.column(left) in _JSON_COLUMNS):
            raise self.refuse("->> is only allowed as document.metadata ->> 'name'", node)
        if not (isinstance(right, ast.A_Const) and isinstance(right.val, ast.String)):
            raise self.refuse("->> needs a constant string key, as in document.metadata ->> 'name'", node)
        alias, col = self.column(left)
        return sql.SQL("({} ->> CAST({} AS text))").format(sql.Identifier(alias, col), self.const(right))

    def func(self, node: ast.FuncCall, d: int) -> sql.Composable:
        names = [n.sval for n in node.funcname if isinstance(n, ast.String)]
        name = names[-1]
        if len(names) > 2 or (len(names) == 2 and names[0] != "pg_catalog") or name not in _FUNCTIONS:
            raise self.refuse(f"function {'.'.join(names)} is not allowed (allowed: {_ALLOWED_FUNCTIONS})", node)
        if (node.agg_star or node.agg_distinct or node.agg_order or node.agg_filter or node.over
                or node.agg_within_group or node.func_variadic):
            raise self.refuse(f"function {name} may only be called with plain arguments", node)
        if (node.funcformat == enums.CoercionForm.COERCE_SQL_SYNTAX) != (name == "extract"):
            raise self.refuse(f"this syntax of {name} is not allowed", node)
        args = list(node.args or ())
        lo, hi = _FUNCTIONS[name]
        if not lo <= len(args) <= hi:
            raise self.refuse(f"function {name} takes {lo if lo == hi else f'{lo} to {hi}'} arguments", node)
        if name == "extract":
            unit = args[0].val.sval.lower() if isinstance(args[0], ast.A_Const) and \
                isinstance(args[0].val, ast.String) else ""
            if unit not in _EXTRACT_FIELDS:
                raise self.refuse(f"extract field {unit or '?'} is not allowed", node)
            return sql.SQL("EXTRACT(" + unit + " FROM ({}))").format(self.expr(args[1], d))
        return sql.SQL("pg_catalog." + name + "({})").format(sql.SQL(", ").join(self.expr(a, d) for a in args))


def _describe(node: object) -> str:
    kinds = {"SubLink": "sub-queries are not allowed", "ParamRef": "parameters ($1) are not allowed",
             "CollateClause": "COLLATE is not allowed", "RowExpr": "row constructors are not allowed",
             "A_ArrayExpr": "arrays are not allowed", "A_Indirection": "subscripts and field selection are "
             "not allowed", "NamedArgExpr": "named function arguments are not allowed",
             "CaseExpr": "CASE is not allowed", "A_Star": "'*' is not allowed"}
    name = type(node).__name__
    return kinds.get(name, f"{name} expressions are not allowed")


def _check_tokens(text: str) -> None:
    """Refuse what must never be in a lone condition before even parsing it: comments, ';', deep nesting.

    Comments are harmless once we rebuild the SQL, but a condition has no use for them and they are the
    classic way to cut off the rest of a statement, so refusing them keeps intent and result aligned.
    """
    try:
        tokens = scan(text)
    except ParseError as exc:
        raise _refuse(text, f"cannot be read: {exc.args[0]}") from None
    depth = 0
    encoded = text.encode()
    for tok in tokens:
        pos = len(encoded[: tok.start].decode(errors="ignore"))
        if tok.name in ("SQL_COMMENT", "C_COMMENT"):
            raise _refuse(text, "comments are not allowed", pos)
        if tok.name == "ASCII_59":
            raise _refuse(text, "';' is not allowed (one condition, not statements)", pos)
        if tok.name == "ASCII_40":
            depth += 1
            if depth > MAX_DEPTH:
                raise _refuse(text, f"parentheses nested deeper than {MAX_DEPTH} levels", pos)
        elif tok.name == "ASCII_41":
            depth -= 1


def parse_restriction(text: str) -> Restriction:
    """Check ``text`` against the whitelist and compile it; :class:`QueryError` says what is refused.

    Example::

        r = parse_restriction("key.type = 'time' AND key.value_number >= 2000")
        # r.sql: ("key"."type") = (%(restrict_0)s) AND ...;  r.params: {"restrict_0": "time", ...}
    """
    if not isinstance(text, str) or not text.strip():
        raise QueryError("sql restriction refused: it is empty")
    if len(text) > MAX_LENGTH:
        raise _refuse(text, f"it is longer than {MAX_LENGTH} characters")
    if "\x00" in text:
        raise _refuse(text, "NUL characters are not allowed", text.index("\x00"))
    _check_tokens(text)
    compiler = _Compiler(text)
    try:
        stmts = parse_sql(_PREFIX + text)
    except ParseError as exc:
        loc = exc.args[1] if len(exc.args) > 1 and isinstance(exc.args[1], int) else None
        raise _refuse(text, f"not a valid condition ({exc.args[0]})", compiler.position(loc)) from None
    except RecursionError:
        raise _refuse(text, "it is nested too deeply") from None
    if len(stmts) != 1 or not isinstance(stmts[0].stmt, ast.SelectStmt):
        raise _refuse(text, "it must be a single condition, not several statements")
    select = stmts[0].stmt
    for attr, default in _SELECT_DEFAULTS.items():
        if getattr(select, attr) != default:
            raise _refuse(text, "it must be a condition only (no ORDER BY, LIMIT, GROUP BY, UNION, ...)")
    target = select.targetList or ()
    if not (len(target) == 1 and isinstance(target[0].val, ast.A_Const)
            and isinstance(target[0].val.val, ast.Integer) and target[0].val.val.ival == 1
            and target[0].name is None and select.whereClause is not None):
        raise _refuse(text, "it must be a single condition")
    try:
        compiled = compiler.expr(select.whereClause, 1)
    except RecursionError:
        raise _refuse(text, "it is nested too deeply") from None
    return Restriction(sql=sql.Composed([compiled]), params=dict(compiler.params), text=text)


def allowed_events_query(restriction: Restriction,
                         source_ids: Sequence[int] | None) -> tuple[sql.Composed, dict[str, Any]]:
    """The events (and their chunks) that pass ``restriction``, optionally within ``source_ids``.

    An event passes when the condition holds for it together with ANY ONE of its keys; the key columns
    are NULL for an event without keys (see the module docstring).  Rows: ``(event_id, chunk_id)``.
    """
    params: dict[str, Any] = dict(restriction.params)
    if source_ids is None:
        source_filter: sql.Composable = sql.SQL("TRUE")
    else:
        params["source_ids"] = [int(s) for s in source_ids]
        source_filter = sql.SQL("event.source_id = ANY(CAST({} AS bigint[]))").format(sql.Placeholder("source_ids"))
    query = sql.SQL(
        "SELECT DISTINCT event.id AS event_id, event.chunk_id"
        " FROM sag.events AS event"
        " JOIN sag.chunks AS chunk ON chunk.source_id = event.source_id AND chunk.id = event.chunk_id"
        " JOIN sag.documents AS document ON document.source_id = event.source_id AND document.id = event.document_id"
        " LEFT JOIN sag.event_keys AS ek ON ek.source_id = event.source_id AND ek.event_id = event.id"
        ' LEFT JOIN sag.keys AS "key" ON "key".source_id = ek.source_id AND "key".id = ek.key_id'

        " WHERE ({}) AND ({})"
        " ORDER BY event.id"
    ).format(source_filter, restriction.sql)
    return query, params


def allowed_events(conn: psycopg.Connection[Any], restriction: Restriction, source_ids: Sequence[int] | None,
                   *, timeout: float = 2.0) -> tuple[list[int], list[int]]:
    """Run :func:`allowed_events_query`: ``(event ids, chunk ids)``, aligned (one chunk id per event,
    so a chunk id repeats when several of its events pass), ordered by event id.

    The query runs in a READ ONLY (sub)transaction with ``statement_timeout`` = ``timeout`` seconds set
    locally; that (sub)transaction is always rolled back, which restores the caller's settings even
    when ``conn`` was already inside a transaction.  A timeout, or an error of the condition itself
    (``key.name = 5``, a malformed date), becomes :class:`QueryError`.
    """
    if not timeout > 0:
        raise QueryError(f"sql restriction timeout must be positive, got {timeout!r}")
    query, params = allowed_events_query(restriction, source_ids)
    try:
        # force_rollback: we only read, and rolling back (rather than releasing a savepoint) is what
        # undoes READ ONLY and the timeout for the caller's enclosing transaction.
        with conn.transaction(force_rollback=True):
            conn.execute("SET TRANSACTION READ ONLY")
            # set_config(..., true) is SET LOCAL, but with a bound value.
            conn.execute("SELECT set_config('statement_timeout', %s, true)", [f"{max(1, round(timeout * 1000))}ms"])
            rows = conn.execute(query, params).fetchall()
    except psycopg.errors.QueryCanceled as exc:
        raise QueryError(f"sql restriction cancelled after the {timeout:g} s statement_timeout "
                         f"(make it more selective): {restriction.text}") from exc
    except psycopg.DatabaseError as exc:
        # Only the condition's own faults (class 22 data exceptions: a bad date; class 42: `key.name = 5`,
        # a non-boolean WHERE) are the user's to fix; anything else (connection, privileges) propagates.
        state = exc.sqlstate or ""
        if state[:2] not in ("22", "42") or state == "42501":
            raise
        raise QueryError(f"sql restriction failed: {exc.diag.message_primary or exc}: {restriction.text}") \
            from exc
    return [int(r[0]) for r in rows], [int(r[1]) for r in rows]

"""Reading RDF for a knowledge-graph import: N-Triples streamed line by line, Turtle through rdflib.

N-Triples is read one line at a time with rdflib's own N-Triples line parser, so a million triples never sit
in memory and a malformed line is named (line number, rdflib's message) and skipped.  Freebase-style dumps
are accepted too: ``@prefix ns: <http://rdf.freebase.com/ns/> .`` lines and prefixed names (``ns:m.02mjmr``,
``^^xsd:date``) in otherwise N-Triples lines.  Turtle cannot be resynchronised after an error, so a Turtle
file is parsed whole (rdflib) and a syntax error names the file.

Each triple becomes an :class:`ImportRow`: IRIs inside the namespace are shortened to their local part with
``/`` read as ``.`` (``http://rdf.freebase.com/ns/m.02mjmr`` -> ``m.02mjmr``, as the seed's tools show them);
other IRIs stay whole (the tools do not show predicates outside the namespace).  The object's kind says what
the loader makes of it: ``e`` a node, ``n`` a name of the subject (``type.object.name``, ``rdfs:label``),
``s``/``f``/``b``/``d`` a string / number / boolean / date literal.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from rdflib import BNode, Literal, URIRef
from rdflib.plugins.parsers.ntriples import ParseError, W3CNTriplesParser

from ..errors import InputError

__all__ = ["FREEBASE_NS", "NAME_PREDICATES", "BadLine", "ImportRow", "RDFReader"]

FREEBASE_NS = "http://rdf.freebase.com/ns/"
XSD = "http://www.w3.org/2001/XMLSchema#"
RDFS_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
NAME_PREDICATES = ("type.object.name", RDFS_LABEL)

_NUMBER_TYPES = {XSD + t for t in ("integer", "int", "long", "short", "byte", "decimal", "double", "float",
                                   "nonNegativeInteger", "positiveInteger", "negativeInteger",
                                   "nonPositiveInteger", "unsignedInt", "unsignedLong")}
_DATE_TYPES = {XSD + t for t in ("date", "dateTime", "gYear", "gYearMonth", "time")}
_PREFIX_LINE = re.compile(r"^\s*@prefix\s+([A-Za-z][\w.-]*)?:\s*<([^>]*)>\s*\.\s*$")
# A prefixed name as a term: prefix:local, the local part running to whitespace (no quotes, no angle brackets).
_PREFIXED = re.compile(r"^([A-Za-z][\w.-]*)?:([^\s\"<>]*)$")
_DATATYPE = re.compile(r"\^\^([A-Za-z][\w.-]*)?:([^\s\"<>]+)(\s*\.\s*)$")
_BUILTIN_PREFIXES = {"xsd": XSD, "rdfs": "http://www.w3.org/2000/01/rdf-schema#",
                     "rdf": "http://www.w3.org/1999/02/22-rdf-syntax-ns#"}


@dataclass(frozen=True, slots=True)
class ImportRow:
    line: int
    subject: str
    predicate: str
    object: str
    kind: str
    lang: str = ""


@dataclass(frozen=True, slots=True)
class BadLine:
    line: int
    message: str
    text: str


class _Sink:
    __slots__ = ("triple_seen",)

    def __init__(self) -> None:
        self.triple_seen: tuple[object, object, object] | None = None

    def triple(self, s: object, p: object, o: object) -> None:
        self.triple_seen = (s, p, o)


class _DropConversionWarnings(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Failed to convert Literal lexical form")


class RDFReader:
    """Turns RDF terms into :class:`ImportRow` s; ``read`` yields rows and bad lines of one file."""

    def __init__(self, namespace: str = FREEBASE_NS, name_predicates: tuple[str, ...] = NAME_PREDICATES) -> None:
        self.namespace = namespace
        self.name_predicates = frozenset(name_predicates)
        self._bnode_labels: dict[BNode, str] = {}

    def node_id(self, term: object) -> str:
        if isinstance(term, BNode):
            return "_:" + self._bnode_labels.get(term, str(term))
        text = str(term)
        if self.namespace and text.startswith(self.namespace):
            return text[len(self.namespace):].replace("/", ".")
        return text

    def row(self, line: int, s: object, p: object, o: object) -> ImportRow:
        subject, predicate = self.node_id(s), self.node_id(p)
        if not isinstance(o, Literal):
            return ImportRow(line, subject, predicate, self.node_id(o), "e")
        value, lang = str(o), (o.language or "").lower()
        if predicate in self.name_predicates:
            return ImportRow(line, subject, predicate, value, "n", lang)
        datatype = str(o.datatype) if o.datatype is not None else ""
        if datatype in _NUMBER_TYPES:
            try:
                number = float(value)
            except ValueError:
                pass  # an ill-typed number stays a string
            else:
                if not math.isfinite(number) and value.strip().lower().lstrip("+-") not in ("inf", "infinity", "nan"):
                    # 1e999, or 5,000 digits: beyond double precision, which the loader stores numbers in
                    return ImportRow(line, subject, predicate, value, "!")
                return ImportRow(line, subject, predicate, value.strip(), "f")
        elif datatype == XSD + "boolean" and value.strip().lower() in ("true", "false", "1", "0"):
            return ImportRow(line, subject, predicate, str(value.strip().lower() in ("true", "1")).lower(), "b")
        elif datatype in _DATE_TYPES:
            return ImportRow(line, subject, predicate, value, "d")
        return ImportRow(line, subject, predicate, value, "s", lang)

    def read(self, path: Path, fmt: str | None = None) -> Iterator[ImportRow | BadLine]:
        fmt = fmt or guess_format(path)
        if fmt == "turtle":
            yield from self._read_turtle(path)
            return
        try:
            handle = path.open("rb")
        except OSError as exc:
            raise InputError(f"{path}: {exc.strerror or exc}") from exc
        # rdflib logs a traceback for a literal its converter refuses (a 5,000-digit xsd:integer); the line is
        # ours to name (a BadLine), not a traceback on stderr.
        quiet = _DropConversionWarnings()
        logging.getLogger("rdflib.term").addFilter(quiet)
        try:
            with handle:
                yield from self._read_ntriples(handle)
        finally:
            logging.getLogger("rdflib.term").removeFilter(quiet)

    def _read_ntriples(self, handle: IO[bytes]) -> Iterator[ImportRow | BadLine]:
        """Each line on its own: one that is not UTF-8, not N-Triples, or holds what PostgreSQL cannot store
        (a lone surrogate or NUL from an escape, a number beyond double precision) is a BadLine, and the
        next line is read."""
        sink = _Sink()
        parser = W3CNTriplesParser(sink)  # type: ignore[arg-type]
        bnodes: dict[str, BNode] = {}
        prefixes = dict(_BUILTIN_PREFIXES)
        number = 0
        for data in handle:
            number += 1
            try:
                raw = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield BadLine(number, f"not UTF-8 (invalid byte 0x{data[exc.start]:02x} at column {exc.start + 1})",
                              data[:200].decode("utf-8", "backslashreplace"))
                continue
            text = raw.strip()
            if not text or text.startswith("#"):
                continue
            declared = _PREFIX_LINE.match(text)
            if declared:
                prefixes[declared.group(1) or ""] = declared.group(2)
                continue
            escape = _bad_escape(text)
            if escape is not None:
                yield BadLine(number, escape, _shown(text))
                continue
            try:
                parser.line = _expand_prefixes(text, prefixes)
                sink.triple_seen = None
                parser.parseline(bnode_context=bnodes)  # type: ignore[arg-type]
            except (ParseError, ValueError, IndexError, OverflowError) as exc:
                yield BadLine(number, str(exc) or type(exc).__name__, _shown(text))
                continue
            if sink.triple_seen is None:
                continue
            if len(bnodes) != len(self._bnode_labels):
                self._bnode_labels = {node: label for label, node in bnodes.items()}
            row = self.row(number, *sink.triple_seen)
            problem = _unstorable(row)
            if problem is not None:
                yield BadLine(number, problem, _shown(text))
                continue
            yield row

    def _read_turtle(self, path: Path) -> Iterator[ImportRow | BadLine]:
        from rdflib import Graph

        graph = Graph()
        try:
            graph.parse(path, format="turtle")
        except OSError as exc:
            raise InputError(f"{path}: {exc.strerror or exc}") from exc
        except Exception as exc:  # rdflib raises its own BadSyntax and others; all mean a bad file
            raise InputError(f"{path}: not valid Turtle: {exc}") from exc
        for s, p, o in graph:
            if isinstance(p, URIRef):
                row = self.row(0, s, p, o)
                problem = _unstorable(row)
                yield row if problem is None else BadLine(0, problem, f"{s} {p} {o}"[:200])


# N-Triples escapes: UCHAR (\\uXXXX, \\UXXXXXXXX) and, in literals, ECHAR (\\t \\b \\n \\r \\f \\" \\' \\\\).
_ESCAPE = re.compile(r"\\(?:u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|[tbnrf\"'\\]|(.?))")


def _bad_escape(text: str) -> str | None:
    """The first escape N-Triples does not have (``\\uZZZZ``, ``\\q``), which rdflib's parser keeps as text."""
    if "\\" not in text:
        return None
    for found in _ESCAPE.finditer(text):
        if found.group(1) is not None:
            return f"invalid escape {text[found.start():found.start() + 6]} at column {found.start() + 1}"
    return None


def _unstorable(row: ImportRow) -> str | None:
    """Why PostgreSQL cannot store this row (decoded escapes may give a lone surrogate or a NUL), or None."""
    if row.kind == "!":
        return f"the number {row.object[:40]}{'…' if len(row.object) > 40 else ''} is beyond double precision"
    for what, value in (("subject", row.subject), ("predicate", row.predicate), ("object", row.object),
                        ("language", row.lang)):
        if "\x00" in value:
            return f"the {what} holds a NUL character (\\u0000), which PostgreSQL cannot store"
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            return f"the {what} holds a lone surrogate (U+{ord(value[exc.start]):04X}): not valid Unicode"
    return None


def _shown(text: str) -> str:
    return text[:200]


def guess_format(path: Path) -> str:
    name = path.name.lower().removesuffix(".gz")
    if name.endswith((".ttl", ".turtle")):
        return "turtle"
    if name.endswith((".nt", ".ntriples", ".n3t", ".txt", ".rdf.nt")) or "." not in name:
        return "ntriples"
    raise InputError(f"{path}: unknown RDF format (give --format ntriples or turtle)")


def _expand_prefixes(line: str, prefixes: dict[str, str]) -> str:
    """A Freebase-style line (``ns:m.0x ns:type.object.name "X"@en .``) as N-Triples; others unchanged."""
    parts = line.split(None, 2)
    if len(parts) < 3:
        return line
    terms = [_expand_term(parts[0], prefixes), _expand_term(parts[1], prefixes)]
    rest = parts[2]
    if rest.startswith('"'):
        datatype = _DATATYPE.search(rest)
        if datatype and (datatype.group(1) or "") in prefixes:
            iri = prefixes[datatype.group(1) or ""] + datatype.group(2)
            rest = rest[: datatype.start()] + f"^^<{iri}>" + datatype.group(3)
        return f"{terms[0]} {terms[1]} {rest}"
    obj, _, tail = rest.rstrip().rpartition(" ")
    if not obj:  # "ns:x ." with no space before the dot: "ns:x."
        obj, tail = rest.rstrip()[:-1], "."
    return f"{terms[0]} {terms[1]} {_expand_term(obj.strip(), prefixes)} {tail}"


def _expand_term(term: str, prefixes: dict[str, str]) -> str:
    if term.startswith(("<", "_:", '"')):
        return term
    found = _PREFIXED.match(term)
    if found and (found.group(1) or "") in prefixes:
        return f"<{prefixes[found.group(1) or '']}{found.group(2)}>"
    return term

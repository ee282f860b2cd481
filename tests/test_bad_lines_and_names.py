"""One bad line never aborts a file, and names print on one line (issue #36 items 5 and 9).

Item 5: a JSONL line with an integer of more than 4,300 digits, and a ``kg import`` line holding ``"\\uDC80"``,
``"a\\u0000b"``, a 5,000-digit xsd:integer, an invalid ``"\\uZZZZ"`` escape or a byte that is not UTF-8: the line
is named and skipped, every good line stored, the exit code the command's (1 for both when a line failed).  Before, each of them was a traceback with nothing stored, or
(``\\uZZZZ``) imported as text and counted as 0 bad lines.

Item 9: ``show --json`` of metadata nested 500 deep (RecursionError); synonym files with a lone surrogate, a NUL,
a 5,000-digit integer, deep nesting or a null (stored as the string "None"); source names and URIs with a
newline, a control or a bidi character (accepted, so one-line errors split and ``documents`` printed BEL/CR raw).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import psycopg
import pytest

from sag_pg.errors import InputError
from tests.cli_support import run_cli as _cli

NS = "http://rdf.freebase.com/ns/"
XSD_INTEGER = "http://www.w3.org/2001/XMLSchema#integer"




def _error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("Error:")]


# -- item 5: JSONL ---------------------------------------------------------------------------------------------

def test_a_jsonl_integer_beyond_python_digit_limit_fails_its_line_only(cli_env: dict[str, str], db_dsn: str,
                                                                        tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("\n".join([
        json.dumps({"id": "a", "text": "Ada Lovelace met Charles Babbage in London."}),
        '{"id": "b", "text": "Big.", "metadata": {"n": ' + "7" * 5000 + "}}",
        json.dumps({"id": "c", "text": "Grace Hopper wrote the first compiler in 1952."}),
    ]) + "\n", encoding="utf-8")
    code, _, err = _cli(capsys, "ingest", str(corpus), "--source", "n")
    assert code == 1  # the contract: the good documents stored, the failed ones named, exit code 1
    assert f"{corpus}:2: not valid JSON (a number of 5,000 digits; at most 4,300 are read)" in err
    with psycopg.connect(db_dsn) as conn:
        assert [r[0] for r in conn.execute("select uri from sag.documents order by uri")] == ["a", "c"]


# -- item 5: kg import -----------------------------------------------------------------------------------------

def _triples(count: int) -> list[bytes]:
    return [f'<{NS}m.{i}> <{NS}type.object.name> "Entity {i}"@en .'.encode() for i in range(count)]


BAD_LINES = {
    "surrogate": (f'<{NS}m.x> <{NS}people.person.nick> "\\uDC80" .'.encode(), "lone surrogate (U+DC80)"),
    "nul": (f'<{NS}m.x> <{NS}people.person.nick> "a\\u0000b" .'.encode(), "NUL character"),
    "digits": (f'<{NS}m.x> <{NS}people.person.age> "{"1" * 5000}"^^<{XSD_INTEGER}> .'.encode(),
               "beyond double precision"),
    "escape": (f'<{NS}m.x> <{NS}people.person.nick> "\\uZZZZ" .'.encode(), "invalid escape \\uZZZZ"),
    "latin1": (f'<{NS}m.x> <{NS}people.person.nick> "caf'.encode() + b'\xe9" .', "not UTF-8 (invalid byte 0xe9"),
}


@pytest.mark.parametrize("case", sorted(BAD_LINES))
def test_kg_import_names_and_skips_one_bad_line_and_stores_the_rest(case: str, cli_env: dict[str, str],
                                                                    db_dsn: str, tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    line, message = BAD_LINES[case]
    lines = _triples(6000)
    lines.insert(3000, line)  # line 3001 of the file
    path = tmp_path / "graph.nt"
    path.write_bytes(b"\n".join(lines) + b"\n")
    code, out, err = _cli(capsys, "kg", "import", str(path), "--source", "g", "--json")
    assert code == 1, err  # the contract: bad lines skipped and named, exit code 1
    assert f"{path}:3001: skipped: " in err and message in err, err
    report = json.loads(out)
    assert report["triples"] == 6000 and report["bad_lines"] == 1
    assert [b["line"] for b in report["bad"]] == [3001]
    with psycopg.connect(db_dsn) as conn:
        assert conn.execute("select count(*) from sag.kg_names").fetchone() == (6000,)


def test_an_escaped_backslash_before_u_is_not_an_escape(cli_env: dict[str, str], tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "ok.nt"
    path.write_text(f'<{NS}m.1> <{NS}type.object.name> "C:\\\\uZZZZ \\u00e9\\t"@en .\n', encoding="utf-8")
    code, out, err = _cli(capsys, "kg", "import", str(path), "--source", "g", "--json")
    assert code == 0, err
    assert json.loads(out)["bad_lines"] == 0


# -- item 9: show --json on deep metadata -------------------------------------------------------------------------

def test_show_json_prints_metadata_nested_500_deep(cli_env: dict[str, str], db_dsn: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from sag_pg import SAG

    SAG().ingest_text("Ada Lovelace met Charles Babbage.", uri="deep", source="n")
    nested = '{"a":' * 500 + "1" + "}" * 500  # stored through SQL (ingest refuses it now: see below)
    with psycopg.connect(db_dsn) as conn:
        conn.execute("update sag.documents set metadata = %s::jsonb where uri = 'deep'", [nested])
    code, out, _ = _cli(capsys, "show", "deep", "--source", "n", "--json")
    assert code == 0
    depth, value = 0, json.loads(out)["metadata"]
    while isinstance(value, dict):
        depth, value = depth + 1, value["a"]
    assert (depth, value) == (500, 1)


def test_ingest_refuses_metadata_nested_beyond_the_limit(tmp_path: Path) -> None:
    from sag_pg.ingest.readers import InputFailure, read_inputs
    from sag_pg.limits import MAX_JSON_DEPTH

    corpus = tmp_path / "c.jsonl"
    deep = '{"a":' * (MAX_JSON_DEPTH + 1) + "1" + "}" * (MAX_JSON_DEPTH + 1)
    fine = '{"a":' * MAX_JSON_DEPTH + "1" + "}" * MAX_JSON_DEPTH
    corpus.write_text(f'{{"id": "x", "text": "t", "metadata": {deep}}}\n'
                      f'{{"id": "y", "text": "t", "metadata": {fine}}}\n', encoding="utf-8")
    first, second = list(read_inputs([corpus]))
    assert isinstance(first, InputFailure) and first.message == f"metadata is nested more than {MAX_JSON_DEPTH} levels deep"
    assert not isinstance(second, InputFailure)


# -- item 9: synonym files ---------------------------------------------------------------------------------------

SYNONYM_FILES = {
    "surrogate": ('{"BWR": "\\udc80"}', "synonym 'BWR': the canonical name holds a lone surrogate (U+DC80)"),
    "nul": ('{"BWR": "a\\u0000b"}', "synonym 'BWR': the canonical name holds a NUL character"),
    "digits": ('{"BWR": ' + "9" * 5000 + "}", "not valid JSON (a number of 5,000 digits"),
    "deep": ('{"BWR": ' + "[" * 5000 + "]" * 5000 + "}", "not valid JSON (nested too deeply)"),
    "nested": ('{"BWR": {"a": 1}}', "synonym 'BWR': the canonical name must be a string, not an object"),
    "null": ('{"BWR": "Brightwater Robotics", "b": null}', "synonym 'b': the canonical name must be a string, not null"),
}


@pytest.mark.parametrize("case", sorted(SYNONYM_FILES))
def test_a_bad_synonyms_file_is_one_error_line(case: str, cli_env: dict[str, str], db_dsn: str, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    text, message = SYNONYM_FILES[case]
    path = tmp_path / "synonyms.json"
    path.write_text(text, encoding="utf-8")
    code, _, err = _cli(capsys, "source", "s", "--create", "--synonyms", str(path))
    assert code == 1
    [line] = _error_lines(err)
    assert line.startswith(f"Error: {path}: ") and message in line, line
    with psycopg.connect(db_dsn) as conn:  # nothing stored: the source is not even created
        assert conn.execute("select count(*) from sag.sources where name = 's'").fetchone() == (0,)


def test_the_client_refuses_a_null_synonym_instead_of_storing_none(sag) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InputError, match="synonym 'b': the canonical name must be a string, not null"):
        sag.configure_source("s", synonyms={"BWR": "Brightwater Robotics", "b": None})
    stored = sag.configure_source("s", synonyms={"BWR": "Brightwater Robotics"})
    assert stored["synonyms"] == {"BWR": "Brightwater Robotics"}


# -- item 9: names and URIs --------------------------------------------------------------------------------------

BAD_NAMES = {"newline": ("a\nb", "U+000A"), "cr": ("a\rb", "U+000D"), "bel": ("a\x07b", "U+0007"),
             "bidi": ("abc\u202etxt.exe", "U+202E"), "separator": ("a\u2028b", "U+2028")}


@pytest.mark.parametrize("case", sorted(BAD_NAMES))
def test_a_source_name_that_cannot_print_on_one_line_is_refused(case: str, cli_env: dict[str, str], db_dsn: str,
                                                                tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    name, code_point = BAD_NAMES[case]
    code, out, err = _cli(capsys, "source", name, "--create")
    assert code == 1
    [line] = err.splitlines()  # one line: the name is shown escaped
    assert line.startswith("Error: source name '") and code_point in line and name not in line
    note = tmp_path / "n.md"
    note.write_text("Ada met Babbage.", encoding="utf-8")
    code, out, err = _cli(capsys, "ingest", str(note), "--source", name)
    assert code == 1 and len(_error_lines(err)) == 1
    with psycopg.connect(db_dsn) as conn:
        assert conn.execute("select count(*) from sag.sources").fetchone() == (0,)


@pytest.mark.parametrize("case", sorted(BAD_NAMES))
def test_a_uri_that_cannot_print_on_one_line_is_refused(case: str, sag) -> None:  # type: ignore[no-untyped-def]
    name, code_point = BAD_NAMES[case]
    with pytest.raises(InputError, match=f"id holds a .*{re.escape(code_point)}.*one line") as refused:
        sag.ingest_text("Ada met Babbage.", uri=name)
    assert "\n" not in str(refused.value) and name not in str(refused.value)


def test_a_jsonl_id_with_a_newline_fails_its_line_only(cli_env: dict[str, str], db_dsn: str, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"id": "a\nb", "text": "Ada met Babbage."}) + "\n"
                      + json.dumps({"id": "ok", "text": "Grace Hopper wrote a compiler."}) + "\n", encoding="utf-8")
    code, _, err = _cli(capsys, "ingest", str(corpus), "--source", "n")
    assert code == 1
    assert f"{corpus}:1: id holds a control character (U+000A at character 1)" in err
    with psycopg.connect(db_dsn) as conn:
        assert [r[0] for r in conn.execute("select uri from sag.documents")] == ["ok"]


def test_documents_never_prints_raw_control_characters(cli_env: dict[str, str], db_dsn: str,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """Names stored before the check (or through SQL) are listed with their characters escaped."""
    from sag_pg import SAG

    SAG().ingest_text("Ada met Babbage.", uri="plain", source="n")
    with psycopg.connect(db_dsn) as conn:
        conn.execute("update sag.documents set uri = E'bell\\x07\\rover\\u202e' where uri = 'plain'")
        conn.execute("update sag.sources set name = E'src\\nx' where name = 'n'")
    code, out, _ = _cli(capsys, "documents")
    assert code == 0
    assert not any(ch in out for ch in "\x07\r\u202e")
    [_, row] = out.splitlines()
    assert row.split()[:2] == ["src\\nx", "bell\\x07\\rover\\u202e"]


@pytest.mark.parametrize("name", ["a\nb", "bell\x07", "rtl\u202eevil", "sep\u2028x"])
def test_psql_ensure_source_refuses_names_that_do_not_print_on_one_line(db_conn, name: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="must print on one line"):
        db_conn.execute("select sag.ensure_source(%s)", [name])

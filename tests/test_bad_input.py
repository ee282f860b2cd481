"""Bad input never aborts a run or shows a traceback (issue #15, points 3, 4 and 6).

Each bad document fails alone, named, with the others stored; each mistake a user can make on the
command line is one ``Error:`` line and exit code 1 (or 2 for a usage error).  Run against the real
test database; the cases that could hang or that depend on a real stdin run in a subprocess.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from sag_pg.db.connection import raw_connect
from sag_pg.errors import ConfigError, InputError
from sag_pg.ingest.readers import (
    DEFAULT_MAX_DOCUMENT_BYTES,
    DocumentInput,
    InputFailure,
    count_documents,
    read_inputs,
)
from tests.cli_support import run_cli as _cli

GOOD = "Ada Lovelace met Charles Babbage in London in 1833."




def _subprocess(args: list[str], env: dict[str, str], *, input: bytes | None = None,
                timeout: float = 120) -> tuple[int, str, str]:
    done = subprocess.run([sys.executable, "-m", "sag_pg", *args], env=env, input=input, capture_output=True,
                          timeout=timeout, check=False)
    out, err = done.stdout.decode("utf-8", "replace"), done.stderr.decode("utf-8", "replace")
    assert "Traceback" not in out + err, err
    return done.returncode, out, err


def _documents(dsn: str) -> dict[str, str]:
    """uri → content of every stored document."""
    with psycopg.connect(dsn) as conn:
        return dict(conn.execute("select uri, content from sag.documents order by uri").fetchall())


# -- point 3: one bad character fails one document -------------------------------------------------------


def test_a_lone_surrogate_in_a_jsonl_line_fails_that_line_only(cli_env: dict[str, str], db_dsn: str,
                                                                capsys: pytest.CaptureFixture[str],
                                                                tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(  # the surrogate is a JSON escape: valid JSON, not valid Unicode
        '{"id": "a", "text": "Alice met Carol in Paris."}\n'
        '{"id": "b", "text": "Bob \\udc80 went"}\n'
        '{"id": "c", "text": "Carol went home to Rome."}\n', encoding="utf-8")
    code, _, err = _cli(capsys, "ingest", str(corpus))
    assert code == 1
    assert f"{corpus}:2: text holds a lone surrogate (U+DC80" in err
    assert sorted(_documents(db_dsn)) == ["a", "c"]


@pytest.mark.parametrize("line, field", [
    ('{"id": "x", "title": "T \\ud800", "text": "fine"}', "title"),
    ('{"id": "x\\udfff", "text": "fine"}', "id"),
    ('{"id": "x", "text": "fine", "metadata": {"k\\udc80": 1}}', "metadata"),
    ('{"id": "x", "text": "fine", "metadata": {"k": ["\\udc80"]}}', "metadata"),
    ('{"id": "x", "text": "Alice\\u0000 met Bob"}', "text"),  # PostgreSQL stores no NUL
    ('{"id": "x", "title": "T\\u0000", "text": "fine"}', "title"),
    ('{"id": "x", "text": "fine", "metadata": {"k": {"j": "\\u0000"}}}', "metadata"),
])
def test_a_surrogate_or_nul_in_any_field_is_refused_by_the_reader(tmp_path: Path, line: str, field: str) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(line + "\n", encoding="utf-8")
    [result] = list(read_inputs([corpus]))
    assert isinstance(result, InputFailure)
    assert result.origin == f"{corpus}:1"
    assert result.message.startswith(f"{field} holds a lone surrogate" if "u0000" not in line
                                     else f"{field} holds a NUL character")


def test_a_paired_surrogate_escape_is_just_a_character(tmp_path: Path) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"id": "x", "text": "smile \\ud83d\\ude00"}\n', encoding="utf-8")
    [result] = list(read_inputs([corpus]))
    assert isinstance(result, DocumentInput) and result.text == "smile \U0001f600"


def test_no_document_with_a_surrogate_can_be_built_or_ingested(sag) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InputError, match="lone surrogate"):
        DocumentInput(uri="x", text="Bob \udc80 went")
    with pytest.raises(InputError, match="lone surrogate"):
        sag.ingest_text("Bob \udc80 went", uri="note")
    with pytest.raises(InputError, match="metadata is not JSON"):
        DocumentInput(uri="x", text="fine", metadata={"when": object()})


def test_latin1_on_stdin_fails_named_without_a_traceback(cli_env: dict[str, str], db_dsn: str) -> None:
    # Under the C locale Python reads stdin with surrogateescape: the bytes must be decoded by sag-pg itself.
    env = dict(cli_env, LC_ALL="C", LANG="C")
    code, _, err = _subprocess(["ingest", "-"], env, input=b"Caf\xe9 au lait.\n")
    assert code == 1
    assert "stdin: not UTF-8 text (invalid byte 0xe9 at offset 3)" in err
    code, _, err = _subprocess(["ingest", "-", "--uri", "note"], env, input="Café au lait in Paris.\n".encode())
    assert code == 0, err
    assert _documents(db_dsn) == {"note": "Café au lait in Paris.\n"}


def test_latin1_utf16_and_utf32_files(cli_env: dict[str, str], db_dsn: str, capsys: pytest.CaptureFixture[str],
                                      tmp_path: Path) -> None:
    (tmp_path / "latin1.md").write_bytes("Café crème in Paris.\n".encode("latin-1"))
    (tmp_path / "utf16.md").write_bytes("# Über\nÜber Straße in Berlin.\n".encode("utf-16"))  # with a BOM
    (tmp_path / "utf16be.txt").write_bytes(b"\xfe\xff" + "北京欢迎你。\n".encode("utf-16-be"))
    (tmp_path / "utf32.md").write_bytes("Zoë met 张三 in Tokyo.\n".encode("utf-32"))
    (tmp_path / "utf8bom.md").write_bytes("\ufeffPlain UTF-8 with a BOM.\n".encode())
    (tmp_path / "nobom16.md").write_bytes("No mark here.\n".encode("utf-16-le"))
    code, _, err = _cli(capsys, "ingest", str(tmp_path))
    assert code == 1
    assert f"{tmp_path / 'latin1.md'}: not UTF-8 text (invalid byte 0xe9 at offset 3)" in err
    assert f"{tmp_path / 'nobom16.md'}: binary file" in err and "byte-order mark" in err
    stored = {Path(uri).name: content for uri, content in _documents(db_dsn).items()}
    assert stored == {
        "utf16.md": "# Über\nÜber Straße in Berlin.\n",
        "utf16be.txt": "北京欢迎你。\n",
        "utf32.md": "Zoë met 张三 in Tokyo.\n",
        "utf8bom.md": "Plain UTF-8 with a BOM.\n",
    }


def test_jsonl_may_start_with_a_utf8_bom_but_not_be_utf16(tmp_path: Path) -> None:
    (tmp_path / "bom.jsonl").write_bytes(b'\xef\xbb\xbf{"id": "a", "text": "fine"}\n')
    (tmp_path / "wide.jsonl").write_bytes('{"id": "b", "text": "fine"}\n'.encode("utf-16"))
    bom, wide = list(read_inputs([tmp_path / "bom.jsonl", tmp_path / "wide.jsonl"]))
    assert isinstance(bom, DocumentInput) and bom.uri == "a"
    assert isinstance(wide, InputFailure) and "JSONL must be UTF-8" in wide.message


def test_a_file_name_that_is_not_utf8_is_named_not_stored(tmp_path: Path) -> None:
    name = os.fsdecode(b"caf\xe9.md")  # undecodable bytes come back as surrogates
    (tmp_path / name).write_text(GOOD)
    [result] = list(read_inputs([tmp_path]))
    assert isinstance(result, InputFailure)
    assert result.origin.endswith("caf\\xe9.md") and "not valid UTF-8" in result.message
    result.origin.encode("utf-8")  # printable and storable


# -- point 6: errors a user can cause ---------------------------------------------------------------------


def test_a_dsn_that_is_not_one_is_a_config_error(cli_env: dict[str, str]) -> None:
    code, out, err = _subprocess(["stats"], dict(cli_env, SAG_DATABASE_URL="not a url"))
    assert code == 1 and not out
    assert err.startswith("Error: SAG_DATABASE_URL / --dsn is not a PostgreSQL connection string")
    with pytest.raises(ConfigError):
        raw_connect("postgresql://host/db?nonsense=1")


def test_an_empty_source_name_is_a_usage_error(cli_env: dict[str, str], capsys: pytest.CaptureFixture[str],
                                               tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text(GOOD)
    for args in (["ingest", "--source", "", str(tmp_path / "a.md")], ["stats", "--source", " "],
                 ["delete", "x", "--source", ""], ["source", ""], ["cluster", "--source", ""]):
        code, _, err = _cli(capsys, *args)
        assert code == 2, args
        assert "a source name must not be empty" in err


def test_an_unknown_source_is_named(cli_env: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _cli(capsys, "stats", "--source", "nosuch")
    assert code == 1 and not out
    assert err.startswith("Error: no source named 'nosuch'")


def test_a_fifo_is_refused_by_name_without_hanging(cli_env: dict[str, str], db_dsn: str, tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.md")
    os.mkfifo(tmp_path / "pipe.jsonl")  # counted for the progress bar too: must not be opened for reading
    (tmp_path / "good.md").write_text(GOOD)
    code, _, err = _subprocess(["ingest", str(tmp_path / "pipe.md"), str(tmp_path / "pipe.jsonl"),
                                str(tmp_path / "good.md")], cli_env, timeout=60)
    assert code == 1
    assert f"{tmp_path / 'pipe.md'}: not a regular file (a FIFO)" in err
    assert f"{tmp_path / 'pipe.jsonl'}: not a regular file (a FIFO)" in err
    assert list(_documents(db_dsn)) == ["good.md"]  # named by its path relative to the file given


def test_a_fifo_inside_a_directory_is_named_not_read(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.md")
    os.mkfifo(tmp_path / "pipe.bin")  # not a name sag-pg reads: not mentioned
    (tmp_path / "good.md").write_text(GOOD)
    good, fifo = list(read_inputs([tmp_path]))
    assert isinstance(good, DocumentInput) and good.uri == f"{tmp_path.name}/good.md"  # relative to the folder given
    assert str(fifo) == f"{tmp_path / 'pipe.md'}: not a regular file (a FIFO); skipped"
    assert count_documents([tmp_path]) == 2


@pytest.fixture
def shared_tmp() -> Iterator[Path]:
    """A directory that an unprivileged user can enter (pytest's tmp_path is private to root)."""
    path = Path(tempfile.mkdtemp(prefix="sag-bad-input-"))
    path.chmod(0o755)
    yield path
    for top, dirs, _ in os.walk(path):
        for name in dirs:
            os.chmod(os.path.join(top, name), 0o755)
    shutil.rmtree(path)


_READ_TREE = """
import json, sys
from sag_pg.ingest.readers import DocumentInput, count_documents, read_inputs
results = list(read_inputs(sys.argv[1:]))
print(json.dumps({"stored": [r.uri for r in results if isinstance(r, DocumentInput)],
                  "failed": [str(r) for r in results if not isinstance(r, DocumentInput)],
                  "counted": count_documents(sys.argv[1:])}))
"""


def test_an_unreadable_subdirectory_is_named_and_skipped(shared_tmp: Path) -> None:
    (shared_tmp / "ok").mkdir()
    (shared_tmp / "ok" / "a.md").write_text(GOOD)
    (shared_tmp / "locked").mkdir()
    (shared_tmp / "locked" / "b.md").write_text(GOOD)
    for path in (shared_tmp / "ok", shared_tmp / "ok" / "a.md", shared_tmp / "locked" / "b.md"):
        path.chmod(0o755)
    (shared_tmp / "locked").chmod(0)
    # root reads anything: read the tree without the capabilities that let it (as every other user would see
    # it).  Dropping them (util-linux setpriv) rather than switching to an unprivileged user keeps the
    # interpreter reachable when it lives under a private home such as /root (mode 700).
    as_user = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search", "--"] if os.geteuid() == 0 else []
    inside = shared_tmp / "locked" / "b.md"  # named on the command line: cannot even be looked at
    done = subprocess.run([*as_user, sys.executable, "-c", _READ_TREE, str(shared_tmp), str(inside)],
                          capture_output=True, text=True, timeout=60, cwd=Path(__file__).resolve().parent.parent,
                          check=False)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["stored"] == [f"{shared_tmp.name}/ok/a.md"]  # relative to the folder named
    assert seen["failed"] == [f"{shared_tmp / 'locked'}: cannot read directory: Permission denied; skipped",
                              f"{inside}: cannot read: Permission denied"]
    assert seen["counted"] == 3


def test_a_symlink_cycle_is_walked_once(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.md").write_text(GOOD)
    (tmp_path / "sub" / "back").symlink_to(tmp_path)
    results = list(read_inputs([tmp_path]))
    assert [r.uri for r in results if isinstance(r, DocumentInput)] == [f"{tmp_path.name}/sub/a.md"]


def test_an_empty_jsonl_and_an_empty_markdown_file_both_fail(cli_env: dict[str, str],
                                                             capsys: pytest.CaptureFixture[str],
                                                             tmp_path: Path) -> None:
    (tmp_path / "empty.jsonl").write_bytes(b"")
    (tmp_path / "blank.jsonl").write_text("\n  \n")
    (tmp_path / "empty.md").write_bytes(b"")
    for name, message in (("empty.jsonl", "empty JSONL file: no documents"),
                          ("blank.jsonl", "empty JSONL file: no documents"), ("empty.md", "empty document")):
        code, _, err = _cli(capsys, "ingest", str(tmp_path / name))
        assert code == 1, name
        assert f"failed: {tmp_path / name}: {message}" in err


# -- point 4 (input side): a per-document size limit --------------------------------------------------------


def test_documents_over_the_size_limit_are_refused_by_name(cli_env: dict[str, str], db_dsn: str,
                                                           capsys: pytest.CaptureFixture[str],
                                                           monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SAG_MAX_DOCUMENT_BYTES", "1k")
    (tmp_path / "small.md").write_text(GOOD)
    (tmp_path / "big.md").write_text(GOOD * 30)
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("\n".join(json.dumps({"id": str(i), "text": text})
                                for i, text in enumerate([GOOD, GOOD * 30, "Grace Hopper wrote COBOL."])) + "\n")
    code, _, err = _cli(capsys, "ingest", str(tmp_path / "small.md"), str(tmp_path / "big.md"), str(corpus))
    assert code == 1
    assert f"{tmp_path / 'big.md'}: 1,530 bytes, over the limit of 1,024 bytes per document" in err
    assert f"{corpus}:2: 1,553 bytes, over the limit" in err and "SAG_MAX_DOCUMENT_BYTES" in err
    assert sorted(_documents(db_dsn)) == sorted(["0", "2", "small.md"])


def test_a_long_jsonl_line_is_skipped_and_the_next_lines_read(tmp_path: Path) -> None:
    corpus = tmp_path / "c.jsonl"
    lines = [json.dumps({"id": "a", "text": "x" * 5000}), json.dumps({"id": "b", "text": "fine"}), "",
             json.dumps({"id": "c", "text": "y" * 100})]
    corpus.write_text("\n".join(lines))  # no newline after the last line
    results = list(read_inputs([corpus], max_bytes=200))
    assert [(type(r).__name__, getattr(r, "origin", "")) for r in results] == [
        ("InputFailure", f"{corpus}:1"), ("DocumentInput", f"{corpus}:2"), ("DocumentInput", f"{corpus}:4")]


def test_stdin_over_the_limit_is_refused(cli_env: dict[str, str]) -> None:
    code, _, err = _subprocess(["ingest", "-"], dict(cli_env, SAG_MAX_DOCUMENT_BYTES="100"),
                               input=GOOD.encode() * 10)
    assert code == 1
    assert "stdin: 510 bytes, over the limit of 100 bytes per document" in err


def test_the_default_limit_refuses_a_20_mb_file_without_reading_it(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SAG_MAX_DOCUMENT_BYTES", raising=False)
    big = tmp_path / "big.md"
    with big.open("wb") as handle:
        handle.truncate(20 * 1024 * 1024)  # sparse: 20 MB of size, nothing to read
    def bytes_read() -> int:  # what this process has read so far (Linux), work counted rather than timed
        return int(next(line for line in Path("/proc/self/io").read_text().splitlines()
                        if line.startswith("rchar:")).split()[1])

    before = bytes_read()
    [result] = list(read_inputs([big]))
    assert isinstance(result, InputFailure)
    assert result.message.startswith(f"20.0 MiB, over the limit of {DEFAULT_MAX_DOCUMENT_BYTES / 2**20:.1f} MiB")
    assert bytes_read() - before < 1024 * 1024


def test_a_bad_size_setting_is_a_config_error(cli_env: dict[str, str], capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text(GOOD)
    monkeypatch.setenv("SAG_MAX_DOCUMENT_BYTES", "lots")
    code, _, err = _cli(capsys, "ingest", str(tmp_path / "a.md"))
    assert code == 1 and err.startswith("Error: SAG_MAX_DOCUMENT_BYTES='lots'")
    monkeypatch.setenv("SAG_MAX_DOCUMENT_BYTES", "0")  # no limit
    assert isinstance(next(read_inputs([tmp_path / "a.md"])), DocumentInput)


def test_an_output_file_that_cannot_be_written_is_refused_before_the_work(cli_env: dict[str, str],
                                                                         capsys: pytest.CaptureFixture[str],
                                                                         tmp_path: Path) -> None:
    target = tmp_path / "no such dir" / "graph.graphml"
    code, _, err = _cli(capsys, "cluster", "--graphml", str(target))
    assert code == 1
    assert f"Error: Could not open file '{target}': cannot write into {target.parent}" in err


def test_an_unusable_sag_home_is_a_named_error(tmp_path: Path) -> None:
    """A SAG_HOME that cannot be created (here: under a regular file) is named, exit 1, no traceback."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    env = {k: v for k, v in os.environ.items() if k not in ("SAG_DATABASE_URL",)}
    env["SAG_HOME"] = str(blocker / "home")
    done = subprocess.run([sys.executable, "-m", "sag_pg", "stats"], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 1, done.stderr
    assert "cannot use" in done.stderr and "SAG_HOME" in done.stderr and "Traceback" not in done.stderr

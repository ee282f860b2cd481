"""Turn paths (files, directories, JSONL corpora, stdin) into documents, naming every bad input.

What is refused, each time as an :class:`InputFailure` naming the input, never by aborting the run:

* bytes that are not text: not UTF-8 (without a byte-order mark), NUL bytes in a file without a BOM,
  lone surrogates (from a JSON ``"\\udc80"`` escape, or from a caller's string): no surrogate ever
  leaves this module, so none reaches the database or ``content_hash``. UTF-16 and UTF-32 files with a
  byte-order mark are read as text.
* a document over the per-document size limit (``SAG_MAX_DOCUMENT_BYTES``, checked before the document
  is read into memory; a JSONL line over it is skipped without being held in memory);
* paths that are not regular files (FIFOs, sockets, devices: never opened for a blocking read, so
  never a hang; ``-`` reads stdin), unreadable files and unreadable subdirectories;
* empty documents, and JSONL files without a single document, alike.
"""

from __future__ import annotations

import codecs
import dataclasses
import json
import os
import re
import stat
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, TextIO

from ..errors import ConfigError, InputError
from ..limits import json_depth_problem, json_number_error, name_problem, one_line
from .html_text import html_to_text
from .uris import file_uri

TEXT_SUFFIXES = {".md", ".markdown", ".txt"}
HTML_SUFFIXES = {".html", ".htm"}  # read as their text (sag_pg.ingest.html_text), markup stripped
JSONL_SUFFIXES = {".jsonl"}
READ_SUFFIXES = TEXT_SUFFIXES | HTML_SUFFIXES | JSONL_SUFFIXES
_H1 = re.compile(r"^#\s+(.+?)\s*#*\s*$", re.MULTILINE)

MAX_DOCUMENT_BYTES_ENV = "SAG_MAX_DOCUMENT_BYTES"
# 4 MiB: a long novel (War and Peace: 3.2 MB) fits.  Measured offline on 2 shared cores: text dense with
# facts (an event every ~35 characters) takes ~19 s per MB to prepare and store (2 MB: 39 s, client 640 MB;
# 4 MB: 137 s, 1.26 GB; preparation ~3 s per MB of it, linear, the rest in the database), in one transaction
# that holds a server backend meanwhile.  Split a bigger document, or raise the limit knowingly.
DEFAULT_MAX_DOCUMENT_BYTES = 4 * 1024 * 1024
_SIZE_RE = re.compile(r"\s*(\d+)\s*([kmg]?)i?b?\s*", re.IGNORECASE)
_BOMS = (  # longest first: the UTF-32-LE mark starts with the UTF-16-LE one
    (codecs.BOM_UTF32_LE, "utf-32-le", "UTF-32"), (codecs.BOM_UTF32_BE, "utf-32-be", "UTF-32"),
    (codecs.BOM_UTF8, "utf-8", "UTF-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le", "UTF-16"), (codecs.BOM_UTF16_BE, "utf-16-be", "UTF-16"),
)
_READ_BLOCK = 1 << 20


@dataclass(frozen=True)
class DocumentInput:
    uri: str
    text: str
    title: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    origin: str = ""  # where it came from, for messages (path, path:line, stdin)
    # The URI was made from a file's path (sag_pg.ingest.uris): it depends on where the command ran, so
    # the same content under another such URI is the same document (the ingest skips it).
    from_path: bool = False

    def __post_init__(self) -> None:
        # Built by our readers only from checked values; a caller building one directly gets the same checks.
        problem = _unicode_problem(uri=self.uri, title=self.title, text=self.text, metadata=self.metadata)
        if problem:
            raise InputError(f"{_printable(self.origin or self.uri)}: {problem}")


@dataclass(frozen=True)
class InputFailure:
    origin: str
    message: str

    def __str__(self) -> str:
        return f"{self.origin}: {self.message}"


ReadResult = DocumentInput | InputFailure


def max_document_bytes() -> int:
    """The per-document size limit in bytes from ``SAG_MAX_DOCUMENT_BYTES`` (``0``: none).

    A number of bytes, optionally with a k, M or G suffix (powers of 1024): ``8M``, ``500k``, ``20MB``.
    """
    raw = os.environ.get(MAX_DOCUMENT_BYTES_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_DOCUMENT_BYTES
    match = _SIZE_RE.fullmatch(raw)
    if match is None:
        raise ConfigError(f"{MAX_DOCUMENT_BYTES_ENV}={raw!r}: expected a number of bytes such as 8388608, 8M or "
                          "500k (0: no limit)")
    return int(match.group(1)) * 1024 ** " kmg".index((match.group(2) or " ").lower())


def read_inputs(paths: Iterable[str | Path], *, stdin: TextIO | None = None, stdin_uri: str = "stdin",
                max_bytes: int | None = None) -> Iterator[ReadResult]:
    """Documents from files (.md .markdown .txt; .html .htm as their text), directories (recursive; files with
    other names are skipped: :func:`skipped_files` counts them), .jsonl corpora and '-' (stdin).

    ``max_bytes`` caps each document's size (default: :func:`max_document_bytes`, read here, once; a bad
    setting raises :class:`~sag_pg.errors.ConfigError` now, not in the middle of a run).
    """
    limit = max_document_bytes() if max_bytes is None else max_bytes
    return _read_inputs(list(paths), stdin, stdin_uri, limit)


def _read_inputs(paths: list[str | Path], stdin: TextIO | None, stdin_uri: str, limit: int) -> Iterator[ReadResult]:
    for raw in paths:
        if str(raw) == "-":
            yield from _read_stdin(stdin or sys.stdin, stdin_uri, limit)
            continue
        path = Path(raw)
        try:
            is_dir = stat.S_ISDIR(os.stat(path).st_mode)
        except OSError as exc:  # missing, a dangling symlink, or in a directory we may not enter
            yield InputFailure(_printable(path), "no such file or directory" if isinstance(exc, FileNotFoundError)
                               else f"cannot read: {exc.strerror or exc}")
            continue
        if is_dir:
            files, failures = _walk(path)
            if not files and not failures:
                yield InputFailure(_printable(path), f"directory holds no {_SUFFIX_LIST} files")
            for file in files:
                yield from _read_path(file, limit, named=path)
            yield from failures
        else:
            yield from _read_path(path, limit, named=path)


def _walk(root: Path, skipped: list[Path] | None = None) -> tuple[list[Path], list[InputFailure]]:
    """The text, HTML and JSONL regular files under ``root`` (sorted, symlinks followed, each directory once)
    and a failure for every directory that could not be listed and every FIFO, socket or device with such a
    name (skipped, but named).  ``skipped`` collects the other files that are not hidden (not read)."""
    failures: list[InputFailure] = []
    files: list[Path] = []
    seen: set[tuple[int, int]] = set()

    def unreadable(exc: OSError) -> None:
        failures.append(InputFailure(_printable(exc.filename or root),
                                     f"cannot read directory: {exc.strerror or exc}; skipped"))

    for top, dirnames, filenames in os.walk(root, onerror=unreadable, followlinks=True):
        try:
            info = os.stat(top)
        except OSError:
            dirnames[:] = []
            continue
        if (info.st_dev, info.st_ino) in seen:  # a symlink cycle, or a directory reached twice
            dirnames[:] = []
            continue
        seen.add((info.st_dev, info.st_ino))
        for name in filenames:
            candidate = Path(top, name)
            if candidate.suffix.lower() not in READ_SUFFIXES:
                if skipped is not None and not name.startswith(".") and not _hidden(candidate, root):
                    skipped.append(candidate)
                continue
            try:
                mode = os.stat(candidate).st_mode
            except OSError:
                continue  # a dangling symlink: nothing to read
            if stat.S_ISREG(mode):
                files.append(candidate)
            elif not stat.S_ISDIR(mode):
                failures.append(InputFailure(_printable(candidate), f"not a regular file ({_file_kind(mode)}); skipped"))
    return sorted(files), failures


_SUFFIX_LIST = ", ".join(sorted(TEXT_SUFFIXES | HTML_SUFFIXES)) + " or .jsonl"


def _hidden(path: Path, root: Path) -> bool:
    """Whether ``path`` lies in a hidden directory under ``root`` (.git, .venv, …)."""
    try:
        parts = path.relative_to(root).parts[:-1]
    except ValueError:
        return False
    return any(part.startswith(".") for part in parts)


def skipped_files(paths: Iterable[str | Path]) -> dict[str, int]:
    """The files a directory ingest of ``paths`` skips for their name, counted by suffix (most first;
    "no suffix" for names without one); hidden files and directories are not counted."""
    skipped: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if str(raw) != "-" and path.is_dir():
            _walk(path, skipped)
    counts: dict[str, int] = {}
    for file in skipped:
        suffix = file.suffix.lower() or "no suffix"
        counts[suffix] = counts.get(suffix, 0) + 1
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


def _read_path(path: Path, limit: int, *, named: Path) -> Iterator[ReadResult]:
    origin = _printable(path)
    if origin != str(path):
        yield InputFailure(origin, "the file name is not valid UTF-8; rename the file")
        return
    if path.suffix.lower() in JSONL_SUFFIXES:
        yield from read_jsonl(path, max_bytes=limit)
        return
    loaded = _load_text(path, limit)
    if isinstance(loaded, InputFailure):
        yield loaded
        return
    title = ""
    if path.suffix.lower() in HTML_SUFFIXES:
        title, loaded = html_to_text(loaded)
        if not loaded:
            yield InputFailure(origin, "HTML page without text")
            return
    doc = document_from_text(loaded, uri=file_uri(path, named), origin=origin, title=title,
                             fallback_title=path.stem, max_bytes=limit)
    yield dataclasses.replace(doc, from_path=True) if isinstance(doc, DocumentInput) else doc


def _open_regular(path: Path) -> tuple[IO[bytes], int] | InputFailure:
    """``path`` opened for binary reading with its size, if it is a regular file.

    Opened without blocking, then checked on the open descriptor: a FIFO (which would wait for a writer
    forever), a socket or a device is refused by name instead of read.
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        return InputFailure(_printable(path), f"cannot read: {exc.strerror or exc}")
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _NotRegular(_file_kind(info.st_mode))
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb"), info.st_size
    except _NotRegular as exc:
        os.close(fd)
        return InputFailure(_printable(path), f"not a regular file ({exc}); use '-' to read standard input")
    except OSError as exc:
        os.close(fd)
        return InputFailure(_printable(path), f"cannot read: {exc.strerror or exc}")


class _NotRegular(Exception):
    pass


def _file_kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a directory")):
        if test(mode):
            return name
    return "not a file"


def _load_text(path: Path, limit: int) -> str | InputFailure:
    opened = _open_regular(path)
    if isinstance(opened, InputFailure):
        return opened
    handle, size = opened
    origin = _printable(path)
    with handle:
        if limit and size > limit:
            return InputFailure(origin, _too_big(size, limit))
        try:
            data = handle.read(limit + 1) if limit else handle.read()
        except OSError as exc:
            return InputFailure(origin, f"cannot read: {exc.strerror or exc}")
    if limit and len(data) > limit:  # grew since fstat
        return InputFailure(origin, _too_big(len(data), limit, at_least=True))
    text = _decode(data)
    if isinstance(text, str) and not text.strip():
        return InputFailure(origin, "empty document")
    return InputFailure(origin, text[1]) if isinstance(text, tuple) else text


def _decode(data: bytes) -> str | tuple[None, str]:
    """The text of ``data``: UTF-8, or UTF-8/16/32 after a byte-order mark; else (None, why not)."""
    for bom, encoding, name in _BOMS:
        if data.startswith(bom):
            try:
                text = data[len(bom):].decode(encoding)
            except UnicodeDecodeError as exc:
                return None, f"not valid {name} text ({exc.reason} at byte {exc.start + len(bom)})"
            if "\x00" in text[:8192]:
                return None, "binary file (contains NUL characters), not text"
            return text
    if b"\x00" in data[:8192]:
        return None, "binary file (contains NUL bytes), not text (UTF-16 or UTF-32 text needs a byte-order mark)"
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, (f"not UTF-8 text (invalid byte 0x{data[exc.start]:02x} at offset {exc.start}); convert it "
                      "first, e.g. iconv -f latin1 -t utf-8")


def document_from_text(text: str, *, uri: str, origin: str, title: str = "", fallback_title: str = "",
                       metadata: dict[str, Any] | None = None, max_bytes: int | None = None) -> ReadResult:
    """A document, or the reason it cannot be one: empty, over the size limit, not valid Unicode."""
    origin = _printable(origin)
    limit = max_document_bytes() if max_bytes is None else max_bytes
    problem = _unicode_problem(uri=uri, title=title, text=text, metadata=metadata or {})
    if problem:
        return InputFailure(origin, problem)
    if limit and len(text) > limit // 4:  # cheap test first: a character is at most 4 bytes in UTF-8
        size = len(text.encode("utf-8"))
        if size > limit:
            return InputFailure(origin, _too_big(size, limit))
    if not text.strip():
        return InputFailure(origin, "empty document")
    if not title:
        heading = _H1.search(text)
        title = heading.group(1).strip() if heading else fallback_title
    return DocumentInput(uri=uri, text=text, title=title, metadata=metadata or {}, origin=origin)


def _unicode_problem(*, uri: str, title: str, text: str, metadata: dict[str, Any]) -> str | None:
    """Why these values cannot be stored as text (a lone surrogate, a NUL character, metadata that is not
    JSON), or None."""
    for what, value in (("text", text), ("title", title), ("id", uri)):
        if not isinstance(value, str):
            return f"{what} must be a string, not {type(value).__name__}"
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            return (f"{what} holds a lone surrogate (U+{ord(value[exc.start]):04X} at character {exc.start}): "
                    "not valid Unicode")
        if "\x00" in value:
            return f"{what} holds a NUL character (at character {value.index(chr(0))}), which PostgreSQL cannot store"
    problem = name_problem(uri)
    if problem is not None:
        return f"id {problem}: a document's URI must print on one line"
    deep = json_depth_problem(metadata)
    if deep is not None:
        return f"metadata is {deep}"
    try:
        json.dumps(metadata, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except UnicodeEncodeError:
        return "metadata holds a lone surrogate: not valid Unicode"
    except (TypeError, ValueError) as exc:
        return f"metadata is not JSON: {exc}"
    if any("\x00" in string for string in _strings(metadata)):
        return "metadata holds a NUL character, which PostgreSQL cannot store"
    return None


def _strings(value: Any) -> Iterator[str]:
    """Every string in a JSON value, object keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


def _read_stdin(stream: TextIO, uri: str, limit: int) -> Iterator[ReadResult]:
    binary = getattr(stream, "buffer", None)
    if binary is None:  # a text stream without bytes underneath (e.g. io.StringIO)
        try:
            text = stream.read(limit + 1) if limit else stream.read()
        except UnicodeDecodeError as exc:
            yield InputFailure("stdin", f"not UTF-8 text ({exc.reason} at offset {exc.start})")
            return
        yield document_from_text(text, uri=uri, origin="stdin", fallback_title=uri, max_bytes=limit)
        return
    # Bytes, decoded here: the text layer would turn invalid bytes into surrogates under some locales.
    parts: list[bytes] = []
    size = 0
    while block := binary.read(_READ_BLOCK):
        size += len(block)
        if limit and size > limit:
            while block := binary.read(_READ_BLOCK):  # drain, so the writer is not killed by SIGPIPE
                size += len(block)
            yield InputFailure("stdin", _too_big(size, limit))
            return
        parts.append(block)
    decoded = _decode(b"".join(parts))
    if isinstance(decoded, tuple):
        yield InputFailure("stdin", decoded[1])
        return
    yield document_from_text(decoded, uri=uri, origin="stdin", fallback_title=uri, max_bytes=limit)


def read_jsonl(path: Path, *, max_bytes: int | None = None) -> Iterator[ReadResult]:
    """One document per line: {"id", "title"?, "text", "metadata"?}; ``id`` becomes the uri.

    The file is UTF-8 (JSON Lines), optionally with a BOM.  A line longer than the size limit is refused
    and skipped without being held in memory; a file with no document at all is a failure too.
    """
    limit = max_document_bytes() if max_bytes is None else max_bytes
    name = _printable(path)
    opened = _open_regular(path)
    if isinstance(opened, InputFailure):
        yield opened
        return
    handle, _ = opened
    documents = 0
    with handle:
        lineno = 0
        while True:
            try:
                raw = handle.readline(limit + 1) if limit else handle.readline()
            except OSError as exc:
                yield InputFailure(name, f"cannot read: {exc.strerror or exc}")
                return
            if not raw:
                break
            lineno += 1
            origin = f"{name}:{lineno}"
            if limit and len(raw) > limit and not raw.endswith(b"\n"):
                size = len(raw)
                while rest := handle.readline(_READ_BLOCK):
                    size += len(rest)
                    if rest.endswith(b"\n"):
                        size -= 1  # the line, not its end
                        break
                documents += 1
                yield InputFailure(origin, _too_big(size, limit))
                continue
            if lineno == 1:
                if any(raw.startswith(bom) for bom, _, label in _BOMS if label != "UTF-8"):
                    yield InputFailure(name, "JSONL must be UTF-8 (this file starts with a UTF-16 or UTF-32 "
                                             "byte-order mark)")
                    return
                raw = raw.removeprefix(codecs.BOM_UTF8)
            if not raw.strip():
                continue
            documents += 1
            try:
                line = raw.decode("utf-8").rstrip("\r\n")  # else a cut line's error is at "line 2 column 1"
                record = json.loads(line)
            except UnicodeDecodeError as exc:
                yield InputFailure(origin, f"line is not UTF-8 text (invalid byte 0x{raw[exc.start]:02x} at "
                                           f"column {exc.start + 1})")
                continue
            except json.JSONDecodeError as exc:
                where = "the end of the line" if exc.pos >= len(line) else f"column {exc.pos + 1}"
                # json's messages may end in " at" ("Unterminated string starting at"): not "at at column 9".
                yield InputFailure(origin, f"not valid JSON ({exc.msg.removesuffix(' at')} at {where})")
                continue
            except RecursionError:
                yield InputFailure(origin, "not valid JSON (nested too deeply)")
                continue
            except ValueError as exc:  # an integer of more than sys.get_int_max_str_digits() digits (4,300)
                yield InputFailure(origin, f"not valid JSON ({json_number_error(exc)})")
                continue
            yield _record_to_document(record, origin=origin, default_uri=f"{name}:{lineno}", limit=limit)
    if not documents:
        yield InputFailure(name, "empty JSONL file: no documents")


def _record_to_document(record: Any, *, origin: str, default_uri: str, limit: int) -> ReadResult:
    if not isinstance(record, dict):
        return InputFailure(origin, f"expected a JSON object, got {type(record).__name__}")
    text = record.get("text")
    if not isinstance(text, str):
        return InputFailure(origin, 'missing "text" (a string)' if text is None else '"text" must be a string')
    raw_id = record.get("id", default_uri)
    if isinstance(raw_id, bool) or not isinstance(raw_id, (str, int)) or str(raw_id) == "":
        return InputFailure(origin, '"id" must be a non-empty string or number')
    title = record.get("title") or ""
    if not isinstance(title, str):
        return InputFailure(origin, '"title" must be a string')
    metadata = record.get("metadata") or {}
    if not isinstance(metadata, dict):
        return InputFailure(origin, '"metadata" must be an object')
    return document_from_text(text, uri=str(raw_id), origin=origin, title=title, metadata=metadata,
                              max_bytes=limit)


def _too_big(size: int, limit: int, *, at_least: bool = False) -> str:
    return (f"{'over ' if at_least else ''}{_megabytes(size)}, over the limit of {_megabytes(limit)} per document "
            f"({MAX_DOCUMENT_BYTES_ENV}); refused: split it, or raise the limit")


def _megabytes(size: int) -> str:
    return f"{size / 1024 / 1024:.1f} MiB" if size >= 100 * 1024 else f"{size:,} bytes"


def _printable(value: object) -> str:
    """``value`` as text that can be printed and stored: undecodable file-name bytes shown as escapes."""
    text = str(value)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return one_line(text)  # a newline, CR or bidi character in a name would split or disguise the message


def count_documents(paths: Iterable[str | Path]) -> int | None:
    """How many documents ``read_inputs`` will yield (files plus JSONL lines, each failure counting one);
    None with stdin.  Never opens anything but regular files."""
    total = 0
    for raw in paths:
        if str(raw) == "-":
            return None
        path = Path(raw)
        try:
            is_dir = stat.S_ISDIR(os.stat(path).st_mode)
        except OSError:
            total += 1
            continue
        if is_dir:
            files, failures = _walk(path)
            total += len(failures) + (0 if files or failures else 1)
        else:
            files = [path]
        for file in files:
            if file.suffix.lower() not in JSONL_SUFFIXES:
                total += 1
                continue
            opened = _open_regular(file)
            if isinstance(opened, InputFailure):
                total += 1
                continue
            with opened[0] as handle:
                try:
                    total += max(1, _count_lines(handle))
                except OSError:
                    total += 1
    return total


def _count_lines(handle: IO[bytes]) -> int:
    """Non-blank lines, read in bounded pieces (one huge line is never held whole)."""
    count, blank = 0, True
    while piece := handle.readline(_READ_BLOCK):
        blank = blank and not piece.strip()
        if piece.endswith(b"\n"):
            count, blank = count + (not blank), True
    return count + (not blank)

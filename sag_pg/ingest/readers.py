"""Turn paths (files, directories, JSONL corpora, stdin) into documents, naming every bad input."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

TEXT_SUFFIXES = {".md", ".markdown", ".txt"}
JSONL_SUFFIXES = {".jsonl"}
_H1 = re.compile(r"^#\s+(.+?)\s*#*\s*$", re.MULTILINE)


@dataclass(frozen=True)
class DocumentInput:
    uri: str
    text: str
    title: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    origin: str = ""  # where it came from, for messages (path, path:line, stdin)


@dataclass(frozen=True)
class InputFailure:
    origin: str
    message: str

    def __str__(self) -> str:
        return f"{self.origin}: {self.message}"


ReadResult = DocumentInput | InputFailure


def read_inputs(paths: Iterable[str | Path], *, stdin: TextIO | None = None, stdin_uri: str = "stdin") -> Iterator[ReadResult]:
    """Documents from files (.md .markdown .txt), directories (recursive), .jsonl corpora and '-' (stdin)."""
    for raw in paths:
        if str(raw) == "-":
            yield from _read_stdin(stdin or sys.stdin, stdin_uri)
            continue
        path = Path(raw)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in TEXT_SUFFIXES | JSONL_SUFFIXES)
            if not found:
                yield InputFailure(str(path), "directory holds no .md, .markdown, .txt or .jsonl files")
            for file in found:
                yield from _read_path(file)
        elif path.exists():
            yield from _read_path(path)
        else:
            yield InputFailure(str(path), "no such file or directory")


def _read_path(path: Path) -> Iterator[ReadResult]:
    if path.suffix.lower() in JSONL_SUFFIXES:
        yield from read_jsonl(path)
        return
    loaded = _load_text(path)
    if isinstance(loaded, InputFailure):
        yield loaded
        return
    yield document_from_text(loaded, uri=str(path.resolve()), origin=str(path), fallback_title=path.stem)


def _load_text(path: Path) -> str | InputFailure:
    try:
        data = path.read_bytes()
    except OSError as exc:
        return InputFailure(str(path), f"cannot read: {exc.strerror or exc}")
    if b"\x00" in data[:8192]:
        return InputFailure(str(path), "binary file (contains NUL bytes), not text")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return InputFailure(str(path), f"not UTF-8 text (invalid byte 0x{data[exc.start]:02x} at offset {exc.start})")
    if not text.strip():
        return InputFailure(str(path), "empty document")
    return text


def document_from_text(text: str, *, uri: str, origin: str, title: str = "", fallback_title: str = "",
                       metadata: dict[str, Any] | None = None) -> ReadResult:
    if not text.strip():
        return InputFailure(origin, "empty document")
    if not title:
        heading = _H1.search(text)
        title = heading.group(1).strip() if heading else fallback_title
    return DocumentInput(uri=uri, text=text, title=title, metadata=metadata or {}, origin=origin)


def _read_stdin(stream: TextIO, uri: str) -> Iterator[ReadResult]:
    try:
        text = stream.read()
    except UnicodeDecodeError as exc:
        yield InputFailure("stdin", f"not UTF-8 text ({exc.reason} at offset {exc.start})")
        return
    yield document_from_text(text, uri=uri, origin="stdin", fallback_title=uri)


def read_jsonl(path: Path) -> Iterator[ReadResult]:
    """One document per line: {"id", "title"?, "text", "metadata"?}; ``id`` becomes the uri."""
    try:
        handle = path.open("rb")
    except OSError as exc:
        yield InputFailure(str(path), f"cannot read: {exc.strerror or exc}")
        return
    with handle:
        for lineno, raw in enumerate(handle, start=1):
            origin = f"{path}:{lineno}"
            if not raw.strip():
                continue
            try:
                record = json.loads(raw.decode("utf-8"))
            except UnicodeDecodeError:
                yield InputFailure(origin, "line is not UTF-8 text")
                continue
            except json.JSONDecodeError as exc:
                yield InputFailure(origin, f"not valid JSON ({exc.msg} at column {exc.colno})")
                continue
            yield _record_to_document(record, origin=origin, default_uri=f"{path.name}:{lineno}")


def _record_to_document(record: Any, *, origin: str, default_uri: str) -> ReadResult:
    if not isinstance(record, dict):
        return InputFailure(origin, f"expected a JSON object, got {type(record).__name__}")
    text = record.get("text")
    if not isinstance(text, str):
        return InputFailure(origin, 'missing "text" (a string)' if text is None else '"text" must be a string')
    raw_id = record.get("id", default_uri)
    if not isinstance(raw_id, (str, int)) or str(raw_id) == "":
        return InputFailure(origin, '"id" must be a non-empty string or number')
    title = record.get("title") or ""
    if not isinstance(title, str):
        return InputFailure(origin, '"title" must be a string')
    metadata = record.get("metadata") or {}
    if not isinstance(metadata, dict):
        return InputFailure(origin, '"metadata" must be an object')
    return document_from_text(text, uri=str(raw_id), origin=origin, title=title, metadata=metadata)


def count_documents(paths: Iterable[str | Path]) -> int | None:
    """How many documents ``read_inputs`` will yield (files plus JSONL lines); None with stdin."""
    total = 0
    for raw in paths:
        if str(raw) == "-":
            return None
        path = Path(raw)
        if path.is_dir():
            files = [p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in TEXT_SUFFIXES | JSONL_SUFFIXES]
        else:
            files = [path]
        for file in files:
            if file.suffix.lower() in JSONL_SUFFIXES:
                try:
                    with file.open("rb") as handle:
                        total += sum(1 for line in handle if line.strip())
                except OSError:
                    total += 1
            else:
                total += 1
    return total

"""A benchmark folder: ``corpus.jsonl`` (passages) and ``queries.jsonl`` (questions with gold groups).

Layout (``/work/shared/bench/README.md``)::

    corpus.jsonl   {"id": "p00012", "title": "...", "text": "..."}
    queries.jsonl  {"id": "...", "question": "...", "answers": [...], "gold": [["p00012"], ["p00345"]]}

``gold`` is a list of groups; a group is satisfied when any one of its passage ids is retrieved.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError

__all__ = ["Dataset", "Question", "load_dataset"]


@dataclass(frozen=True)
class Question:
    qid: str
    question: str
    gold: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Dataset:
    name: str
    path: Path
    corpus: Path
    passages: int
    questions: tuple[Question, ...]


def _lines(path: Path) -> list[tuple[int, dict]]:  # type: ignore[type-arg]
    records = []
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"{path}:{lineno}: not JSON ({exc.msg})") from exc
            if not isinstance(record, dict):
                raise InputError(f"{path}:{lineno}: expected a JSON object")
            records.append((lineno, record))
    return records


def _gold(value: object, where: str) -> tuple[tuple[str, ...], ...]:
    if not isinstance(value, list):
        raise InputError(f"{where}: 'gold' must be a list of groups of passage ids")
    groups = []
    for group in value:
        ids = group if isinstance(group, list) else [group]  # a bare id is a group of one
        if not ids or not all(isinstance(i, (str, int)) for i in ids):
            raise InputError(f"{where}: every gold group must be a non-empty list of passage ids")
        groups.append(tuple(str(i) for i in ids))
    return tuple(groups)


def load_dataset(directory: str | Path, *, limit: int | None = None) -> Dataset:
    """Read a benchmark folder; ``limit`` keeps the first N questions (the whole corpus is always used).

    Questions without gold groups are dropped (their recall is undefined).  Raises InputError when a file
    is missing or malformed.
    """
    path = Path(directory)
    corpus, queries = path / "corpus.jsonl", path / "queries.jsonl"
    for required in (corpus, queries):
        if not required.is_file():
            raise InputError(f"{path}: no {required.name} (a benchmark folder holds corpus.jsonl and queries.jsonl)")
    with corpus.open(encoding="utf-8") as fh:
        passages = sum(1 for line in fh if line.strip())
    questions = []
    for lineno, record in _lines(queries):
        where = f"{queries}:{lineno}"
        text = record.get("question")
        if not isinstance(text, str) or not text.strip():
            raise InputError(f"{where}: 'question' must be a non-empty string")
        gold = _gold(record.get("gold", []), where)
        if gold:
            questions.append(Question(qid=str(record.get("id", lineno)), question=text, gold=gold))
        if limit is not None and len(questions) >= limit:
            break
    if not questions:
        raise InputError(f"{queries}: no question with gold passages")
    return Dataset(name=path.resolve().name, path=path, corpus=corpus, passages=passages, questions=tuple(questions))

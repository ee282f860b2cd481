"""The synthetic corpus (:mod:`.synth`) written out before a timed bulk load: one PostgreSQL binary COPY file
per table and batch, as a dump holds its data.

Generating the corpus (texts built word by word in Python, random embeddings) costs about as much CPU as
loading it; done while loading, it competed with the two server processes for the two cores and the
benchmark timed the generator as much as the database (18-20 k against 27-35 k events/s at 100 k events).
So :func:`write_spool` generates everything first, timed apart, and the load only streams files into
COPY.  Each file is complete (header, tuples, trailer): ``\\copy sag.events (...) from 'FILE' (format
binary)`` in psql loads one by hand, with the columns of :data:`COLUMNS`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt
import psycopg
from psycopg import sql

from .pgcopy import HEADER, TRAILER, binary_rows
from .synth import SourceSlice, Structure, SynthConfig, key_counts, key_rows, make_batch, structures

__all__ = ["COLUMNS", "SOURCE_ID", "Spool", "SpoolPart", "copy_part", "source_names", "write_spool"]

SOURCE_ID = 1  # a one-source corpus's (sources are numbered from 1)
COLUMNS = {
    "documents": ("id", "source_id", "uri", "title", "content", "content_hash"),
    "chunks": ("id", "document_id", "source_id", "ordinal", "start_line", "end_line", "token_count", "embedding",
               "title", "content", "tokens"),
    "events": ("id", "chunk_id", "document_id", "source_id", "ordinal", "embedding", "title", "content"),
    "event_keys": ("source_id", "event_id", "key_id", "count"),
    "chunk_keys": ("source_id", "chunk_id", "key_id", "count"),
    "keys": ("id", "source_id", "event_count", "embedding", "type", "name", "normalized", "value_string"),
    "time_keys": ("id", "source_id", "event_count", "value_number", "type", "name", "normalized"),
}
_KEY_BATCH = 20000
_BLOCK = 1 << 20  # bytes read from a file and written to COPY at a time


@dataclass
class SpoolPart:
    """One transaction of the load: a COPY file per table (in load order; "time_keys" go to sag.keys too),
    and what it holds."""

    files: dict[str, Path]
    source_id: int = SOURCE_ID
    events: int = 0
    chunks: int = 0
    links: int = 0


@dataclass
class Spool:
    keys: int = 0
    bytes: int = 0
    key_parts: list[SpoolPart] = field(default_factory=list)
    batches: list[SpoolPart] = field(default_factory=list)


def source_names(config: SynthConfig) -> list[tuple[int, str]]:
    """(id, name) of the corpus's sources: ``default`` alone, else ``synthetic-1`` .. ``synthetic-N``."""
    if config.sources == 1:
        return [(SOURCE_ID, "default")]
    return [(part.source_id, f"synthetic-{part.source_id}") for part in config.slices]


def _batch_payloads(config: SynthConfig, s: Structure) -> dict[str, bytes]:
    batch = make_batch(config, s)
    n_chunks = len(s.chunk_ids)
    source_id = s.source.source_id
    source = np.full(n_chunks, source_id, dtype=np.int64)
    ids = s.chunk_ids.tolist()
    # chunk_keys: the links summed per (chunk, key), as sag.store_document does.
    universe = s.source.key_start + s.source.universe + 1  # above every key id of the source
    combos, inverse = np.unique(s.event_chunk[s.link_event - s.event_ids[0]] * universe + s.link_key,
                                return_inverse=True)
    return {
        "documents": binary_rows(
            [("int8", s.chunk_ids), ("int8", source)],
            [[f"synthetic://doc/{i}" for i in ids], [f"Document {i}" for i in ids], batch.chunk_contents,
             [f"{i:x}" for i in ids]]),
        "chunks": binary_rows(
            [("int8", s.chunk_ids), ("int8", s.chunk_ids), ("int8", source), ("int4", np.zeros(n_chunks)),
             ("int4", np.ones(n_chunks)), ("int4", np.ones(n_chunks)), ("int4", batch.chunk_token_counts),
             ("halfvec", batch.chunk_embeddings)],
            [[""] * n_chunks, batch.chunk_contents, batch.chunk_tokens]),
        "events": binary_rows(
            [("int8", s.event_ids), ("int8", s.event_chunk), ("int8", s.event_chunk),
             ("int8", np.full(len(s.event_ids), source_id)), ("int4", s.event_ordinal),
             ("halfvec", batch.event_embeddings)],
            [batch.event_titles, batch.event_contents]),
        "event_keys": binary_rows([("int8", np.full(len(s.link_event), source_id)), ("int8", s.link_event),
                                   ("int8", s.link_key), ("int4", s.link_count)]),
        "chunk_keys": binary_rows([("int8", np.full(len(combos), source_id)), ("int8", combos // universe),
                                   ("int8", combos % universe),
                                   ("int4", np.bincount(inverse, weights=s.link_count))]),
    }


def _key_payloads(config: SynthConfig, ids: npt.NDArray[np.int64], counts: npt.NDArray[np.int64],
                  start: int, source: SourceSlice) -> dict[str, bytes]:
    strings, times = key_rows(config, ids, counts, start, source)
    return {
        "keys": binary_rows(
            [("int8", strings.ids), ("int8", np.full(len(strings.ids), source.source_id)),
             ("int4", strings.event_counts), ("halfvec", strings.embeddings)],
            [strings.types, strings.names, [n.lower() for n in strings.names], strings.names]),
        "time_keys": binary_rows(
            [("int8", times.ids), ("int8", np.full(len(times.ids), source.source_id)), ("int4", times.event_counts),
             ("float8", np.asarray([float(n) for n in times.names], dtype=np.float64))],
            [times.types, times.names, times.names]),
    }


def _write(directory: Path, stem: str, payloads: dict[str, bytes]) -> tuple[dict[str, Path], int]:
    files = {}
    for table, payload in payloads.items():
        path = directory / f"{stem}.{table}.copy"
        path.write_bytes(HEADER + payload + TRAILER)
        files[table] = path
    return files, sum(len(p) for p in payloads.values())


def write_spool(config: SynthConfig, directory: Path, progress: Callable[[int, int], None] = lambda done, total: None
                ) -> Spool:
    """Generate the whole corpus of ``config`` into ``directory``: key files, then one set a batch, source
    after source; the batches are then ordered round-robin over the sources (the first batch of every source,
    then the second...), so that a parallel load writes to several sources (on Citus: workers) at once."""
    spool = Spool()
    for source in config.slices:
        ids, counts = key_counts(config, source)
        spool.keys += len(ids)
        for start in range(0, len(ids), _KEY_BATCH):
            files, size = _write(directory, _stem(config, "keys", source, start),
                                 _key_payloads(config, ids[start:start + _KEY_BATCH],
                                               counts[start:start + _KEY_BATCH], start, source))
            spool.key_parts.append(SpoolPart(files, source_id=source.source_id))
            spool.bytes += size
    done = 0
    order: list[tuple[int, int]] = []
    for s in structures(config):
        files, size = _write(directory, _stem(config, "batch", s.source, s.batch), _batch_payloads(config, s))
        spool.batches.append(SpoolPart(files, source_id=s.source.source_id, events=len(s.event_ids),
                                       chunks=len(s.chunk_ids), links=len(s.link_event)))
        order.append((s.batch, s.source.index))
        spool.bytes += size
        done += len(s.event_ids)
        progress(done, config.events)
    spool.batches = [part for _, part in sorted(zip(order, spool.batches), key=lambda pair: pair[0])]
    return spool


def _stem(config: SynthConfig, kind: str, source: SourceSlice, number: int) -> str:
    """A file name's stem: ``batch000012`` in a one-source corpus, ``batch0003-000012`` for source 3."""
    width = 9 if kind == "keys" else 6
    prefix = f"{kind}{source.source_id:04d}-" if config.sources > 1 else kind
    return f"{prefix}{number:0{width}d}"


def _blocks(path: Path) -> Iterator[bytes]:
    with path.open("rb") as f:
        while block := f.read(_BLOCK):
            yield block


def copy_part(conn: psycopg.Connection, part: SpoolPart) -> None:
    """COPY every file of ``part`` into its table on ``conn`` (the caller commits)."""
    for table, path in part.files.items():
        target = "keys" if table == "time_keys" else table
        statement = sql.SQL("copy {} ({}) from stdin (format binary)").format(
            sql.Identifier("sag", target), sql.SQL(", ").join(map(sql.Identifier, COLUMNS[table])))
        with conn.cursor() as cur, cur.copy(statement) as copy:
            for block in _blocks(path):
                copy.write(block)

"""PostgreSQL binary COPY payloads built from numpy columns (fixed-width fields in one structured array,
text fields appended row by row), so a bulk load spends its time in the server, not in per-row dumpers."""

from __future__ import annotations

import struct
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["HEADER", "TRAILER", "binary_rows"]

HEADER = b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)
TRAILER = struct.pack(">h", -1)

_SCALARS = {"int8": ">i8", "int4": ">i4", "float8": ">f8"}
_VECTORS = {"vector": ">f4", "halfvec": ">f2"}
_NULL = struct.pack(">i", -1)
_LEN = struct.Struct(">i")


def binary_rows(fixed: Sequence[tuple[str, npt.ArrayLike]], texts: Sequence[Sequence[str | None]] = ()) -> bytes:
    """The tuples of a binary COPY (without HEADER / TRAILER): ``fixed`` columns first, then ``texts``.

    ``fixed``: (kind, values) with kind ``int8``, ``int4``, ``float8``, ``vector`` or ``halfvec`` (a 2-D float
    array, one row per tuple; pgvector's binary format: int16 dim, int16 0, dim big-endian float4 or float16).  No NULLs there;
    a text may be None (NULL).  Column order must match the COPY column list.
    """
    arrays = [(kind, np.asarray(values)) for kind, values in fixed]
    n = len(arrays[0][1]) if arrays else len(texts[0])
    fields: list[tuple[str, str] | tuple[str, str, tuple[int, ...]]] = [("nf", ">i2")]
    for i, (kind, values) in enumerate(arrays):
        if len(values) != n:
            raise ValueError(f"column {i} has {len(values)} rows, expected {n}")
        fields.append((f"l{i}", ">i4"))
        if kind in _VECTORS:
            fields += [(f"d{i}", ">i2"), (f"u{i}", ">i2"), (f"v{i}", _VECTORS[kind], (values.shape[1],))]
        else:
            fields.append((f"v{i}", _SCALARS[kind]))
    block = np.zeros(n, dtype=np.dtype(fields))  # type: ignore[call-overload]
    block["nf"] = len(arrays) + len(texts)
    for i, (kind, values) in enumerate(arrays):
        if kind in _VECTORS:
            dim = values.shape[1]
            block[f"l{i}"] = 4 + np.dtype(_VECTORS[kind]).itemsize * dim
            block[f"d{i}"] = dim
            block[f"v{i}"] = values
        else:
            block[f"l{i}"] = np.dtype(_SCALARS[kind]).itemsize
            block[f"v{i}"] = values
    raw = block.tobytes()
    if not texts:
        return raw
    size = block.dtype.itemsize
    stride = 1 + len(texts)
    parts: list[bytes | memoryview] = [b""] * (n * stride)
    view = memoryview(raw)  # join takes the slices without copying them first
    parts[0::stride] = [view[r:r + size] for r in range(0, n * size, size)]
    pack = _LEN.pack
    for c, column in enumerate(texts, 1):
        if len(column) != n:
            raise ValueError(f"text column {c - 1} has {len(column)} rows, expected {n}")
        parts[c::stride] = [_NULL if t is None else pack(len(b)) + b
                            for t in column for b in (t.encode() if t is not None else b"",)]
    return b"".join(parts)

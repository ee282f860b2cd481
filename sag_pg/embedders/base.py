"""The :class:`Embedder` protocol, and the row normalization every embedder shares."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

# pgvector's `vector` type holds at most 16,000 dimensions.
MAX_DIMENSION = 16000


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit vectors.

    ``name`` is the identity recorded in the database (``sag.bind_embedder``): it must change
    whenever the vectors would change (another model, dimension or hashing scheme), so that a
    database is never searched with vectors from a different space.
    """

    name: str
    dimension: int

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """An (n, dimension) float32 array whose rows have L2 norm 1, or are all zero.

        An empty ``texts`` gives shape (0, dimension); a row is zero when its text has
        nothing to embed (e.g. punctuation only), never NaN.
        """
        ...


def normalize_rows(matrix: npt.ArrayLike) -> npt.NDArray[np.float32]:
    """L2-normalize each row in float64, then round to float32; zero rows stay zero.

    Normalizing in float64 and rounding once keeps the result identical to PostgreSQL's
    ``sqrt``/division on ``double precision`` followed by the cast to ``vector`` (float4).
    """
    rows = np.asarray(matrix, dtype=np.float64)
    if rows.ndim != 2:
        raise ValueError(f"expected a 2-D array, got shape {rows.shape}")
    norms = np.sqrt(np.einsum("ij,ij->i", rows, rows))
    safe = np.where(norms > 0.0, norms, 1.0)
    return (rows / safe[:, None]).astype(np.float32)

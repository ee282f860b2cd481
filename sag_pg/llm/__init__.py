"""Language models: the :class:`LLM` protocol, token :class:`Usage`, and :func:`make_llm` from settings.

``OpenAILLM`` is imported lazily so that the offline path (no LLM) does not load ``openai``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from .base import LLM, Usage

if TYPE_CHECKING:
    from ..config import Settings
    from .openai_llm import OpenAILLM

__all__ = ["LLM", "OpenAILLM", "Usage", "make_llm"]

VALID_FORMS = (
    "'openai:MODEL' (any OpenAI-compatible endpoint; for a local server set SAG_LLM_BASE_URL, in Python "
    "Settings.llm_base_url) or empty (no LLM)"
)


def make_llm(settings: Settings) -> LLM | None:
    """The LLM that ``settings.llm`` names, or None when it is empty (offline rule extraction)."""
    spec = (settings.llm or "").strip()
    if not spec:
        return None
    kind, _, model = spec.partition(":")
    if kind.lower() != "openai" or not model.strip():
        raise ConfigError(f"unknown LLM {spec!r} (SAG_LLM or --llm); valid forms: {VALID_FORMS}")
    from .openai_llm import OpenAILLM

    return OpenAILLM(
        model.strip(),
        base_url=settings.llm_base_url,
        api_key=settings.llm_api_key,
        timeout=settings.llm_timeout,
        max_retries=settings.llm_max_retries,
        concurrency=settings.llm_concurrency,
        max_tokens=settings.llm_max_tokens,
        structured_output=settings.llm_structured_output,
    )


def __getattr__(name: str) -> Any:
    if name == "OpenAILLM":
        from .openai_llm import OpenAILLM

        return OpenAILLM
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

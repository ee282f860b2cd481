"""Settings, read once from the environment (or given explicitly), never at import time."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

import platformdirs


def default_home() -> Path:
    return Path(platformdirs.user_data_dir("sag-pg", appauthor=False))


def _flag(var: str, value: str) -> bool:
    from .errors import ConfigError

    if value.strip().lower() in ("1", "true", "on", "yes"):
        return True
    if value.strip().lower() in ("0", "false", "off", "no"):
        return False
    raise ConfigError(f"{var}={value!r} is not a boolean: use 1/true/on or 0/false/off")


@dataclass(frozen=True)
class Settings:
    """Everything configurable about a sag-pg client.

    ``database_url`` None means: use the embedded PostgreSQL under ``home``.
    ``embedder``: ``hash`` (default, offline), ``hash:DIM``, ``openai:MODEL`` or ``st:PATH``.
    ``llm``: None (offline rule extractor), or ``openai:MODEL`` for any OpenAI-compatible endpoint.
    """

    database_url: str | None = None
    home: Path = field(default_factory=default_home)
    embedder: str = "hash"
    embed_base_url: str | None = None
    embed_api_key: str | None = None
    llm: str | None = None
    llm_base_url: str | None = None
    llm_api_key: str | None = None
    llm_timeout: float = 60.0
    llm_max_retries: int = 3
    llm_concurrency: int = 4
    # Cap on the tokens of every LLM answer (``max_tokens``), so a rambling model stops; 0 sends none.
    llm_max_tokens: int = 4096
    # Where JSON requests start in sag_pg.llm.openai_llm.STRUCTURED_OUTPUTS: "json_schema" (falling back by
    # itself where a server refuses it), "json_object+schema", "json_object" or "none" (the prompt alone).
    llm_structured_output: str = "json_schema"
    # The evidence an LLM answer is given, in estimated tokens (sag_pg.answer.evidence); 0: no budget.
    evidence_tokens: int = 1500
    # Text put before queries / passages (documents, events, keys) by the embedder; None: the model's
    # known default (E5: "query: " / "passage: ", BGE: its retrieval instruction), "" for none.
    embed_query_prefix: str | None = None
    embed_passage_prefix: str | None = None
    prompts_dir: Path | None = None
    # Commit ingested documents without waiting for the WAL flush (synchronous_commit off): faster on a slow
    # disk, but a server crash may lose the last documents reported stored (about the last 0.6 s of them; a
    # lost replacement brings the old version back).  Off by default: a document reported stored survives.
    async_commit: bool = False

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: object) -> Settings:
        env = os.environ if env is None else env
        values: dict[str, object] = {}
        if env.get("SAG_DATABASE_URL"):
            values["database_url"] = env["SAG_DATABASE_URL"]
        if env.get("SAG_HOME"):
            values["home"] = Path(env["SAG_HOME"]).expanduser()
        for name in ("embedder", "embed_base_url", "embed_api_key", "llm", "llm_base_url", "llm_api_key",
                     "llm_structured_output"):
            var = "SAG_" + name.upper()
            if env.get(var):
                values[name] = env[var]
        if env.get("SAG_LLM_TIMEOUT"):
            values["llm_timeout"] = float(env["SAG_LLM_TIMEOUT"])
        if env.get("SAG_LLM_MAX_RETRIES"):
            values["llm_max_retries"] = int(env["SAG_LLM_MAX_RETRIES"])
        if env.get("SAG_LLM_CONCURRENCY"):
            values["llm_concurrency"] = int(env["SAG_LLM_CONCURRENCY"])
        if env.get("SAG_LLM_MAX_TOKENS"):
            values["llm_max_tokens"] = int(env["SAG_LLM_MAX_TOKENS"])
        if env.get("SAG_EVIDENCE_TOKENS"):
            values["evidence_tokens"] = int(env["SAG_EVIDENCE_TOKENS"])
        # Set but empty is meaningful here: no prefix at all.
        for name in ("embed_query_prefix", "embed_passage_prefix"):
            if "SAG_" + name.upper() in env:
                values[name] = env["SAG_" + name.upper()]
        if env.get("SAG_PROMPTS_DIR"):
            values["prompts_dir"] = Path(env["SAG_PROMPTS_DIR"])
        if env.get("SAG_ASYNC_COMMIT"):
            values["async_commit"] = _flag("SAG_ASYNC_COMMIT", env["SAG_ASYNC_COMMIT"])
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)  # type: ignore[arg-type]

    def with_(self, **changes: object) -> Settings:
        return replace(self, **{k: v for k, v in changes.items() if v is not None})  # type: ignore[arg-type]

"""sag-pg: SQL-Augmented Generation — attribute-driven multi-hop retrieval inside PostgreSQL.

    from sag_pg import SAG
    sag = SAG()                       # embedded PostgreSQL, offline defaults
    sag.ingest_text("...", uri="doc-1")
    result = sag.search("question")
"""

from __future__ import annotations

from .client import SAG
from .config import Settings
from .errors import (
    ConfigError,
    DatabaseError,
    EmbedderMismatchError,
    ExtractionError,
    InputError,
    LLMError,
    NotFoundError,
    QueryError,
    SagError,
    SchemaVersionError,
)

__version__ = "0.1.0"
__all__ = [
    "SAG",
    "Settings",
    "SagError",
    "ConfigError",
    "DatabaseError",
    "SchemaVersionError",
    "EmbedderMismatchError",
    "InputError",
    "ExtractionError",
    "LLMError",
    "QueryError",
    "NotFoundError",
    "__version__",
]

"""Exceptions raised by sag-pg.

Every error the library raises on purpose derives from :class:`SagError`::

    SagError
    ├── ConfigError          settings, DSNs, embedder/LLM specs that cannot work
    ├── DatabaseError        the server cannot be reached or started
    │   └── SchemaVersionError   the database schema is older/newer than the code
    ├── EmbedderMismatchError    the database was built with another embedder
    ├── InputError           a document, file or JSONL line that cannot be ingested
    ├── ExtractionError      events/keys could not be extracted from a document
    ├── LLMError             an LLM endpoint failed after retries or answered nonsense
    └── QueryError           a search request (e.g. its ``sql`` restriction) is refused

The CLI turns these into one-line messages; the library lets them propagate.
"""

from __future__ import annotations


class SagError(Exception):
    """Base class of every error raised by sag-pg on purpose."""


class ConfigError(SagError):
    """A setting cannot work as given."""


class DatabaseError(SagError):
    """The database cannot be reached, started or used."""


class SchemaVersionError(DatabaseError):
    """The database schema does not match this version of sag-pg."""


class EmbedderMismatchError(SagError):
    """The database was created with a different embedder (name or dimension)."""


class InputError(SagError):
    """An input document cannot be ingested; the message names the input."""


class ExtractionError(SagError):
    """Events or keys could not be extracted."""


class LLMError(SagError):
    """An LLM call failed after retries, or its answer could not be used."""


class QueryError(SagError):
    """A search request was refused (bad parameters or a disallowed restriction)."""

"""The exceptions openkoi-memory raises.

Every message says what went wrong and what to do about it. Bad arguments raise
``ValueError`` subclasses, so ``except ValueError`` keeps working for callers that
do not know this module.
"""

from __future__ import annotations

__all__ = [
    "OpenKoiError",
    "ConfigError",
    "DriverError",
    "SchemaError",
    "EmbedderMismatchError",
    "NotFoundError",
    "FilterError",
    "StoreClosedError",
    "StorageError",
    "BusyError",
    "InputError",
    "TooLargeError",
]


class OpenKoiError(Exception):
    """Base class of every error this library raises on purpose."""


class ConfigError(OpenKoiError, ValueError):
    """A setting in config.toml, the environment or a keyword argument is invalid."""


class DriverError(OpenKoiError):
    """SQLite cannot be used as needed (no extension loading, no FTS5, sqlite-vec missing)."""


class SchemaError(OpenKoiError):
    """The file is not an openkoi-memory database, or was made by a newer version."""


class EmbedderMismatchError(OpenKoiError):
    """The database was built with a different embedder than the one given."""


class NotFoundError(OpenKoiError, KeyError):
    """No memory (or other record) has the given id in the given namespace."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else "not found"


class FilterError(OpenKoiError, ValueError):
    """A search filter is malformed or uses an unknown operator."""


class StoreClosedError(OpenKoiError):
    """The store was used after ``close()``."""


class StorageError(OpenKoiError):
    """SQLite reported an error the library could not turn into something more specific."""


class BusyError(StorageError):
    """Another writer held the memory past the busy timeout: retry later (REST: 503 + Retry-After)."""


class InputError(OpenKoiError, ValueError):
    """An argument the library refuses: the message names it and what it accepts (REST: 422)."""


class TooLargeError(InputError):
    """An argument past a size limit (text, tags, metadata, a filter, a query; REST: 413)."""

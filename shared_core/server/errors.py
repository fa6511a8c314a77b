"""What an error raised while serving a request means for the client: one mapping for REST and MCP.

A bad request (``ValueError``, ``TypeError``, ``OpenKoiError`` refusals, and the raw
``RecursionError``/``OverflowError``/``UnicodeError`` a hostile value can still provoke) is a
client error with its message; only a store that is busy (another writer holds it past the busy
timeout, no pooled connection came free) or unavailable (closing, connection lost) is 503 with
``Retry-After``, since only then does retrying help; so is an embedding service that cannot embed. Anything else is the server's fault: 500,
logged with its trace. No message shows the server's own paths (the database file, its data
folder): they are replaced by neutral words.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..embed.base import EmbeddingServiceError
from ..errors import (
    BusyError,
    DriverError,
    EmbedderMismatchError,
    NotFoundError,
    OpenKoiError,
    SchemaError,
    StorageError,
    StoreClosedError,
    TooLargeError,
)

if TYPE_CHECKING:
    from ..store import MemoryStore

__all__ = ["Answer", "classify", "is_transient", "Scrubber", "scrubber_for"]

logger = logging.getLogger("openkoi.server")

RETRY_AFTER_SECONDS = 1
INTERNAL = "internal error; the server log has the details"
_SQLITE_BUSY, _SQLITE_LOCKED = 5, 6  # result codes (the low byte of extended ones)
_SQLITE_BUSY_MESSAGES = ("database is locked", "database table is locked", "database schema is locked")


@dataclass(frozen=True)
class Answer:
    """How to answer an error: an HTTP status, a message for the client, whether to retry, whether to log it."""

    status: int
    message: str
    retry: bool = False
    log: bool = False


class Scrubber:
    """Replaces the server's own paths in a message (``{path}`` -> ``the database``), longest first."""

    def __init__(self, replacements: Iterable[tuple[str, str]]) -> None:
        self.replacements = sorted(((p, w) for p, w in replacements if p and len(p) > 1), key=lambda r: -len(r[0]))

    def __call__(self, message: str) -> str:
        for path, word in self.replacements:
            message = message.replace(path, word)
        return message


def scrubber_for(store: MemoryStore, uploads: Path | None = None) -> Scrubber:
    """A :class:`Scrubber` for the paths of ``store`` (its file, its data folder) and of ``uploads``."""
    pairs: list[tuple[str, str]] = [(str(store.path), "the database")]
    folders: list[tuple[Path | None, str]] = [(uploads, "the upload folder")]
    if store.path != ":memory:" and "://" not in str(store.path):
        pairs.append((str(Path(store.path).resolve()), "the database"))
        folders.append((Path(store.data_dir), "the server's data folder"))
    for folder, word in folders:
        if folder is not None:
            pairs += [(str(folder), word), (str(folder.resolve()), word)]
    return Scrubber(pairs)


def is_transient(exc: BaseException) -> bool:
    """A busy or unavailable store: the same request may succeed in a moment.

    The core says so with :class:`~shared_core.errors.BusyError` (no turn to write within the busy
    timeout, no pooled connection free); otherwise the driver error underneath decides (SQLite's
    "database is locked", PostgreSQL's lock timeout, a lost connection).
    """
    if isinstance(exc, (StoreClosedError, BusyError)):
        return True
    if not isinstance(exc, StorageError):
        return False
    for cause in (exc.__cause__, exc.__context__):
        if cause is None:
            continue
        module, name = type(cause).__module__, type(cause).__name__
        if module.startswith("psycopg_pool"):
            return True
        if module.startswith("psycopg"):
            return name in ("LockNotAvailable", "OperationalError", "QueryCanceled", "ConnectionTimeout",
                            "AdminShutdown", "CannotConnectNow")
        if module.startswith(("sqlite3", "sqlean", "pysqlite", "apsw")):
            code = getattr(cause, "sqlite_errorcode", None)
            if isinstance(code, int):
                return code & 0xFF in (_SQLITE_BUSY, _SQLITE_LOCKED)
            return any(phrase in str(cause).lower() for phrase in _SQLITE_BUSY_MESSAGES)
    return False


def classify(exc: BaseException, scrub: Scrubber | None = None) -> Answer:
    """The answer to ``exc`` raised by a request's handler."""
    clean = scrub or (lambda text: text)
    if isinstance(exc, NotFoundError):
        return Answer(404, clean(str(exc)))
    if isinstance(exc, (StorageError, StoreClosedError)):
        if is_transient(exc):
            return Answer(503, f"{clean(str(exc))} (retry in a moment)", retry=True)
        return Answer(500, f"the database could not do this: {clean(str(exc))}; the server log has the details",
                      log=True)
    if isinstance(exc, EmbeddingServiceError):  # the embedding service is down or refuses the server's key
        return Answer(503, "the server's embedding service cannot embed now (the server log has the details); "
                           "retry in a moment", retry=True, log=True)
    if isinstance(exc, (SchemaError, DriverError, EmbedderMismatchError)):  # the server's setup, not the request
        return Answer(500, f"the server's database cannot be used: {clean(str(exc))}", log=True)
    if isinstance(exc, TooLargeError):
        return Answer(413, clean(str(exc)))
    if isinstance(exc, RecursionError):
        return Answer(400, "the request is nested too deeply (objects or lists inside each other, or $and/$or/$not "
                           "filters); flatten it")
    if isinstance(exc, OverflowError):
        return Answer(400, f"a number in the request is out of range ({clean(str(exc))}); send a smaller one")
    if isinstance(exc, UnicodeError):
        return Answer(400, "text must be valid Unicode (no lone surrogate escapes such as \\ud800)")
    if _is_serialization_error(exc):  # a record the server cannot show: its bug, not the request's
        return Answer(500, INTERNAL, log=True)
    if isinstance(exc, (ValueError, TypeError, OpenKoiError)):
        return Answer(400, clean(str(exc)) or type(exc).__name__)
    return Answer(500, INTERNAL, log=True)


def _is_serialization_error(exc: BaseException) -> bool:
    return type(exc).__name__ == "PydanticSerializationError" or (
        type(exc).__name__ == "ValidationError" and type(exc).__module__.startswith("pydantic"))

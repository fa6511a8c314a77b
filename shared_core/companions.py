"""Another library's tables beside a memory (LangGraph's checkpointers, say): where, and how to connect.

On an SQLite file the other library needs a second connection to the same file, opened with the
SQLite library the store uses: two SQLite builds in one process do not see each other's locks, so
two writers could both take the log's write lock and one commit would be silently lost
(sqlite.org/howtocorrupt.html, "Multiple copies of SQLite linked into the same application").
On PostgreSQL it connects to the memory's server itself and keeps its tables in the memory's schema.

``target`` is a :class:`~shared_core.store.MemoryStore`, a file path or a ``postgresql://`` URL.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from .db.postgres import PgTarget, is_postgres_url, parse_url
from .db.sqlite import connect_companion, get_driver

if TYPE_CHECKING:
    from .store import MemoryStore

__all__ = ["PgTarget", "companion_connection", "postgres_location", "sqlite_operational_error"]


def postgres_location(target: MemoryStore | str | os.PathLike[str]) -> PgTarget | None:
    """Where ``target``'s memory lives on PostgreSQL (libpq's connection string and the schema);
    None for an SQLite file or ``:memory:``."""
    if not isinstance(target, (str, os.PathLike)):
        return target.db.postgres_target()
    location = os.fspath(target)
    if is_postgres_url(location):
        return parse_url(location)
    if location == ":memory:":
        return None
    from . import opening

    db = opening.open_database(location)  # what the path opens as (an SQLite file, unless redirected)
    try:
        return db.postgres_target()
    finally:
        db.close()


def companion_connection(target: MemoryStore | str | os.PathLike[str]) -> Any:
    """A plain DB-API connection to ``target``'s SQLite file, from the SQLite library the store uses
    (the library's default transaction handling, no extensions loaded)."""
    path = os.fspath(target) if isinstance(target, (str, os.PathLike)) else target.path
    return connect_companion(path)


def sqlite_operational_error() -> type[Exception]:
    """The ``OperationalError`` class of that SQLite library (it may not be the stdlib's)."""
    return get_driver().OperationalError

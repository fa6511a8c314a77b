"""The SQL layer: the :class:`Backend` protocol, its two implementations, numbered migrations.

:class:`Database` (``db/sqlite``: an SQLite file, the default) and
:class:`~shared_core.db.postgres.PostgresDatabase` (``db/postgres``: a PostgreSQL schema, for a
memory shared by several machines) implement :class:`Backend`; :func:`open_database` picks one
from the target. The core asks a backend's :class:`Capabilities` where the two differ.
"""

from __future__ import annotations

from ..config import DatabaseConfig
from .backend import Backend, Capabilities, SizeMeasure, SqlFlavour
from .migrations import apply_migrations, latest_version
from .postgres.url import is_postgres_url
from .sqlite import Database, Driver, connect, get_driver

__all__ = [
    "Backend", "Capabilities", "Database", "Driver", "SizeMeasure", "SqlFlavour", "apply_migrations", "connect",
    "get_driver", "is_postgres_url", "latest_version", "open_database",
]


def open_database(target: str, *, read_only: bool = False, settings: DatabaseConfig | None = None) -> Backend:
    """A ``postgresql://`` URL opens :class:`PostgresDatabase`; anything else is an SQLite file (or ``:memory:``).

    ``settings``: the ``[database]`` section (pool size, page cache, checkpoints); defaults when None.
    """
    settings = settings or DatabaseConfig()
    if is_postgres_url(target):
        from .postgres import PostgresDatabase

        return PostgresDatabase(target, read_only=read_only, pool_size=settings.pool_size,
                                busy_timeout_s=settings.busy_timeout_s)
    return Database(target, read_only=read_only, cache_mb=settings.cache_mb, checkpoint_pages=settings.checkpoint_pages,
                    background_checkpoints=settings.background_checkpoints,
                    busy_timeout_ms=round(settings.busy_timeout_s * 1000))

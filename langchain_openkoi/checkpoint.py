"""LangGraph's checkpointer in the store's own database: one place holds an agent's whole memory.

``OpenKoiSaver(store)`` is LangGraph's ``SqliteSaver`` (thread state: ``checkpoints`` and
``writes`` tables beside the memory tables) on a connection opened through the store's SQLite
driver. That matters: where the stdlib ``sqlite3`` cannot load extensions the store uses the
bundled ``sqlean`` build, and two SQLite builds in one process do not see each other's locks,
so the checkpointer's commits and the store's could overwrite each other in the shared WAL
(see :mod:`shared_core.companions`). ``OpenKoiAsyncSaver`` does the same for
LangGraph's ``AsyncSqliteSaver`` (``ainvoke``/``astream``).

On a PostgreSQL memory (``MemoryStore.open("postgresql://...")``) both are LangGraph's
``PostgresSaver`` / ``AsyncPostgresSaver`` instead (``pip install langgraph-checkpoint-postgres``),
with their tables in the memory's schema.
"""

from __future__ import annotations

import os
from typing import Any

from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.sqlite import SqliteSaver

from shared_core import MemoryStore
from shared_core.companions import (
    PgTarget,
    companion_connection,
    postgres_location,
    sqlite_operational_error,
)

from ._core import core_store

__all__ = ["OpenKoiSaver", "OpenKoiAsyncSaver"]


def _location(target: Any) -> str | MemoryStore:
    """A path or URL as given; otherwise the core store behind the adapter."""
    return os.fspath(target) if isinstance(target, (str, os.PathLike)) else core_store(target)


def _path_of(target: Any) -> str:
    location = _location(target)
    return location if isinstance(location, str) else location.path


def _postgres_saver_classes() -> tuple[Any, Any]:
    try:
        from langgraph.checkpoint.postgres import PostgresSaver
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    except ImportError as exc:
        raise ImportError(
            "this memory is on PostgreSQL; its LangGraph checkpointer needs: pip install langgraph-checkpoint-postgres"
        ) from exc
    return PostgresSaver, AsyncPostgresSaver


def _postgres_options(target: PgTarget) -> dict[str, Any]:
    """psycopg connection settings for LangGraph's savers, with the memory's schema first on the path."""
    from psycopg.rows import dict_row

    return {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row,
            "options": f"-c search_path={target.schema},public"}


def _postgres_saver(target: PgTarget, serde: SerializerProtocol | None) -> Any:
    import psycopg

    saver_class, _ = _postgres_saver_classes()

    class OpenKoiPostgresSaver(saver_class):  # type: ignore[misc, valid-type]
        """LangGraph's ``PostgresSaver`` in the memory's schema (what ``OpenKoiSaver`` gives on PostgreSQL)."""

        def close(self) -> None:
            self.conn.close()

        def __enter__(self) -> Any:
            return self

        def __exit__(self, *exc: object) -> None:
            self.close()

    conn = psycopg.connect(target.conninfo, **_postgres_options(target))
    with conn.cursor() as cur:
        cur.execute(f'CREATE SCHEMA IF NOT EXISTS "{target.schema}"')
    saver = OpenKoiPostgresSaver(conn, serde=serde)
    saver.setup()
    return saver


def _tolerated(exc: Exception) -> str | None:
    """What LangGraph's setup does with its idempotent ``ALTER TABLE`` error, by message."""
    message = str(exc)
    if "duplicate column name" in message:
        return "done"
    if "readonly database" in message:
        return "readonly"
    return None


class OpenKoiSaver(SqliteSaver):
    """LangGraph's ``SqliteSaver`` on an openkoi-memory file (a store, an adapter, or a path).

    For a memory on PostgreSQL, LangGraph's ``PostgresSaver`` in the memory's schema.

    >>> from langchain_openkoi import OpenKoiStore, OpenKoiSaver  # doctest: +SKIP
    >>> store = OpenKoiStore("agent.db")                          # doctest: +SKIP
    >>> agent = create_agent(model, tools, store=store, checkpointer=OpenKoiSaver(store))  # doctest: +SKIP
    """

    def __new__(cls, store: Any, *, serde: SerializerProtocol | None = None) -> Any:
        target = postgres_location(_location(store))
        if target is not None:
            return _postgres_saver(target, serde)
        return super().__new__(cls)

    def __init__(self, store: Any, *, serde: SerializerProtocol | None = None) -> None:
        self.path = _path_of(store)
        super().__init__(companion_connection(self.path), serde=serde)

    def setup(self) -> None:
        # SqliteSaver tolerates its idempotent ALTER TABLE by catching the stdlib's
        # OperationalError; the store's driver may raise its own class for the same error.
        try:
            super().setup()
        except sqlite_operational_error() as exc:
            outcome = _tolerated(exc)
            if outcome is None:
                raise
            self._has_task_path = outcome != "readonly"
            self.is_setup = True

    def close(self) -> None:
        """Close the checkpointer's connection (the store keeps its own)."""
        self.conn.close()

    def __enter__(self) -> OpenKoiSaver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class OpenKoiAsyncSaver:
    """LangGraph's ``AsyncSqliteSaver`` on an openkoi-memory file; use it as an async context manager.

    ``async with OpenKoiAsyncSaver(store) as saver: agent = create_agent(..., checkpointer=saver)``
    """

    def __init__(self, store: Any, *, serde: SerializerProtocol | None = None) -> None:
        self.path = _path_of(store)
        self.serde = serde
        self._conn: Any = None
        self._postgres = postgres_location(_location(store))

    async def __aenter__(self) -> Any:
        if self._postgres is not None:
            import psycopg

            _, saver_class = _postgres_saver_classes()
            target = self._postgres
            self._conn = await psycopg.AsyncConnection.connect(target.conninfo, **_postgres_options(target))
            async with self._conn.cursor() as cur:
                await cur.execute(f'CREATE SCHEMA IF NOT EXISTS "{target.schema}"')
            saver = saver_class(self._conn, serde=self.serde)
            await saver.setup()
            return saver

        import aiosqlite
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        class _Saver(AsyncSqliteSaver):
            async def setup(self) -> None:
                try:
                    await super().setup()
                except sqlite_operational_error() as exc:
                    outcome = _tolerated(exc)
                    if outcome is None:
                        raise
                    self._has_task_path = outcome != "readonly"
                    self.is_setup = True

        path = self.path
        self._conn = aiosqlite.Connection(lambda: companion_connection(path), iter_chunk_size=64)
        await self._conn
        return _Saver(self._conn, serde=self.serde)

    async def __aexit__(self, *exc: object) -> None:
        if self._conn is not None:
            await self._conn.close()
            self._conn = None

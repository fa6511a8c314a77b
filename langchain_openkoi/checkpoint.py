"""LangGraph's SQLite checkpointer in the store's own file: one file holds an agent's whole memory.

``OpenKoiSaver(store)`` is LangGraph's ``SqliteSaver`` (thread state: ``checkpoints`` and
``writes`` tables beside the memory tables) on a connection opened through the store's SQLite
driver. That matters: where the stdlib ``sqlite3`` cannot load extensions the store uses the
bundled ``sqlean`` build, and two SQLite builds in one process do not see each other's locks,
so the checkpointer's commits and the store's could overwrite each other in the shared WAL
(see ``shared_core.db.driver.connect_companion``). ``OpenKoiAsyncSaver`` does the same for
LangGraph's ``AsyncSqliteSaver`` (``ainvoke``/``astream``).
"""

from __future__ import annotations

import os
from typing import Any

from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.sqlite import SqliteSaver

from shared_core.db.driver import connect_companion, get_driver

from ._core import core_store

__all__ = ["OpenKoiSaver", "OpenKoiAsyncSaver"]


def _path_of(target: Any) -> str:
    if isinstance(target, (str, os.PathLike)):
        return os.fspath(target)
    return core_store(target).path


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

    >>> from langchain_openkoi import OpenKoiStore, OpenKoiSaver  # doctest: +SKIP
    >>> store = OpenKoiStore("agent.db")                          # doctest: +SKIP
    >>> agent = create_agent(model, tools, store=store, checkpointer=OpenKoiSaver(store))  # doctest: +SKIP
    """

    def __init__(self, store: Any, *, serde: SerializerProtocol | None = None) -> None:
        self.path = _path_of(store)
        super().__init__(connect_companion(self.path), serde=serde)

    def setup(self) -> None:
        # SqliteSaver tolerates its idempotent ALTER TABLE by catching the stdlib's
        # OperationalError; the store's driver may raise its own class for the same error.
        try:
            super().setup()
        except get_driver().OperationalError as exc:
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

    async def __aenter__(self) -> Any:
        import aiosqlite
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        class _Saver(AsyncSqliteSaver):
            async def setup(self) -> None:
                try:
                    await super().setup()
                except get_driver().OperationalError as exc:
                    outcome = _tolerated(exc)
                    if outcome is None:
                        raise
                    self._has_task_path = outcome != "readonly"
                    self.is_setup = True

        path = self.path
        self._conn = aiosqlite.Connection(lambda: connect_companion(path), iter_chunk_size=64)
        await self._conn
        return _Saver(self._conn, serde=self.serde)

    async def __aexit__(self, *exc: object) -> None:
        if self._conn is not None:
            await self._conn.close()
            self._conn = None

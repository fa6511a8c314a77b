"""``transaction()`` for both backends: one outer transaction, savepoints inside it, callbacks after.

The backends differ only in how the outer transaction starts, commits and is abandoned
(SQLite: ``BEGIN IMMEDIATE`` after the writer's turn; PostgreSQL: a pooled connection and an
advisory lock); the nesting, the rollback of a failed inner block and the after-commit and
on-rollback callbacks are this one class.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from ..errors import StorageError

__all__ = ["NestedTransactions"]


class NestedTransactions:
    """Mixin; the class sets ``lock``, ``path``, ``read_only``, ``_depth = 0``, ``_after_commit = []``,
    ``_on_rollback = []`` and defines ``check_open``, ``_open_outer``, ``_commit_outer``, ``_abort``
    (roll back the outer transaction and release what ``_open_outer`` took) and ``_savepoint_execute``."""

    lock: Any
    path: Any
    read_only: bool
    _depth: int
    _after_commit: list[list[Callable[[], None]]]
    _on_rollback: list[Callable[[], None]]

    @property
    def in_transaction(self) -> bool:
        return self._depth > 0

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """A write transaction; nested calls are savepoints. Rolls back on any exception."""
        with self.lock:
            self.check_open()
            if self.read_only:
                raise StorageError(f"{self.path} was opened read-only; open it without read_only=True to write")
            if self._depth == 0:
                yield from self._outer()
            else:
                yield from self._savepoint()

    def _outer(self) -> Iterator[None]:
        self._open_outer()
        self._depth = 1
        self._after_commit = [[]]
        try:
            yield
        except BaseException:
            self._depth = 0
            self._abort()
            raise
        self._depth = 0
        try:
            self._commit_outer()
        except BaseException:
            self._abort()
            raise
        callbacks = self._after_commit[0]
        self._after_commit = []
        self._on_rollback = []
        for callback in callbacks:
            callback()

    def _savepoint(self) -> Iterator[None]:
        name = f"sp{self._depth}"
        self._savepoint_execute(f"SAVEPOINT {name}")
        self._depth += 1
        self._after_commit.append([])
        try:
            yield
        except BaseException:
            self._depth -= 1
            self._after_commit.pop()
            self._savepoint_execute(f"ROLLBACK TO SAVEPOINT {name}")
            self._savepoint_execute(f"RELEASE SAVEPOINT {name}")
            raise
        self._depth -= 1
        inner = self._after_commit.pop()
        self._after_commit[-1].extend(inner)
        self._savepoint_execute(f"RELEASE SAVEPOINT {name}")

    def _forget_callbacks(self) -> list[Callable[[], None]]:
        """For ``_abort``: drop the after-commit callbacks, return the on-rollback ones to run."""
        self._after_commit = []
        callbacks, self._on_rollback = self._on_rollback, []
        return callbacks

    # -- the backend's part --------------------------------------------------------------------

    def check_open(self) -> None:
        raise NotImplementedError

    def _open_outer(self) -> None:
        raise NotImplementedError

    def _commit_outer(self) -> None:
        raise NotImplementedError

    def _abort(self) -> None:
        raise NotImplementedError

    def _savepoint_execute(self, sql: str) -> None:
        raise NotImplementedError

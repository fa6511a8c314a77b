"""``transaction()`` for both backends: one outer transaction, savepoints inside it, callbacks after.

The backends differ only in how the outer transaction starts, commits and is abandoned
(SQLite: ``BEGIN IMMEDIATE`` after the writer's turn; PostgreSQL: a pooled connection and an
advisory lock); the nesting, the rollback of a failed inner block and the after-commit and
on-rollback callbacks are this one class.
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from typing import Any

from ..errors import BusyError, InputError, StorageError

__all__ = ["NestedTransactions", "busy_error", "released", "unstorable"]


def busy_error(name: str, detail: str = "") -> BusyError:
    """The error of a write that did not get its turn within the busy timeout (REST: 503 + Retry-After)."""
    return BusyError(
        f"{name} is being written by another process or thread, which did not finish within the busy timeout"
        f"{f' ({detail})' if detail else ''}; retry shortly (a notebook inside 'with store.transaction():' or a "
        "process stopped in a debugger holds it until it ends; long writers should commit in smaller batches)"
    )


def unstorable(exc: BaseException) -> InputError:
    """The error for a value the driver could not send (the last line of defence: the core's
    validation refuses such values first, naming the argument)."""
    if isinstance(exc, UnicodeEncodeError):
        return InputError(f"a value holds a character that cannot be stored ({exc.object[exc.start:exc.end]!r}, "
                          "a lone surrogate); decode the text properly or remove it")
    return InputError(f"a number is too large to store ({exc}); integers are kept in 64 bits")


@contextlib.contextmanager
def released(lock: Any) -> Iterator[None]:
    """Let go of ``lock`` (an ``RLock`` this thread holds, however many times) for the block, and
    take it back after: a writer waiting for its turn must not keep this store's readers waiting."""
    state = lock._release_save()
    try:
        yield
    finally:
        lock._acquire_restore(state)


class NestedTransactions(ABC):
    """Base of both databases; the subclass sets ``lock``, ``path``, ``read_only``, ``_depth = 0``,
    ``_after_commit = []`` and ``_on_rollback = []`` and implements the abstract methods below."""

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
    def transaction(self, *, wait: float | None = None) -> Iterator[None]:
        """A write transaction; nested calls are savepoints. Rolls back on any exception.

        The outer one waits for the memory's write turn at most ``wait`` seconds (default: the
        busy timeout), with the store's lock let go meanwhile so its readers go on, then raises
        :class:`~shared_core.errors.BusyError`; ``wait=0`` tries once.
        """
        with self.lock:
            self.check_open()
            if self.read_only:
                raise StorageError(f"{self.path} was opened read-only; open it without read_only=True to write")
            if self._depth == 0:
                yield from self._outer(wait)
            else:
                yield from self._savepoint()

    def _outer(self, wait: float | None) -> Iterator[None]:
        self._open_outer(wait)
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

    @abstractmethod
    def check_open(self) -> None:
        """Raise if the store is closed."""

    @abstractmethod
    def _open_outer(self, wait: float | None) -> None:
        """Begin the outer transaction (and take the memory's write lock within ``wait`` seconds,
        default the busy timeout, without holding ``self.lock`` while waiting)."""

    @abstractmethod
    def _commit_outer(self) -> None:
        """Commit the outer transaction and release what ``_open_outer`` took."""

    @abstractmethod
    def _abort(self) -> None:
        """Roll the outer transaction back, release what ``_open_outer`` took, run ``_on_rollback``."""

    @abstractmethod
    def _savepoint_execute(self, sql: str) -> None:
        """Run a SAVEPOINT / ROLLBACK TO / RELEASE statement on the transaction's connection."""

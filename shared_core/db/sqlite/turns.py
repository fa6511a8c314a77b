"""Writers of one SQLite file take turns: an OS file lock queue in front of ``BEGIN IMMEDIATE``."""

from __future__ import annotations

import contextlib
import os
import threading
import time
import weakref

from ...errors import StorageError
from ..transactions import busy_error

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: SQLite's own locking alone
    fcntl = None  # type: ignore[assignment]

__all__ = ["WriterTurns"]


# which thread of this process holds the write turn of each file, through which store object
_TURN_HOLDERS: dict[tuple[int, int], tuple[int, WriterTurns]] = {}
_TURN_HOLDERS_LOCK = threading.Lock()


class WriterTurns:
    """Writers to one file queue on an OS lock (``flock`` of ``<file>-lock``) before ``BEGIN IMMEDIATE``.

    SQLite lets a writer that finds the file locked sleep and poll (1, 2, 5, ... 100 ms), and the
    writer that just committed usually wins the next round: with several busy writers, one can
    starve for seconds. The kernel wakes ``flock`` waiters as soon as the lock is free, which
    keeps the wait near the time of the transactions ahead. It is only a queue: SQLite's own
    lock still decides, so connections that do not take it (other libraries, other SQLite
    builds) stay correct, and a killed process releases it with its file descriptors.
    ``OPENKOI_WRITER_TURNS=off`` leaves it out (for file systems whose ``flock`` misbehaves).

    A wait has a deadline: past it, :class:`~shared_core.errors.BusyError`, whatever holds the
    turn (a process stopped in a debugger, a notebook in ``with store.transaction():``). The
    threads of one store take turns on a mutex first. A thread that holds a file's turn through
    one store object and asks for it through another would wait for itself: that is an error
    at once (with or without the ``flock``).
    """

    def __init__(self, path: str | None) -> None:
        self._fd: int | None = None
        self._held: int | None = None  # the descriptor whose flock this store holds now
        self._lock_path: str | None = None
        self._mutex = threading.Lock()
        self._file: tuple[int, int] | None = None  # the database file's identity, however it was named
        _ALL_TURNS.add(self)
        if path is None:
            return
        with contextlib.suppress(OSError):
            stat = os.stat(path)
            self._file = (stat.st_dev, stat.st_ino)
        if fcntl is None or os.environ.get("OPENKOI_WRITER_TURNS", "").lower() in ("off", "0", "no"):
            return
        try:
            self._lock_path = f"{path}-lock"
            self._fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT | _CLOEXEC, 0o600)
        except OSError:  # a read-only directory, say: SQLite's locking alone
            self._fd = None
        else:  # closed with the object when nobody calls close()
            self._finalizer = weakref.finalize(self, os.close, self._fd)
            self._finalizer.atexit = False

    def acquire(self, deadline: float, name: str) -> None:
        """This store's turn to write, by ``deadline`` (``time.monotonic()``), or :class:`BusyError`."""
        me = threading.get_ident()
        if self._file is not None:
            with _TURN_HOLDERS_LOCK:
                holder = _TURN_HOLDERS.get(self._file)
            if holder is not None and holder[0] == me and holder[1] is not self:
                # this thread's own open transaction would have to end first: it never would
                raise StorageError(
                    "this thread already has a write transaction open on the same file through another "
                    "store object; commit it first (leave its transaction block), or use one MemoryStore per file"
                )
        if not self._mutex.acquire(timeout=max(0.0, deadline - time.monotonic())):
            raise busy_error(name)
        try:
            if self._fd is not None:
                self._held = self._flock(deadline, name)
        except BaseException:
            self._mutex.release()
            raise
        if self._file is not None:
            with _TURN_HOLDERS_LOCK:
                _TURN_HOLDERS[self._file] = (me, self)

    def _flock(self, deadline: float, name: str) -> int:
        """The descriptor that now holds the file's flock: ours at once when it is free, else one of
        its own that a helper thread waits on, so that giving up leaves nothing held behind."""
        assert self._fd is not None and self._lock_path is not None
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return self._fd
        except BlockingIOError:
            if deadline <= time.monotonic():  # a try that cannot wait
                raise busy_error(name) from None
        waiter = _FlockWaiter(os.open(self._lock_path, os.O_RDWR | _CLOEXEC))
        if waiter.wait(max(0.0, deadline - time.monotonic())):
            return waiter.fd
        raise busy_error(name)

    def release(self) -> None:
        if self._file is not None:
            with _TURN_HOLDERS_LOCK:
                if _TURN_HOLDERS.get(self._file, (0, None))[1] is self:
                    del _TURN_HOLDERS[self._file]
        held, self._held = self._held, None
        if held is not None:
            fcntl.flock(held, fcntl.LOCK_UN)
            if held != self._fd:
                os.close(held)
        if self._mutex.locked():
            self._mutex.release()

    def close(self) -> None:
        if self._fd is not None:
            self._finalizer()  # os.close, once
            self._fd = None


class _FlockWaiter:
    """A blocking ``flock`` on a descriptor of its own, on a helper thread, that can be abandoned."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._done = threading.Event()
        self._abandoned = False
        self._guard = threading.Lock()
        threading.Thread(target=self._run, name="openkoi-writer-turn", daemon=True).start()

    def _run(self) -> None:
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX)
        except OSError:
            os.close(self.fd)
            return
        with self._guard:
            if not self._abandoned:
                self._done.set()
                return
        fcntl.flock(self.fd, fcntl.LOCK_UN)  # the caller gave up before the turn came
        os.close(self.fd)

    def wait(self, timeout: float) -> bool:
        """True when the flock is held within ``timeout`` seconds; otherwise it is let go when it comes."""
        if self._done.wait(timeout):
            return True
        with self._guard:
            if self._done.is_set():
                return True
            self._abandoned = True
        return False


_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_ALL_TURNS: weakref.WeakSet[WriterTurns] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    """A child holds no turn, whatever its parent's threads held."""
    _TURN_HOLDERS.clear()
    for turns in list(_ALL_TURNS):
        turns._mutex = threading.Lock()
        turns._held = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)

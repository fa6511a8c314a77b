"""Checkpoints of an SQLite file's WAL from a thread of its own, so that writers seldom wait for one.

A checkpoint copies the pages committed to the write-ahead log into the database file and
syncs both. SQLite runs one inside the commit that takes the log past ``wal_autocheckpoint``
pages: at 100k memories that commit took ~100 ms, once every ~450 single adds. The
:class:`BackgroundCheckpointer` copies what has been committed every ``interval`` seconds
from its own connection (``PASSIVE``: it never waits for, or blocks, readers and writers), so
the checkpoint the writer still runs at ``wal_autocheckpoint`` (it is what lets the log
restart from its beginning; a background checkpoint alone never finds the log idle while
writes keep coming) has only the last fraction of a second left to copy: 30-65 ms instead of
~100, single adds 6-8 % faster (docs/perf-notes.md).

The thread starts once the store's connection has changed ``start_after`` rows (its
``total_changes``, triggers' rows included: about 150 single adds, or the first batch of a bulk
load, where it took 0.4-0.6 s off 100k rows), so small, short-lived stores never start one; :meth:`paused` keeps it out of operations that need the log
to themselves (``VACUUM``, a truncating checkpoint).
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import traceback
from collections.abc import Iterator
from typing import Any

__all__ = ["BackgroundCheckpointer"]

logger = logging.getLogger(__name__)


class BackgroundCheckpointer:
    """PASSIVE checkpoints of ``path`` every ``interval`` seconds while commits keep coming."""

    def __init__(self, path: str, connect: Any, *, interval: float = 0.25, start_after: int = 1000) -> None:
        self.path = path
        self.interval = interval
        self.start_after = start_after
        self._connect = connect  # () -> a DB-API connection to the file, from the store's own driver
        self._dirty = threading.Event()
        self._stopping = threading.Event()
        self._busy = threading.Lock()  # held while a checkpoint runs, or while paused
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def committed(self, total_changes: int) -> None:
        """Called after each committed transaction with the connection's ``total_changes`` (cheap: an event)."""
        if self._thread is None:
            if total_changes < self.start_after or self._stopping.is_set():
                return
            self._thread = threading.Thread(target=self._run, name="openkoi-checkpoint", daemon=True)
            self._thread.start()
        self._dirty.set()

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """No background checkpoint runs inside this block."""
        with self._busy:
            yield

    def close(self, timeout: float = 30.0) -> None:
        """Stop the thread (after the checkpoint it may be running) and close its connection.

        A thread still busy after ``timeout`` seconds is left to end on its own (a daemon thread;
        its checkpoint is only a copy, the WAL stays valid): closing a store never hangs on it,
        and the log says where it was.
        """
        self.stop()
        thread = self._thread
        if thread is None:
            return
        thread.join(timeout)
        if thread.is_alive():
            frame = sys._current_frames().get(thread.ident or -1)
            where = "".join(traceback.format_stack(frame)) if frame is not None else "(no stack)\n"
            logger.warning("the background checkpoint of %s did not stop within %.0f s; closing without waiting. "
                           "It was at:\n%s", self.path, timeout, where)

    def stop(self) -> None:
        """Tell the thread to end after the checkpoint it may be running, without waiting for it."""
        self._stopping.set()
        self._dirty.set()

    def _run(self) -> None:
        conn = None
        try:
            while True:
                self._dirty.wait()
                # let commits gather for a while; closing the store ends the wait at once
                if self._stopping.wait(self.interval):
                    return
                self._dirty.clear()
                if self._stopping.is_set():
                    # close() ran between the wait and the clear: the clear wiped the wake-up it set,
                    # so waiting for the next commit would wait for ever (and close() with us)
                    return
                with self._busy:
                    if conn is None:
                        conn = self._connect()
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()  # fetched: no statement left open
        except Exception as exc:  # the writer's own checkpoints carry on without us
            logger.warning("background checkpoints of %s stopped (%s: %s); SQLite's own continue",
                           self.path, type(exc).__name__, exc)
        finally:
            if conn is not None:
                with contextlib.suppress(Exception):
                    conn.close()

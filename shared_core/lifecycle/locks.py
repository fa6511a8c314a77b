"""Run locks that hold across processes: one row per key in ``run_locks`` (migration 22).

Seed 003's forgetting lock: key ``memory_forgetting:<namespace>``, TTL 60 000 ms, token
``<key>:<timestamp>:<random>``. Taking a lock is one ``BEGIN IMMEDIATE`` transaction, so
two processes (or threads) can never both take it. A lock is live while
``acquired_at - ttl <= now < expires_at``: a holder that crashed stops blocking others
after the TTL, and a clock that jumped far backwards does not keep a lock forever. Each lock
records its holder's host and process id (migration 44): a holder on this host that no longer
runs (a ``maintain`` killed half-way) frees its lock at once instead of after the TTL.
Holders refresh the expiry between steps and check, inside each of their write
transactions, that the lock is still theirs.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
from collections.abc import Iterator
from datetime import timedelta

from ..clock import Clock
from ..db import Backend
from .records import RunLock
from .repository import LockRepository

__all__ = ["RunLock", "RunLocks"]

_HOST = socket.gethostname().replace(":", "_")


def _holder_alive(holder: str | None) -> bool:
    """False only when ``holder`` (``host:pid``) is a process of this host that has ended."""
    host, _, pid = (holder or "").rpartition(":")
    if host != _HOST or not pid.isdigit():
        return True  # another host's (or an older version's) holder: only its TTL tells
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except OSError:  # it runs, as another user
        return True
    return True


class RunLocks:
    """Take, refresh, check and release run locks (callers hold the store lock)."""

    def __init__(self, db: Backend, clock: Clock) -> None:
        self.db = db
        self.clock = clock
        self._repo = LockRepository(db)

    def acquire(self, key: str, ttl_ms: int) -> RunLock | None:
        """The lock, or None when another live holder has it."""
        now = self.clock.now()
        ttl = timedelta(milliseconds=ttl_ms)
        token = f"{key}:{round(now.timestamp() * 1000)}:{secrets.token_hex(6)}"
        with self.db.transaction():
            held = self._repo.get(key)
            if held is not None:
                _, acquired, expires, holder = held
                if acquired - ttl <= now < expires and _holder_alive(holder):
                    return None
            self._repo.put(key, token, now, now + ttl, f"{_HOST}:{os.getpid()}")
        return RunLock(key, token, now, now + ttl)

    def holds(self, lock: RunLock) -> bool:
        """True while the lock is still this holder's (use inside the holder's write transaction)."""
        return self._repo.token(lock.key) == lock.token

    def refresh(self, lock: RunLock, ttl_ms: int) -> bool:
        """Push the expiry ``ttl_ms`` past now; False when the lock was lost (taken over after expiry)."""
        with self.db.transaction():
            return self._repo.extend(lock.key, lock.token, self.clock.now() + timedelta(milliseconds=ttl_ms))

    def release(self, lock: RunLock) -> None:
        with self.db.transaction():
            self._repo.release(lock.key, lock.token)

    @contextlib.contextmanager
    def hold(self, key: str, ttl_ms: int) -> Iterator[RunLock | None]:
        """``with locks.hold(key, ttl) as lock:`` (None when it is taken); released on exit."""
        lock = self.acquire(key, ttl_ms)
        try:
            yield lock
        finally:
            if lock is not None and not self.db.closed:
                self.release(lock)

    def current(self, key: str) -> RunLock | None:
        """The lock under ``key`` as recorded (live or not), or None."""
        held = self._repo.get(key)
        if held is None:
            return None
        token, acquired, expires, _ = held
        return RunLock(key, token, acquired, expires)

    def erase(self, key: str) -> None:
        self._repo.erase(key)

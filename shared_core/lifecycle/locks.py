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
from dataclasses import dataclass
from datetime import datetime, timedelta

from ..clock import Clock, from_iso, to_iso
from ..db import Database

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


@dataclass(frozen=True)
class RunLock:
    key: str
    token: str
    acquired_at: datetime
    expires_at: datetime


class RunLocks:
    """Take, refresh, check and release run locks (callers hold the store lock)."""

    def __init__(self, db: Database, clock: Clock) -> None:
        self.db = db
        self.clock = clock

    def acquire(self, key: str, ttl_ms: int) -> RunLock | None:
        """The lock, or None when another live holder has it."""
        now = self.clock.now()
        ttl = timedelta(milliseconds=ttl_ms)
        token = f"{key}:{round(now.timestamp() * 1000)}:{secrets.token_hex(6)}"
        with self.db.transaction():
            rows = self.db.query("SELECT acquired_at, expires_at, holder FROM run_locks WHERE key = ?", (key,))
            if rows:
                acquired, expires = from_iso(rows[0][0]), from_iso(rows[0][1])
                if acquired - ttl <= now < expires and _holder_alive(rows[0][2]):  # type: ignore[operator]
                    return None
            self.db.execute(
                "INSERT INTO run_locks (key, token, acquired_at, expires_at, holder) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT(key) DO UPDATE SET token = excluded.token, acquired_at = excluded.acquired_at, "
                "expires_at = excluded.expires_at, holder = excluded.holder",
                (key, token, to_iso(now), to_iso(now + ttl), f"{_HOST}:{os.getpid()}"),
            )
        return RunLock(key, token, now, now + ttl)

    def holds(self, lock: RunLock) -> bool:
        """True while the lock is still this holder's (use inside the holder's write transaction)."""
        return self.db.scalar("SELECT token FROM run_locks WHERE key = ?", (lock.key,)) == lock.token

    def refresh(self, lock: RunLock, ttl_ms: int) -> bool:
        """Push the expiry ``ttl_ms`` past now; False when the lock was lost (taken over after expiry)."""
        with self.db.transaction():
            cursor = self.db.execute(
                "UPDATE run_locks SET expires_at = ? WHERE key = ? AND token = ?",
                (to_iso(self.clock.now() + timedelta(milliseconds=ttl_ms)), lock.key, lock.token),
            )
            return bool(cursor.rowcount)

    def release(self, lock: RunLock) -> None:
        with self.db.transaction():
            self.db.execute("DELETE FROM run_locks WHERE key = ? AND token = ?", (lock.key, lock.token))

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
        rows = self.db.query("SELECT token, acquired_at, expires_at FROM run_locks WHERE key = ?", (key,))
        if not rows:
            return None
        return RunLock(key, rows[0][0], from_iso(rows[0][1]), from_iso(rows[0][2]))  # type: ignore[arg-type]

    def erase(self, key: str) -> None:
        self.db.execute("DELETE FROM run_locks WHERE key = ?", (key,))

"""All SQL of the lifecycle jobs: ``memory_links``, ``run_locks``, ``lifecycle_runs``, the
ranking columns size pruning reads, and the trim of the vector mirror's change log.

Callers hold the kernel's session (writes: inside its transaction); nothing here ranks or decides.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from ..clock import from_iso, to_iso
from ..db import Backend
from .records import JobRun, Link

__all__ = ["LinkRepository", "LockRepository", "RunRepository", "PruneRepository", "trim_index_log"]

_BATCH = 400


class LinkRepository:
    """``memory_links``: one row per linked pair, ``memory_id`` < ``related_id``."""

    def __init__(self, db: Backend) -> None:
        self.db = db

    def strengthen(self, pairs: Sequence[tuple[str, str, str]], *, initial: float, increment: float,
                   now: datetime) -> None:
        """Link each (first, second, namespace): a new pair starts at ``initial``, a known one gains ``increment``."""
        when = to_iso(now)
        self.db.executemany(
            "INSERT INTO memory_links (memory_id, related_id, namespace, strength, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(memory_id, related_id) DO UPDATE SET "
            "strength = memory_links.strength + ?, updated_at = excluded.updated_at",
            [(first, second, namespace, initial, when, when, increment) for first, second, namespace in pairs],
        )

    def delete(self, first: str, second: str) -> bool:
        cursor = self.db.execute("DELETE FROM memory_links WHERE memory_id = ? AND related_id = ?", (first, second))
        return bool(cursor.rowcount)

    def erase(self, namespace: str) -> int:
        return int(self.db.execute("DELETE FROM memory_links WHERE namespace = ?", (namespace,)).rowcount or 0)

    def strength(self, first: str, second: str) -> float | None:
        value = self.db.scalar("SELECT strength FROM memory_links WHERE memory_id = ? AND related_id = ?",
                               (first, second))
        return None if value is None else float(value)

    def neighbours(self, memory_id: str, min_strength: float) -> list[Link]:
        """The links of ``memory_id`` at or above ``min_strength``, strongest first."""
        rows = self.db.query(
            "SELECT memory_id, related_id, namespace, strength, created_at, updated_at FROM memory_links "
            "WHERE memory_id = ? AND strength >= ? UNION ALL "
            "SELECT related_id, memory_id, namespace, strength, created_at, updated_at FROM memory_links "
            "WHERE related_id = ? AND strength >= ? ORDER BY 4 DESC, 2",
            (memory_id, min_strength, memory_id, min_strength),
        )
        return [Link(r[0], r[1], r[2], float(r[3]), from_iso(r[4]), from_iso(r[5])) for r in rows]

    def count(self, namespace: str | None) -> int:
        if namespace is None:
            return int(self.db.scalar("SELECT count(*) FROM memory_links") or 0)
        return int(self.db.scalar("SELECT count(*) FROM memory_links WHERE namespace = ?", (namespace,)) or 0)

    def linked(self, ids: Sequence[str], min_strength: float) -> list[tuple[str, str, float]]:
        """(one of ``ids``, the memory linked to it, strength) for every link at or above ``min_strength``."""
        out: list[tuple[str, str, float]] = []
        for start in range(0, len(ids), _BATCH):
            part = list(ids[start : start + _BATCH])
            marks = ", ".join("?" for _ in part)
            rows = self.db.query(
                f"SELECT memory_id, related_id, strength FROM memory_links WHERE memory_id IN ({marks}) AND strength >= ? "
                f"UNION ALL SELECT related_id, memory_id, strength FROM memory_links "
                f"WHERE related_id IN ({marks}) AND strength >= ?",
                (*part, min_strength, *part, min_strength),
            )
            out.extend((parent, other, float(strength)) for parent, other, strength in rows)
        return out


class LockRepository:
    """``run_locks``: one row per key."""

    def __init__(self, db: Backend) -> None:
        self.db = db

    def get(self, key: str) -> tuple[str, datetime, datetime, str | None] | None:
        """(token, acquired_at, expires_at, holder) of the lock under ``key``, or None."""
        rows = self.db.query("SELECT token, acquired_at, expires_at, holder FROM run_locks WHERE key = ?", (key,))
        if not rows:
            return None
        token, acquired, expires, holder = rows[0]
        return token, _time(acquired), _time(expires), holder

    def put(self, key: str, token: str, acquired_at: datetime, expires_at: datetime, holder: str) -> None:
        self.db.execute(
            "INSERT INTO run_locks (key, token, acquired_at, expires_at, holder) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT(key) DO UPDATE SET token = excluded.token, acquired_at = excluded.acquired_at, "
            "expires_at = excluded.expires_at, holder = excluded.holder",
            (key, token, to_iso(acquired_at), to_iso(expires_at), holder),
        )

    def token(self, key: str) -> str | None:
        value = self.db.scalar("SELECT token FROM run_locks WHERE key = ?", (key,))
        return None if value is None else str(value)

    def extend(self, key: str, token: str, expires_at: datetime) -> bool:
        """Move the expiry of the lock ``key`` if ``token`` still holds it; False when it does not."""
        cursor = self.db.execute("UPDATE run_locks SET expires_at = ? WHERE key = ? AND token = ?",
                                 (to_iso(expires_at), key, token))
        return bool(cursor.rowcount)

    def release(self, key: str, token: str) -> None:
        self.db.execute("DELETE FROM run_locks WHERE key = ? AND token = ?", (key, token))

    def erase(self, key: str) -> None:
        self.db.execute("DELETE FROM run_locks WHERE key = ?", (key,))


class RunRepository:
    """``lifecycle_runs``: one row per job."""

    def __init__(self, db: Backend) -> None:
        self.db = db

    def get(self, job: str) -> JobRun | None:
        rows = self.db.query("SELECT job, last_run_at, last_status, last_report FROM lifecycle_runs WHERE job = ?",
                             (job,))
        if not rows:
            return None
        name, at, status, report = rows[0]
        return JobRun(name, _time(at), status, json.loads(report or "{}"))

    def record(self, job: str, when: datetime, status: str, report: Mapping[str, Any]) -> None:
        """Upsert the job's last run; ``last_run_at`` never moves back."""
        self.db.execute(
            "INSERT INTO lifecycle_runs (job, last_run_at, last_status, last_report) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(job) DO UPDATE SET last_run_at = max(last_run_at, excluded.last_run_at), "
            "last_status = excluded.last_status, last_report = excluded.last_report",
            (job, to_iso(when), status, json.dumps(dict(report), default=str, sort_keys=True)),
        )


class PruneRepository:
    """What size pruning reads of the memory index (it archives through the archive repository)."""

    def __init__(self, db: Backend) -> None:
        self.db = db

    def unpinned(self, kinds: Sequence[str]) -> list[tuple[int, str, float, datetime | None, datetime | None]]:
        """(rowid, id, feedback score, last hit or creation, creation) of every unpinned memory of ``kinds``,
        in every namespace."""
        rows = self.db.query(
            "SELECT chunk_rowid, id, score, coalesce(last_hit_at, created_at), created_at FROM memory_chunks "
            f"WHERE pinned = 0 AND kind IN ({', '.join('?' for _ in kinds)})", tuple(kinds))
        return [(int(rowid), memory_id, float(score or 0.0), from_iso(last), from_iso(created))
                for rowid, memory_id, score, last, created in rows]


def trim_index_log(db: Backend, keep: int) -> int:
    """Drop all but the newest ``keep`` entries of the vector mirror's change log; return how many went."""
    cursor = db.execute("DELETE FROM index_log WHERE seq <= (SELECT max(seq) FROM index_log) - ?", (keep,))
    return int(cursor.rowcount or 0)


def _time(text: str) -> datetime:
    """A timestamp of a NOT NULL column."""
    value = from_iso(text)
    assert value is not None
    return value

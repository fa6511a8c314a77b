"""A memory's access and feedback over time (``memory_activity``, migration 47): one row per memory and day.

Access tracking adds one statement per batch of accessed rows (the same batch its access-count update
writes), feedback one per call. The log is bounded: a memory has at most one row per day it was touched,
and days older than :data:`RETENTION_DAYS` are deleted by the first write of each new day. Rows go with
their memory: triggers delete them once its id is in neither the live table nor the archive.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from ..clock import Clock
from ..db import Backend

__all__ = ["ActivityDay", "ActivityRepository", "RETENTION_DAYS"]

RETENTION_DAYS = 90  # days of activity kept per memory

_UPSERT = ("ON CONFLICT(memory_id, day) DO UPDATE SET accesses = memory_activity.accesses + excluded.accesses, "
           "reinforcements = memory_activity.reinforcements + excluded.reinforcements, "
           "demotions = memory_activity.demotions + excluded.demotions, "
           "score_delta = memory_activity.score_delta + excluded.score_delta")


@dataclass(frozen=True)
class ActivityDay:
    """What happened to a memory on one day (UTC): accesses, reinforcements, demotions, net score change."""

    day: str  # YYYY-MM-DD
    accesses: int
    reinforcements: int
    demotions: int
    score_delta: float


def day_of(when: datetime) -> str:
    """The UTC day of ``when`` as YYYY-MM-DD (the store's clock gives aware UTC times)."""
    return when.date().isoformat()


class ActivityRepository:
    """SQL of ``memory_activity``; callers hold the kernel's session (writes inside a transaction)."""

    def __init__(self, db: Backend, clock: Clock) -> None:
        self.db = db
        self.clock = clock
        self._pruned_day: str | None = None  # the day whose first write deleted the expired days

    def accessed(self, rowids: Sequence[int], count: int, now: datetime) -> None:
        """``count`` more accesses on ``now``'s day for each live memory of ``rowids`` (one statement)."""
        if not rowids:
            return
        day = day_of(now)
        self._prune(day)
        marks = ", ".join("?" for _ in rowids)
        self.db.execute(
            "INSERT INTO memory_activity (memory_id, namespace, day, accesses, reinforcements, demotions, score_delta) "
            f"SELECT id, namespace, ?, ?, 0, 0, 0 FROM memory_chunks WHERE chunk_rowid IN ({marks}) {_UPSERT}",
            (day, count, *rowids))

    def feedback(self, memory_id: str, namespace: str, delta: float, now: datetime, *, reinforced: bool) -> None:
        """A reinforcement or demotion of a memory (its score changed by ``delta``) on ``now``'s day."""
        day = day_of(now)
        self._prune(day)
        self.db.execute(
            "INSERT INTO memory_activity (memory_id, namespace, day, accesses, reinforcements, demotions, score_delta) "
            f"VALUES (?, ?, ?, 0, ?, ?, ?) {_UPSERT}",
            (memory_id, namespace, day, int(reinforced), int(not reinforced), float(delta)))

    def days(self, memory_id: str, since: str | None = None) -> list[ActivityDay]:
        """The memory's days with activity, oldest first (from ``since``, a YYYY-MM-DD, when given)."""
        rows = self.db.query(
            "SELECT day, accesses, reinforcements, demotions, score_delta FROM memory_activity "
            "WHERE memory_id = ? AND day >= ? ORDER BY day", (memory_id, since or ""))
        return [ActivityDay(str(d), int(a), int(r), int(m), float(s)) for d, a, r, m, s in rows]

    def by_memory(self, namespace: str) -> dict[str, list[ActivityDay]]:
        """Every memory's days in ``namespace`` (one query, for a backup), oldest first."""
        out: dict[str, list[ActivityDay]] = {}
        for memory_id, d, a, r, m, s in self.db.query(
                "SELECT memory_id, day, accesses, reinforcements, demotions, score_delta FROM memory_activity "
                "WHERE namespace = ? ORDER BY memory_id, day", (namespace,)):
            out.setdefault(str(memory_id), []).append(ActivityDay(str(d), int(a), int(r), int(m), float(s)))
        return out

    def restore(self, memory_id: str, namespace: str, days: Sequence[ActivityDay]) -> None:
        """Add a backup's days to the memory's (days past the kept window go with the next day's prune)."""
        self.db.executemany(
            "INSERT INTO memory_activity (memory_id, namespace, day, accesses, reinforcements, demotions, score_delta) "
            f"VALUES (?, ?, ?, ?, ?, ?, ?) {_UPSERT}",
            [(memory_id, namespace, d.day, d.accesses, d.reinforcements, d.demotions, d.score_delta) for d in days])

    def rows(self, namespace: str) -> int:
        """How many activity rows ``namespace`` has (what an erase must leave at zero)."""
        return int(self.db.scalar("SELECT count(*) FROM memory_activity WHERE namespace = ?", (namespace,)) or 0)

    def _prune(self, day: str) -> None:
        """On the first write of a day: delete the days past the retention window (all memories)."""
        if day == self._pruned_day:
            return
        cutoff = day_of(datetime.fromisoformat(day) - timedelta(days=RETENTION_DAYS - 1))
        self.db.execute("DELETE FROM memory_activity WHERE day < ?", (cutoff,))
        previous, self._pruned_day = self._pruned_day, day

        def again() -> None:  # rolled back: the next write prunes
            self._pruned_day = previous

        self.db.on_rollback(again)

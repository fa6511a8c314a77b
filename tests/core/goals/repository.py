"""All SQL of the goals domain (the ``goals`` table); callers hold the kernel's session."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from shared_core.clock import from_iso, to_iso

from .records import Goal

__all__ = ["GoalRepository"]

_COLUMNS = "id, namespace, title, status, created_at, done_at"


class GoalRepository:
    def __init__(self, db: Any) -> None:
        self.db = db

    def insert(self, goal: Goal) -> None:
        self.db.execute(f"INSERT INTO goals ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)",
                        (goal.id, goal.namespace, goal.title, goal.status, to_iso(goal.created_at),
                         to_iso(goal.done_at)))

    def get(self, goal_id: str) -> Goal | None:
        rows = self.db.query(f"SELECT {_COLUMNS} FROM goals WHERE id = ?", (goal_id,))
        return _goal(rows[0]) if rows else None

    def list(self, namespace: str, status: str | None) -> list[Goal]:
        if status is None:
            rows = self.db.query(f"SELECT {_COLUMNS} FROM goals WHERE namespace = ? ORDER BY created_at, id",
                                 (namespace,))
        else:
            rows = self.db.query(f"SELECT {_COLUMNS} FROM goals WHERE namespace = ? AND status = ? "
                                 "ORDER BY created_at, id", (namespace, status))
        return [_goal(r) for r in rows]

    def finish(self, goal_id: str, done_at: str) -> None:
        self.db.execute("UPDATE goals SET status = 'done', done_at = ? WHERE id = ?", (done_at, goal_id))

    def erase(self, namespace: str) -> int:
        return int(self.db.execute("DELETE FROM goals WHERE namespace = ?", (namespace,)).rowcount or 0)


def _goal(row: Sequence[Any]) -> Goal:
    created = from_iso(row[4])
    assert created is not None
    return Goal(id=row[0], namespace=row[1], title=row[2], status=row[3], created_at=created, done_at=from_iso(row[5]))

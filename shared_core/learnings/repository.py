"""All SQL of learnings (the ``learnings`` table); callers hold the kernel's session.

A learning is live while its index entry (the ``memory_chunks`` row with the same id) exists, so
the reads join it; writes to the index go through the memory repository, never from here.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ..clock import from_iso, to_iso
from ..db import Backend
from .records import LearningCandidate, LearningType, StoredLearning

__all__ = ["LearningRepository"]

_COLUMNS = ("l.id, l.type, l.content, l.category, l.confidence, l.base_confidence, l.source_task, l.reinforced, "
            "l.created_at, l.last_used, l.expires_at, l.namespace, l.origin, c.pinned, c.chunk_rowid")
_LIVE = f"SELECT {_COLUMNS} FROM learnings l JOIN memory_chunks c ON c.id = l.id"
# rows whose index entry was deleted elsewhere (neither live nor archived)
_ORPHANS = "FROM learnings WHERE id NOT IN (SELECT id FROM memory_chunks) AND id NOT IN (SELECT id FROM memory_archive)"
_BATCH = 500


class LearningRepository:
    def __init__(self, db: Backend) -> None:
        self.db = db

    # -- reading --------------------------------------------------------------------------------

    def live(self, learning_id: str) -> StoredLearning | None:
        rows = self._live("l.id = ?", [learning_id])
        return rows[0] if rows else None

    def live_by_ids(self, ids: Sequence[str]) -> list[StoredLearning]:
        return self._live(f"l.id IN ({', '.join('?' for _ in ids)})", list(ids)) if ids else []

    def live_in(self, namespace: str, types: Sequence[LearningType] | None, category: str | None) -> list[StoredLearning]:
        """The namespace's live learnings, of ``types`` and ``category`` when given."""
        clauses: list[str] = ["l.namespace = ?"]
        params: list[Any] = [namespace]
        if types is not None:
            clauses.append(f"l.type IN ({', '.join('?' for _ in types)})")
            params.extend(t.value for t in types)
        if category is not None:
            clauses.append("l.category = ?")
            params.append(category)
        return self._live(" AND ".join(clauses), params)

    def all_live(self) -> list[StoredLearning]:
        rows = self.db.query(_LIVE)
        return [_stored(r) for r in rows]

    def live_ids_of_category(self, namespace: str, category: str, types: Sequence[str], limit: int) -> list[str]:
        """The ids of live learnings of ``types`` in ``category``, highest base confidence (then newest) first."""
        marks = ", ".join("?" for _ in types)
        return [r[0] for r in self.db.query(
            f"SELECT l.id FROM learnings l JOIN memory_chunks c ON c.id = l.id WHERE l.namespace = ? "
            f"AND l.category = ? AND l.type IN ({marks}) ORDER BY l.base_confidence DESC, l.created_at DESC "
            "LIMIT ?", (namespace, category, *types, limit))]

    def exists(self, learning_id: str) -> bool:
        """Whether a row exists (live, archived or pruned)."""
        return self.db.scalar("SELECT 1 FROM learnings WHERE id = ?", (learning_id,)) is not None

    def task_exists(self, task_id: str) -> bool:
        """Whether ``source_task`` may point at ``task_id`` (the column references ``tasks(id)``)."""
        return bool(self.db.scalar("SELECT 1 FROM tasks WHERE id = ?", (task_id,)))

    def count_orphans(self) -> int:
        return int(self.db.scalar(f"SELECT count(*) {_ORPHANS}") or 0)

    # -- writing --------------------------------------------------------------------------------

    def insert(self, learning_id: str, candidate: LearningCandidate, *, namespace: str, confidence: float,
               source_task: str | None, created_at: datetime, expires_at: datetime | None) -> None:
        self.db.execute(
            "INSERT INTO learnings (id, type, content, category, confidence, source_task, reinforced, "
            "created_at, last_used, expires_at, namespace, base_confidence, origin) "
            "VALUES (?, ?, ?, ?, ?, ?, 0, ?, NULL, ?, ?, ?, ?)",
            (learning_id, candidate.type.value, candidate.content, candidate.category, confidence, source_task,
             to_iso(created_at), to_iso(expires_at), namespace, confidence, candidate.origin),
        )

    def reinforce(self, learning_id: str, confidence: float, used_at: datetime) -> None:
        """A new base confidence, one more reinforcement, and the decay clock restarted at ``used_at``."""
        self.db.execute(
            "UPDATE learnings SET base_confidence = ?, confidence = ?, reinforced = reinforced + 1, last_used = ? "
            "WHERE id = ?", (confidence, confidence, to_iso(used_at), learning_id),
        )

    def restart(self, learning_id: str, confidence: float, used_at: datetime) -> None:
        """A new base confidence and the decay clock restarted at ``used_at`` (a restore)."""
        self.db.execute(
            "UPDATE learnings SET base_confidence = ?, confidence = ?, last_used = ? WHERE id = ?",
            (confidence, confidence, to_iso(used_at), learning_id),
        )

    def set_confidences(self, updates: Sequence[tuple[float, str]]) -> None:
        """(confidence, id) pairs: the stored confidence brought up to date (the base is unchanged)."""
        self.db.executemany("UPDATE learnings SET confidence = ? WHERE id = ?", updates)

    def delete(self, ids: Sequence[str]) -> None:
        self.db.executemany("DELETE FROM learnings WHERE id = ?", [(learning_id,) for learning_id in ids])

    def delete_orphans(self) -> None:
        self.db.execute(f"DELETE {_ORPHANS}")

    def detach_tasks(self, task_ids: Sequence[str]) -> None:
        """Learnings no longer point at these tasks as their source."""
        ids = list(task_ids)
        for start in range(0, len(ids), _BATCH):
            part = ids[start : start + _BATCH]
            self.db.execute(
                f"UPDATE learnings SET source_task = NULL WHERE source_task IN ({', '.join('?' for _ in part)})", part)

    def erase(self, namespace: str) -> None:
        self.db.execute("DELETE FROM learnings WHERE namespace = ?", (namespace,))

    def _live(self, where: str, params: list[Any]) -> list[StoredLearning]:
        return [_stored(r) for r in self.db.query(f"{_LIVE} WHERE {where}", params)]


def _stored(row: Sequence[Any]) -> StoredLearning:
    return StoredLearning(
        id=row[0], type=LearningType.parse(row[1]), content=row[2], category=row[3],
        stored_confidence=None if row[4] is None else float(row[4]),
        base_confidence=float(row[5] if row[5] is not None else row[4]), source_task=row[6],
        reinforced=int(row[7] or 0), created_at=from_iso(row[8]), last_used=from_iso(row[9]),
        expires_at=from_iso(row[10]), namespace=row[11], origin=row[12], pinned=bool(row[13]),
        chunk_rowid=int(row[14]),
    )

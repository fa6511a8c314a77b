"""All SQL of task memory (``tasks``, ``iteration_cycles``, ``findings`` and the ``task_journal``);
callers hold the kernel's session."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from ..clock import from_iso, to_iso
from ..db import Backend
from .records import Cycle, Finding, JournaledTask, JournalEntry, TaskRecord, json_default

__all__ = ["TaskRepository"]

_TASK_COLUMNS = ("t.id, t.description, t.namespace, t.category, t.session_id, t.status, t.final_score, t.iterations, "
                 "t.decision, t.total_tokens, t.total_cost_usd, t.created_at, t.completed_at, t.skills_used, t.metadata")
_NAMESPACE_TASKS = "SELECT id FROM tasks WHERE namespace = ?"
_BATCH = 500


class TaskRepository:
    def __init__(self, db: Backend) -> None:
        self.db = db

    # -- flushed tasks --------------------------------------------------------------------------

    def exists(self, task_id: str) -> bool:
        """Whether the task was flushed."""
        return bool(self.db.scalar("SELECT 1 FROM tasks WHERE id = ?", (task_id,)))

    def get(self, task_id: str) -> TaskRecord | None:
        """The flushed task with its cycles and findings."""
        records = self._load("t.id = ?", [task_id])
        return records[0] if records else None

    def in_namespace(self, namespace: str, *, category: str | None, status: str | None,
                     limit: int | None) -> list[TaskRecord]:
        """The namespace's flushed tasks (of ``category`` and ``status`` when given), newest first."""
        clauses: list[str] = ["t.namespace = ?"]
        params: list[Any] = [namespace]
        if category is not None:
            clauses.append("t.category = ?")
            params.append(category)
        if status is not None:
            clauses.append("t.status = ?")
            params.append(status)
        return self._load(" AND ".join(clauses), params, limit=limit)

    def ids_in(self, namespace: str) -> list[str]:
        return [r[0] for r in self.db.query(_NAMESPACE_TASKS, (namespace,))]

    def insert(self, record: TaskRecord, now: datetime) -> None:
        """The task's row, its cycles (undated ones dated ``now``) and its findings."""
        self.db.execute(
            "INSERT INTO tasks (id, description, category, session_id, final_score, iterations, decision, "
            "total_tokens, total_cost_usd, created_at, completed_at, namespace, status, skills_used, metadata) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (record.id, record.description, record.category, record.session_id, record.final_score,
             record.iterations, record.decision, record.total_tokens, record.total_cost_usd,
             to_iso(record.created_at), to_iso(record.completed_at), record.namespace, record.status,
             json.dumps(record.skills, ensure_ascii=False),
             json.dumps(record.metadata, ensure_ascii=False, default=json_default)),
        )
        self.db.executemany(
            "INSERT INTO iteration_cycles (id, task_id, iteration, score, decision, input_tokens, output_tokens, "
            "duration_ms, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(c.id, c.task_id, c.iteration, c.score, c.decision, c.input_tokens, c.output_tokens, c.duration_ms,
              to_iso(c.created_at or now)) for c in record.cycles],
        )
        self.db.executemany(
            "INSERT INTO findings (id, cycle_id, severity, dimension, title, description, location, fix, "
            "resolved_in) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(f.id, f.cycle_id, f.severity, f.dimension, f.title, f.description, f.location, f.fix, f.resolved_in)
             for f in record.findings],
        )

    def erase(self, namespace: str) -> None:
        """The namespace's tasks, their cycles and findings, and its journal."""
        self.db.execute(
            f"DELETE FROM findings WHERE cycle_id IN (SELECT id FROM iteration_cycles WHERE task_id IN "
            f"({_NAMESPACE_TASKS}))", (namespace,),
        )
        self.db.execute(f"DELETE FROM iteration_cycles WHERE task_id IN ({_NAMESPACE_TASKS})", (namespace,))
        self.db.execute("DELETE FROM tasks WHERE namespace = ?", (namespace,))
        self.db.execute("DELETE FROM task_journal WHERE namespace = ?", (namespace,))

    def _load(self, where: str, params: list[Any], limit: int | None = None) -> list[TaskRecord]:
        tail = f" LIMIT {int(limit)}" if limit is not None else ""
        rows = self.db.query(
            f"SELECT {_TASK_COLUMNS} FROM tasks t WHERE {where} ORDER BY t.created_at DESC, t.rowid DESC{tail}", params)
        records = [
            TaskRecord(
                id=r[0], description=r[1], namespace=r[2], category=r[3], session_id=r[4], status=r[5],
                final_score=r[6], iterations=int(r[7] or 0), decision=r[8], total_tokens=r[9],
                total_cost_usd=r[10], created_at=from_iso(r[11]), completed_at=from_iso(r[12]),
                skills=json.loads(r[13] or "[]"), metadata=json.loads(r[14] or "{}"),
            )
            for r in rows
        ]
        by_id = {r.id: r for r in records}
        ids = list(by_id)
        for start in range(0, len(ids), _BATCH):
            part = ids[start : start + _BATCH]
            marks = ", ".join("?" for _ in part)
            for row in self.db.query(
                "SELECT id, task_id, iteration, score, decision, input_tokens, output_tokens, duration_ms, "
                f"created_at FROM iteration_cycles WHERE task_id IN ({marks}) ORDER BY task_id, iteration", part
            ):
                by_id[row[1]].cycles.append(Cycle(
                    id=row[0], task_id=row[1], iteration=row[2], score=row[3], decision=row[4], input_tokens=row[5],
                    output_tokens=row[6], duration_ms=row[7], created_at=from_iso(row[8])))
            for row in self.db.query(
                "SELECT f.id, f.cycle_id, f.severity, f.dimension, f.title, f.description, f.location, f.fix, "
                "f.resolved_in, c.task_id FROM findings f JOIN iteration_cycles c ON c.id = f.cycle_id "
                f"WHERE c.task_id IN ({marks}) ORDER BY c.iteration, f.rowid", part
            ):
                by_id[row[9]].findings.append(Finding(*row[:9]))
        return records

    # -- the journal ----------------------------------------------------------------------------

    def journaled(self, task_id: str) -> bool:
        """Whether the task has entries in the journal."""
        return bool(self.db.scalar("SELECT 1 FROM task_journal WHERE task_id = ?", (task_id,)))

    def journal(self, task_id: str, namespace: str, owner: str, entry: str, at: datetime) -> None:
        """Append one step (JSON) of a task to the journal."""
        self.db.execute(
            "INSERT INTO task_journal (task_id, namespace, owner, entry, created_at) VALUES (?, ?, ?, ?, ?)",
            (task_id, namespace, owner, entry, to_iso(at)),
        )

    def journaled_tasks(self) -> list[JournaledTask]:
        """Every task in the journal, the first journaled first, with its last entry's owner and time."""
        rows = self.db.query(
            "SELECT j.task_id, (SELECT o.owner FROM task_journal o WHERE o.task_id = j.task_id "
            "ORDER BY o.seq DESC LIMIT 1), max(j.created_at) FROM task_journal j GROUP BY j.task_id ORDER BY min(j.seq)"
        )
        return [JournaledTask(task_id, owner, from_iso(last)) for task_id, owner, last in rows]

    def journal_of(self, task_id: str) -> list[JournalEntry]:
        """The task's journal entries in the order they were written."""
        rows = self.db.query(
            "SELECT namespace, entry, created_at FROM task_journal WHERE task_id = ? ORDER BY seq", (task_id,))
        return [JournalEntry(namespace, entry, from_iso(created)) for namespace, entry, created in rows]

    def drop_journal(self, task_id: str) -> None:
        self.db.execute("DELETE FROM task_journal WHERE task_id = ?", (task_id,))


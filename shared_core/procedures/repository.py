"""All SQL of procedural memory (the ``procedural_memory`` table); callers hold the kernel's session."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ..clock import from_iso, to_iso
from ..db import Backend
from .records import Procedure

__all__ = ["ProcedureRepository"]

_COLUMNS = "id, namespace, name, description, steps, triggers, usage_count, last_used, created_at, updated_at"


class ProcedureRepository:
    def __init__(self, db: Backend) -> None:
        self.db = db

    def by_name(self, namespace: str, name: str) -> Procedure | None:
        rows = self.db.query(f"SELECT {_COLUMNS} FROM procedural_memory WHERE namespace = ? AND name = ?",
                             (namespace, name))
        return _procedure(rows[0]) if rows else None

    def find(self, namespace: str, name_or_id: str) -> Procedure | None:
        """The procedure of the namespace with this id, else with this name."""
        rows = self.db.query(
            f"SELECT {_COLUMNS} FROM procedural_memory WHERE namespace = ? AND (id = ? OR name = ?) "
            "ORDER BY id = ? DESC LIMIT 1", (namespace, name_or_id, name_or_id, name_or_id),
        )
        return _procedure(rows[0]) if rows else None

    def most_used(self, namespace: str, limit: int | None) -> list[Procedure]:
        """Most used first (then most recently used, then name)."""
        tail = f" LIMIT {int(limit)}" if limit is not None else ""
        rows = self.db.query(
            f"SELECT {_COLUMNS} FROM procedural_memory WHERE namespace = ? "
            f"ORDER BY usage_count DESC, last_used DESC, name{tail}", (namespace,),
        )
        return [_procedure(r) for r in rows]

    def by_ids(self, ids: Sequence[str]) -> list[Procedure]:
        if not ids:
            return []
        rows = self.db.query(f"SELECT {_COLUMNS} FROM procedural_memory WHERE id IN ({', '.join('?' for _ in ids)})",
                             list(ids))
        return [_procedure(r) for r in rows]

    def save(self, procedure: Procedure) -> None:
        """Insert the procedure, or update the text fields of the row with its id (usage kept)."""
        self.db.execute(
            "INSERT INTO procedural_memory (id, namespace, name, description, steps, triggers, usage_count, "
            "last_used, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT(id) DO UPDATE SET description = excluded.description, steps = excluded.steps, "
            "triggers = excluded.triggers, updated_at = excluded.updated_at",
            (procedure.id, procedure.namespace, procedure.name, procedure.description,
             json.dumps(list(procedure.steps), ensure_ascii=False),
             json.dumps(list(procedure.triggers), ensure_ascii=False), procedure.usage_count,
             to_iso(procedure.last_used), to_iso(procedure.created_at), to_iso(procedure.updated_at)),
        )

    def count_use(self, procedure_id: str, used_at: datetime) -> None:
        self.db.execute("UPDATE procedural_memory SET usage_count = usage_count + 1, last_used = ? WHERE id = ?",
                        (to_iso(used_at), procedure_id))

    def delete(self, procedure_id: str) -> None:
        self.db.execute("DELETE FROM procedural_memory WHERE id = ?", (procedure_id,))

    def erase(self, namespace: str) -> None:
        self.db.execute("DELETE FROM procedural_memory WHERE namespace = ?", (namespace,))


def _procedure(row: Sequence[Any]) -> Procedure:
    return Procedure(
        id=row[0], namespace=row[1], name=row[2], description=row[3], steps=tuple(json.loads(row[4] or "[]")),
        triggers=tuple(json.loads(row[5] or "[]")), usage_count=int(row[6] or 0), last_used=from_iso(row[7]),
        created_at=from_iso(row[8]), updated_at=from_iso(row[9]),
    )

"""Procedural memory (seed 001): named procedures with ordered steps, triggers and usage counts.

A procedure is a row of ``procedural_memory`` (unique name per namespace) and a memory of
kind ``"procedure"`` with the same id, whose text is the procedure rendered (name,
description, triggers, steps) and whose tags are the triggers (tags weigh double in BM25).
:meth:`Procedures.match` finds the procedures whose triggers fit a task through the core
search and ranks them by ``relevance x (1 + 0.1 x ln(1 + uses))``, so among equally
fitting procedures the often-used come first; :meth:`Procedures.list` surfaces by usage.

>>> from shared_core import MemoryStore
>>> with MemoryStore.open(":memory:") as store:
...     p = store.procedures.add("deploy to production", ["run the tests", "build the image", "fly deploy"],
...                              triggers=["deploy", "release to production"])
...     store.procedures.match("please deploy the new release")[0].procedure.name
'deploy to production'
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from .clock import from_iso, to_iso
from .errors import NotFoundError
from .memories import DEFAULT_NAMESPACE, NewMemory, check_namespace, new_id
from .memories.service import MemoryService
from .ranking import procedure_score

if TYPE_CHECKING:
    from .kernel import Kernel

__all__ = ["Procedures", "Procedure", "ProcedureMatch"]

_COLUMNS = "id, namespace, name, description, steps, triggers, usage_count, last_used, created_at, updated_at"


@dataclass(frozen=True)
class Procedure:
    id: str
    name: str
    steps: tuple[str, ...]
    triggers: tuple[str, ...] = ()
    description: str | None = None
    usage_count: int = 0
    last_used: datetime | None = None
    namespace: str = DEFAULT_NAMESPACE
    created_at: datetime | None = None
    updated_at: datetime | None = None

    def render(self) -> str:
        """The procedure as text (what is indexed, and what a prompt can show)."""
        lines = [f"Procedure: {self.name}"]
        if self.description:
            lines.append(self.description)
        if self.triggers:
            lines.append("When: " + "; ".join(self.triggers))
        lines.extend(f"{i}. {step}" for i, step in enumerate(self.steps, 1))
        return "\n".join(lines)


@dataclass(frozen=True)
class ProcedureMatch:
    procedure: Procedure
    score: float  # relevance x usage factor
    relevance: float  # the core search's score


class Procedures:
    """``store.procedures``."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel

    def add(
        self,
        name: str,
        steps: Sequence[str],
        *,
        triggers: Sequence[str] | str = (),
        description: str | None = None,
        namespace: str = DEFAULT_NAMESPACE,
    ) -> Procedure:
        """Store a procedure; a procedure of the same name in the namespace is replaced (usage kept)."""
        name = _text(name, "name").strip()
        steps_list = _texts(steps, "steps")
        if not steps_list:
            raise ValueError("a procedure needs at least one step")
        trigger_list = _texts([triggers] if isinstance(triggers, str) else triggers, "triggers")
        description = None if description is None else _text(description, "description")
        check_namespace(namespace)
        with self.kernel.session() as db:
            existing = db.query(f"SELECT {_COLUMNS} FROM procedural_memory WHERE namespace = ? AND name = ?",
                                (namespace, name))
            now = self.kernel.clock.now()
            old = _procedure(existing[0]) if existing else None
            procedure = Procedure(
                id=old.id if old else new_id(), name=name, steps=tuple(steps_list), triggers=tuple(trigger_list),
                description=description, usage_count=old.usage_count if old else 0,
                last_used=old.last_used if old else None, namespace=namespace,
                created_at=old.created_at if old else now, updated_at=now,
            )
            (item,) = self.kernel.memories.prepare([NewMemory(
                text=procedure.render(), id=procedure.id, kind="procedure", namespace=namespace, tags=trigger_list,
                source="procedure", owner_id=procedure.id, created_at=procedure.created_at,
                metadata={"name": name, "usage_count": procedure.usage_count},
            )])
            with db.transaction():
                db.execute(
                    "INSERT INTO procedural_memory (id, namespace, name, description, steps, triggers, usage_count, "
                    "last_used, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                    "ON CONFLICT(id) DO UPDATE SET description = excluded.description, steps = excluded.steps, "
                    "triggers = excluded.triggers, updated_at = excluded.updated_at",
                    (procedure.id, namespace, name, description, json.dumps(steps_list, ensure_ascii=False),
                     json.dumps(trigger_list, ensure_ascii=False), procedure.usage_count,
                     to_iso(procedure.last_used), to_iso(procedure.created_at), to_iso(now)),
                )
                self.kernel.memories.write(item, dedup=False)
            return procedure

    def get(self, name_or_id: str, *, namespace: str = DEFAULT_NAMESPACE) -> Procedure:
        with self.kernel.session() as db:
            rows = db.query(
                f"SELECT {_COLUMNS} FROM procedural_memory WHERE namespace = ? AND (id = ? OR name = ?) "
                "ORDER BY id = ? DESC LIMIT 1", (namespace, name_or_id, name_or_id, name_or_id),
            )
        if not rows:
            raise NotFoundError(f"no procedure {name_or_id!r} in namespace {namespace!r}")
        return _procedure(rows[0])

    def list(self, *, namespace: str = DEFAULT_NAMESPACE, limit: int | None = None) -> list[Procedure]:
        """Procedures, most used first (then most recently used, then name)."""
        tail = f" LIMIT {int(limit)}" if limit is not None else ""
        with self.kernel.session() as db:
            rows = db.query(
                f"SELECT {_COLUMNS} FROM procedural_memory WHERE namespace = ? "
                f"ORDER BY usage_count DESC, last_used DESC, name{tail}", (check_namespace(namespace),),
            )
        return [_procedure(r) for r in rows]

    def match(self, task: str, *, namespace: str = DEFAULT_NAMESPACE, limit: int = 3) -> list[ProcedureMatch]:
        """Procedures whose triggers (and text) fit ``task``, best first."""
        if not isinstance(task, str) or not task.strip():
            raise ValueError("match needs a task description")
        hits = self.kernel.service(MemoryService).search(task, kind="procedure", namespace=namespace,
                                                         limit=max(limit * 3, 10), track_access=False)
        if not hits:
            return []
        weight = self.kernel.config.ranking.procedure_usage_weight
        with self.kernel.session() as db:
            ids = hits.ids
            rows = db.query(
                f"SELECT {_COLUMNS} FROM procedural_memory WHERE id IN ({', '.join('?' for _ in ids)})", ids)
        by_id = {r[0]: _procedure(r) for r in rows}
        matches = [ProcedureMatch(by_id[h.id], procedure_score(h.score, by_id[h.id].usage_count, weight), h.score)
                   for h in hits if h.id in by_id]
        matches.sort(key=lambda m: (-m.score, m.procedure.name))
        return matches[:limit]

    def record_use(self, name_or_id: str, *, namespace: str = DEFAULT_NAMESPACE) -> Procedure:
        """The procedure was followed: ``usage_count`` + 1, ``last_used`` = now."""
        procedure = self.get(name_or_id, namespace=namespace)
        now = to_iso(self.kernel.clock.now())
        with self.kernel.session(write=True) as db:
            db.execute("UPDATE procedural_memory SET usage_count = usage_count + 1, last_used = ? WHERE id = ?",
                       (now, procedure.id))
            self.kernel.memories.set_metadata_value(procedure.id, "usage_count", procedure.usage_count + 1)
        return self.get(procedure.id, namespace=namespace)

    def delete(self, name_or_id: str, *, namespace: str = DEFAULT_NAMESPACE) -> None:
        procedure = self.get(name_or_id, namespace=namespace)
        with self.kernel.session(write=True) as db:
            db.execute("DELETE FROM procedural_memory WHERE id = ?", (procedure.id,))
            self.kernel.service(MemoryService).delete(procedure.id, missing_ok=True)

    def erase(self, namespace: str) -> None:
        """Remove the namespace's rows (``erase_namespace``; its index memories go with the core's)."""
        self.kernel.backend.execute("DELETE FROM procedural_memory WHERE namespace = ?", (namespace,))


def _procedure(row: Sequence[Any]) -> Procedure:
    return Procedure(
        id=row[0], namespace=row[1], name=row[2], description=row[3], steps=tuple(json.loads(row[4] or "[]")),
        triggers=tuple(json.loads(row[5] or "[]")), usage_count=int(row[6] or 0), last_used=from_iso(row[7]),
        created_at=from_iso(row[8]), updated_at=from_iso(row[9]),
    )


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{what} must be a non-empty string, got {value!r}")
    if "\x00" in value:
        raise ValueError(f"{what} contains a NUL character")
    return value


def _texts(values: Any, what: str) -> list[str]:
    if isinstance(values, str) or not isinstance(values, Sequence):
        raise TypeError(f"{what} must be a list of strings, got {type(values).__name__}")
    return [_text(v, f"each of {what}").strip() for v in values]

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

import builtins
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..errors import NotFoundError
from ..memories import DEFAULT_NAMESPACE, NewMemory, check_namespace, new_id
from ..memories.service import MemoryService
from ..ranking import procedure_score
from .records import Procedure, ProcedureMatch
from .repository import ProcedureRepository

if TYPE_CHECKING:
    from ..kernel import Kernel

__all__ = ["Procedures"]


class Procedures:
    """``store.procedures``."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self._repo = ProcedureRepository(kernel.backend)

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
        with self.kernel.session():
            old = self._repo.by_name(namespace, name)
            now = self.kernel.clock.now()
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
            with self.kernel.session(write=True):
                self._repo.save(procedure)
                self.kernel.memories.write(item, dedup=False)
            return procedure

    def get(self, name_or_id: str, *, namespace: str = DEFAULT_NAMESPACE) -> Procedure:
        with self.kernel.session():
            procedure = self._repo.find(namespace, name_or_id)
        if procedure is None:
            raise NotFoundError(f"no procedure {name_or_id!r} in namespace {namespace!r}")
        return procedure

    def list(self, *, namespace: str = DEFAULT_NAMESPACE, limit: int | None = None) -> list[Procedure]:
        """Procedures, most used first (then most recently used, then name)."""
        with self.kernel.session():
            return self._repo.most_used(check_namespace(namespace), limit)

    def match(self, task: str, *, namespace: str = DEFAULT_NAMESPACE,
              limit: int = 3) -> builtins.list[ProcedureMatch]:
        """Procedures whose triggers (and text) fit ``task``, best first."""
        if not isinstance(task, str) or not task.strip():
            raise ValueError("match needs a task description")
        hits = self.kernel.service(MemoryService).search(task, kind="procedure", namespace=namespace,
                                                         limit=max(limit * 3, 10), track_access=False)
        if not hits:
            return []
        weight = self.kernel.config.ranking.procedure_usage_weight
        with self.kernel.session():
            by_id = {p.id: p for p in self._repo.by_ids(hits.ids)}
        matches = [ProcedureMatch(by_id[h.id], procedure_score(h.score, by_id[h.id].usage_count, weight), h.score)
                   for h in hits if h.id in by_id]
        matches.sort(key=lambda m: (-m.score, m.procedure.name))
        return matches[:limit]

    def record_use(self, name_or_id: str, *, namespace: str = DEFAULT_NAMESPACE) -> Procedure:
        """The procedure was followed: ``usage_count`` + 1, ``last_used`` = now."""
        procedure = self.get(name_or_id, namespace=namespace)
        with self.kernel.session(write=True):
            self._repo.count_use(procedure.id, self.kernel.clock.now())
            self.kernel.memories.set_metadata_value(procedure.id, "usage_count", procedure.usage_count + 1)
        return self.get(procedure.id, namespace=namespace)

    def delete(self, name_or_id: str, *, namespace: str = DEFAULT_NAMESPACE) -> None:
        procedure = self.get(name_or_id, namespace=namespace)
        with self.kernel.session(write=True):
            self._repo.delete(procedure.id)
            self.kernel.service(MemoryService).delete(procedure.id, missing_ok=True)

    def erase(self, namespace: str) -> None:
        """Remove the namespace's rows (``erase_namespace``; its index memories go with the core's)."""
        self._repo.erase(namespace)


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

"""``store.goals``: add, finish, list and search goals. The logic only: SQL is the repository's,
and the goal's searchable text goes through the memories domain (kind ``goal``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared_core.clock import to_iso
from shared_core.errors import NotFoundError
from shared_core.memories import DEFAULT_NAMESPACE, check_namespace, new_id
from shared_core.memories.service import MemoryService
from shared_core.search import SearchResults

from .records import STATUSES, Goal
from .repository import GoalRepository

if TYPE_CHECKING:
    from shared_core.kernel import Kernel

__all__ = ["Goals"]


class Goals:
    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self._repo = GoalRepository(kernel.backend)

    def add(self, title: str, *, namespace: str = DEFAULT_NAMESPACE) -> Goal:
        """A new open goal: its row and its memory (kind ``goal``) in one transaction."""
        if not isinstance(title, str) or not title.strip():
            raise ValueError("a goal needs a title")
        goal = Goal(new_id(), check_namespace(namespace), title.strip(), "open", self.kernel.clock.now())
        with self.kernel.session(write=True):
            self._repo.insert(goal)
            self.kernel.service(MemoryService).add(goal.title, id=goal.id, kind="goal", namespace=goal.namespace,
                                                   owner_id=goal.id, source="goals", dedup=False)
        return goal

    def finish(self, goal_id: str) -> Goal:
        """The goal is done (its memory stays searchable, tagged ``done``)."""
        with self.kernel.session(write=True):
            goal = self._repo.get(goal_id)
            if goal is None:
                raise NotFoundError(f"no goal {goal_id!r}")
            self._repo.finish(goal_id, to_iso(self.kernel.clock.now()))
            self.kernel.service(MemoryService).update(goal_id, tags=["done"])
            finished = self._repo.get(goal_id)
        assert finished is not None
        return finished

    def list(self, *, namespace: str = DEFAULT_NAMESPACE, status: str | None = None) -> list[Goal]:
        if status is not None and status not in STATUSES:
            raise ValueError(f"status must be one of {', '.join(STATUSES)}, got {status!r}")
        with self.kernel.session():
            return self._repo.list(check_namespace(namespace), status)

    def search(self, query: str, *, namespace: str = DEFAULT_NAMESPACE, limit: int = 5) -> SearchResults:
        return self.kernel.service(MemoryService).search(query, kind="goal", namespace=namespace, limit=limit)

    def erase(self, namespace: str) -> int:
        """``erase_namespace``: the namespace's goals (their memories go with the core's)."""
        return self._repo.erase(namespace)

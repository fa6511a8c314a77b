"""What an erase reports (see :mod:`shared_core.erasure`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["EraseReport", "PENDING_KEY"]

PENDING_KEY = "erase_pending"  # store_meta: {"stage": "vacuum" | "checkpoint", "since": iso time}


@dataclass(frozen=True)
class EraseReport:
    """What an erase deleted, and whether any byte of the namespace may remain (and why).

    ``deleted``: rows per table. ``files``: files removed. ``remaining``: one sentence per thing
    still there, with the reason and what to do; empty when everything is gone. ``notes``: what
    the backend cannot promise (PostgreSQL's own copies). ``action``: ``erase`` (also a finished
    erase) or ``verify`` (a check that deleted nothing).
    """

    namespace: str | None
    deleted: Mapping[str, int] = field(default_factory=dict)
    files: tuple[str, ...] = ()
    remaining: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    action: str = "erase"

    @property
    def complete(self) -> bool:
        """True when no row, file or byte of the namespace is left where this library can reach it."""
        return not self.remaining

    @property
    def status(self) -> str:
        """``erased`` or ``pending``."""
        return "erased" if self.complete else "pending"

    @property
    def memories(self) -> int:
        """Live memories deleted (what ``erase_namespace`` used to return)."""
        return int(self.deleted.get("memory_chunks", 0))

    def to_dict(self) -> dict[str, Any]:
        return {"namespace": self.namespace, "action": self.action, "status": self.status,
                "complete": self.complete, "memories": self.memories, "deleted": dict(self.deleted),
                "files": list(self.files), "remaining": list(self.remaining), "notes": list(self.notes)}

    def __str__(self) -> str:
        whose = f" of {self.namespace!r}" if self.namespace is not None else ""
        if self.action == "verify":
            head = f"nothing{whose} remains" if self.complete else f"{len(self.remaining)} thing(s){whose} remain"
        else:
            rows = sum(self.deleted.values())
            head = f"{self.status}{':' if whose else ''}{whose.removeprefix(' of')}"
            if self.deleted or self.files:
                head += f", {rows} row(s) in {len(self.deleted)} table(s) and {len(self.files)} file(s) deleted"
        lines = [head]
        lines += [f"  remains: {text}" for text in self.remaining]
        lines += [f"  note: {text}" for text in self.notes]
        return "\n".join(lines)

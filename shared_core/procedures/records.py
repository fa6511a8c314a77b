"""The records of procedural memory: a procedure, and a procedure matched to a task."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ..memories import DEFAULT_NAMESPACE

__all__ = ["Procedure", "ProcedureMatch"]


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

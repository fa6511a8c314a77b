"""The records of task memory (seed 000, layer 2): a task, its cycles and their findings."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .memories import DEFAULT_NAMESPACE

__all__ = ["Cycle", "Finding", "TaskRecord"]


@dataclass(frozen=True)
class Cycle:
    """One iteration of a task: its evaluation score and the decision taken after it."""

    id: str
    task_id: str
    iteration: int
    score: float | None
    decision: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    duration_ms: int | None = None
    created_at: datetime | None = None


@dataclass(frozen=True)
class Finding:
    """One evaluation finding; ``resolved_in`` is the id of the cycle that fixed it."""

    id: str
    cycle_id: str
    severity: str
    dimension: str
    title: str
    description: str | None = None
    location: str | None = None
    fix: str | None = None
    resolved_in: str | None = None


@dataclass
class TaskRecord:
    """A task with its cycles and findings (as recorded, or as read back from the database)."""

    id: str
    description: str
    namespace: str = DEFAULT_NAMESPACE
    category: str | None = None
    session_id: str | None = None
    status: str | None = None  # None while running
    final_score: float | None = None
    iterations: int = 0
    decision: str | None = None
    total_tokens: int | None = None
    total_cost_usd: float | None = None
    created_at: datetime | None = None
    completed_at: datetime | None = None
    skills: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    cycles: list[Cycle] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    @property
    def scores(self) -> list[float]:
        """The cycles' scores in iteration order (cycles without a score left out)."""
        return [c.score for c in sorted(self.cycles, key=lambda c: c.iteration) if c.score is not None]

    def findings_of(self, cycle: Cycle | str) -> list[Finding]:
        cycle_id = cycle.id if isinstance(cycle, Cycle) else cycle
        return [f for f in self.findings if f.cycle_id == cycle_id]

    def summary(self, max_findings: int = 10) -> str:
        """The task in a few lines: what it was, how it went, what the evaluations found."""
        lines = [f"Task: {self.description}"]
        if self.category:
            lines.append(f"Category: {self.category}")
        outcome = self.decision or self.status or "running"
        score = f" with score {self.final_score:.2f}" if self.final_score is not None else ""
        plural = "iteration" if self.iterations == 1 else "iterations"
        lines.append(f"Outcome: {outcome}{score} after {self.iterations} {plural} ({self.status or 'running'})")
        if self.scores:
            lines.append("Scores: " + " -> ".join(f"{s:.2f}" for s in self.scores))
        if self.skills:
            lines.append("Skills: " + ", ".join(self.skills))
        iteration_of = {c.id: c.iteration for c in self.cycles}
        shown = self.findings[:max_findings]
        for f in shown:
            fixed = f" (fixed in iteration {iteration_of.get(f.resolved_in, '?')})" if f.resolved_in else ""
            where = f" at {f.location}" if f.location else ""
            lines.append(f"- [{f.severity}] {f.dimension}: {f.title}{where}{fixed}")
        if len(self.findings) > len(shown):
            lines.append(f"- ... and {len(self.findings) - len(shown)} more findings")
        return "\n".join(lines)

"""The records of task memory (seed 000, layer 2): a task, its cycles and their findings, what
completing it did, its journal, and the checks and JSON forms of their fields."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..clock import to_iso
from ..learnings.records import ExtractionReport
from ..memories import DEFAULT_NAMESPACE

__all__ = ["Cycle", "Finding", "TaskRecord", "TaskOutcome", "JournaledTask", "JournalEntry", "TASK_STATUSES",
           "cycle_json", "json_default", "required_text", "optional_text", "task_score", "task_count"]

TASK_STATUSES = ("completed", "abandoned", "failed", "interrupted")


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
        if self.final_score is not None:
            outcome = f"{outcome} with score {self.final_score:.2f}"
        plural = "iteration" if self.iterations == 1 else "iterations"
        lines.append(f"Outcome: {outcome} after {self.iterations} {plural} ({self.status or 'running'})")
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


@dataclass
class TaskOutcome:
    """What completing a task did."""

    task: TaskRecord
    learnings: ExtractionReport | None
    skills_updated: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class JournaledTask:
    """A task with entries in the journal: who wrote its last entry (``host:pid:token``), and when."""

    task_id: str
    owner: str
    last_write: datetime | None


@dataclass(frozen=True)
class JournalEntry:
    """One step of a task as journaled: its JSON (``{"op": ...}``) and when it was written."""

    namespace: str
    entry: str
    created_at: datetime | None


def cycle_json(cycle: Cycle) -> dict[str, Any]:
    """A cycle as its journal entry."""
    data = dict(cycle.__dict__)
    data["created_at"] = to_iso(cycle.created_at)
    return data


def json_default(value: Any) -> Any:
    """JSON for what task metadata may hold besides JSON types (times, sets, tuples)."""
    if isinstance(value, datetime):
        return to_iso(value)
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable; task metadata must be JSON data")


def required_text(value: Any, what: str) -> str:
    """A non-empty text without NUL characters, or TypeError/ValueError naming ``what``."""
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a string, got {type(value).__name__}")
    if not value.strip():
        raise ValueError(f"{what} must not be empty")
    if "\x00" in value:
        raise ValueError(f"{what} contains a NUL character; remove it")
    return value


def optional_text(value: Any, what: str) -> str | None:
    """:func:`required_text`, or None."""
    return None if value is None else required_text(value, what)


def task_score(value: Any, what: str) -> float | None:
    """An evaluation score: a number between 0 and 1, or None."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise ValueError(f"{what} must be a number between 0 and 1, got {value!r}")
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{what} must be between 0 and 1 (seed 000 scores evaluations 0..1), got {value}")
    return float(value)


def task_count(value: Any, what: str) -> int | None:
    """A count of tokens or milliseconds: a non-negative whole number, or None."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{what} must be a non-negative whole number, got {value!r}")
    return value

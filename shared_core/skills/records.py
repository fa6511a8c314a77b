"""The records of skill memory: a cell of the effectiveness matrix, an indexed SKILL.md, a skill
recommended for a task, and what a sync of the SKILL.md files did."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from ..memories import DEFAULT_NAMESPACE

__all__ = ["SkillScore", "SkillFile", "SkillRecommendation", "SyncReport", "SKILL_ORIGINS"]

SKILL_ORIGINS = ("managed", "proposed", "user")


@dataclass(frozen=True)
class SkillScore:
    """One cell of the effectiveness matrix."""

    skill_name: str
    category: str
    avg_score: float
    sample_count: int
    last_used: datetime | None
    namespace: str = DEFAULT_NAMESPACE


@dataclass(frozen=True)
class SkillFile:
    """An indexed SKILL.md."""

    id: str
    name: str
    origin: str  # managed | proposed | user
    path: str  # relative to the skills directory
    description: str


@dataclass(frozen=True)
class SkillRecommendation:
    """A skill suggested for a task: its track record in the category and/or its match to the task."""

    name: str
    description: str = ""
    avg_score: float | None = None
    sample_count: int = 0
    category: str | None = None
    id: str | None = None  # the SKILL.md's memory id, when there is a file

    def render(self) -> str:
        parts = [self.name]
        if self.avg_score is not None:
            tasks = "task" if self.sample_count == 1 else "tasks"
            where = f" {self.category}" if self.category else ""
            parts.append(f"(avg score {self.avg_score:.2f} over {self.sample_count}{where} {tasks})")
        text = " ".join(parts)
        return f"{text}: {self.description}" if self.description else text


@dataclass
class SyncReport:
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: int = 0
    skipped: list[str] = field(default_factory=list)  # unreadable or empty files

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.removed)

"""All SQL of skill memory (the ``skill_effectiveness`` table); callers hold the kernel's session.

The SKILL.md files are indexed as memories through the memories domain, not here."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ..clock import from_iso, to_iso
from ..db import Backend
from .records import SkillScore

__all__ = ["SkillRepository"]

# seed 000's upsert, with the namespace added to the key
_UPSERT = """
INSERT INTO skill_effectiveness (namespace, skill_name, task_category, avg_score, sample_count, last_used)
VALUES (?1, ?2, ?3, ?4, 1, ?5)
ON CONFLICT(namespace, skill_name, task_category)
DO UPDATE SET
avg_score = (avg_score * sample_count + ?4) / (sample_count + 1),
sample_count = sample_count + 1,
last_used = ?5
"""


class SkillRepository:
    def __init__(self, db: Backend) -> None:
        self.db = db

    def fold_score(self, namespace: str, skill_name: str, category: str, score: float, used_at: datetime) -> None:
        """Fold one score into the running average of (skill, category) (seed 000's upsert)."""
        self.db.execute(_UPSERT, (namespace, skill_name, category, score, to_iso(used_at)))

    def score(self, namespace: str, skill_name: str, category: str) -> SkillScore | None:
        rows = self._scores("namespace = ? AND skill_name = ? AND task_category = ?", [namespace, skill_name, category])
        return rows[0] if rows else None

    def ranked(self, namespace: str, category: str, min_samples: int) -> list[SkillScore]:
        """The category's skills with at least ``min_samples`` scores, best average first (more samples break ties)."""
        return self._scores("namespace = ? AND task_category = ? AND sample_count >= ?",
                            [namespace, category, min_samples])

    def erase(self, namespace: str) -> None:
        self.db.execute("DELETE FROM skill_effectiveness WHERE namespace = ?", (namespace,))

    def _scores(self, where: str, params: list[Any]) -> list[SkillScore]:
        rows = self.db.query(
            "SELECT skill_name, task_category, avg_score, sample_count, last_used, namespace FROM "
            f"skill_effectiveness WHERE {where} ORDER BY avg_score DESC, sample_count DESC, skill_name", params
        )
        return [SkillScore(r[0], r[1], float(r[2]), int(r[3]), from_iso(r[4]), r[5]) for r in rows]

"""The records of learnings: the three types, a stored learning, a candidate on its way in, and
what extraction and decay reports say."""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..memories import DEFAULT_NAMESPACE

__all__ = ["LearningType", "Learning", "LearningCandidate", "ExtractionReport", "DecayReport", "StoredLearning",
           "learning_sentence"]


class LearningType(str, enum.Enum):
    """Seed 000's three learning types ("Do X", "Don't do X", "X better than Y for Z")."""

    HEURISTIC = "Heuristic"
    ANTI_PATTERN = "AntiPattern"
    PREFERENCE = "Preference"

    @classmethod
    def parse(cls, value: LearningType | str) -> LearningType:
        """Accepts the enum, ``"AntiPattern"``, ``"anti_pattern"``, ``"anti-pattern"`` and so on."""
        if isinstance(value, cls):
            return value
        if isinstance(value, str):
            key = re.sub(r"[\s_\-]", "", value).casefold()
            for member in cls:
                if member.value.casefold() == key:
                    return member
        raise ValueError(f"learning type must be Heuristic, AntiPattern or Preference, got {value!r}")

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Learning:
    """A learning; ``confidence`` is its current value (decayed from ``base_confidence``)."""

    id: str
    type: LearningType
    content: str
    confidence: float
    base_confidence: float
    namespace: str = DEFAULT_NAMESPACE
    category: str | None = None
    source_task: str | None = None
    reinforced: int = 0
    origin: str = "rule"
    pinned: bool = False
    created_at: datetime | None = None
    last_used: datetime | None = None
    expires_at: datetime | None = None


@dataclass(frozen=True)
class StoredLearning:
    """A row of ``learnings`` with its index entry's pin and rowid, as the repository reads it: a
    :class:`Learning` before the service computes its current confidence from the base and the age."""

    id: str
    type: LearningType
    content: str
    category: str | None
    stored_confidence: float | None  # the confidence column, as the last decay run left it
    base_confidence: float
    source_task: str | None
    reinforced: int
    created_at: datetime | None
    last_used: datetime | None
    expires_at: datetime | None
    namespace: str
    origin: str
    pinned: bool
    chunk_rowid: int


@dataclass(frozen=True)
class LearningCandidate:
    """A learning before it is stored (or found to reinforce an existing one)."""

    type: LearningType
    content: str
    category: str | None = None
    origin: str = "rule"  # rule | model | manual


@dataclass
class ExtractionReport:
    """What extraction from one task did."""

    task_id: str | None
    created: list[Learning] = field(default_factory=list)
    reinforced: list[Learning] = field(default_factory=list)
    rule_candidates: int = 0
    model_candidates: int = 0
    model_used: bool = False
    model_error: str | None = None
    error: str | None = None  # extraction itself failed (the task was flushed before it ran)


@dataclass(frozen=True)
class DecayReport:
    """What :meth:`Learnings.apply_decay` did; running it again at once reports zeros."""

    checked: int = 0
    updated: int = 0  # confidence column brought up to date
    pruned: int = 0  # fell below the threshold
    archived: int = 0  # ... and went to the archive (reason "decayed")
    deleted: int = 0  # ... or were deleted (memory.archive_pruned = false)
    orphans_removed: int = 0  # rows whose index entry was deleted elsewhere
    pruned_ids: tuple[str, ...] = ()

    def _repr_html_(self) -> str:
        rows = "".join(f"<tr><th style='text-align:left'>{k}</th><td>{v}</td></tr>"
                       for k, v in self.__dict__.items() if k != "pruned_ids")
        return f"<table><caption>learning decay</caption>{rows}</table>"


def learning_sentence(value: Any) -> str:
    """A learning's content as one line of text, checked."""
    if not isinstance(value, str):
        raise TypeError(f"a learning's content must be a string, got {type(value).__name__}")
    text = " ".join(value.split())
    if not text:
        raise ValueError("a learning's content is empty; write the lesson as one sentence")
    return text

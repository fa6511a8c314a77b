"""The records of the lifecycle jobs: links between memories, run locks and the jobs' last runs."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

__all__ = ["Link", "RunLock", "JobRun"]


@dataclass(frozen=True)
class Link:
    """A link seen from ``memory_id``: ``other`` is the linked memory."""

    memory_id: str
    other: str
    namespace: str
    strength: float
    created_at: datetime | None
    updated_at: datetime | None


@dataclass(frozen=True)
class RunLock:
    """A run lock held under ``key`` (``token`` tells this holder's from a later one)."""

    key: str
    token: str
    acquired_at: datetime
    expires_at: datetime


@dataclass(frozen=True)
class JobRun:
    """When a lifecycle job last ran, how it ended and what it reported."""

    job: str
    last_run_at: datetime
    last_status: str
    last_report: dict[str, Any]

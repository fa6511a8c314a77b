"""The goals domain's records."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

__all__ = ["Goal", "STATUSES"]

STATUSES = ("open", "done")


@dataclass(frozen=True)
class Goal:
    """A goal of a namespace: ``open`` until it is done."""

    id: str
    namespace: str
    title: str
    status: str
    created_at: datetime
    done_at: datetime | None = None

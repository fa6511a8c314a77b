"""When each lifecycle job last ran (table ``lifecycle_runs``), for ``if_due`` scheduling.

A job is due when a fire time of its cron schedule has passed since its last run; before
its first run, since the store was created (so a new store does not prune at once, just
as a cron job would wait for 4am). Record the run inside the transaction that does the
job's work: a second process waiting on the write lock then sees the job done.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, tzinfo
from typing import Any

from ..clock import from_iso
from ..db import Backend
from .cron import CronSchedule, is_due
from .records import JobRun
from .repository import RunRepository

__all__ = ["JobRun", "last_run", "record_run", "due", "next_due"]


def last_run(db: Backend, job: str) -> JobRun | None:
    return RunRepository(db).get(job)


def record_run(db: Backend, job: str, when: datetime, status: str, report: Mapping[str, Any] | None = None) -> None:
    """Upsert the job's last run (call inside the job's transaction).

    ``last_run_at`` never moves back, even if the clock does, so a clock set back cannot make
    a job that already ran due again.
    """
    RunRepository(db).record(job, when, status, report or {})


def _reference(db: Backend, job: str) -> datetime | None:
    run = last_run(db, job)
    if run is not None:
        return run.last_run_at
    created = db.get_meta("created_at")
    return from_iso(created) if created else None


def due(db: Backend, job: str, schedule: CronSchedule, now: datetime, tz: tzinfo) -> bool:
    """Whether a fire time of ``schedule`` lies after the job's last run (or the store's creation)
    and at or before ``now``. A clock that went back before the last run is never due."""
    return is_due(schedule, _reference(db, job), now, tz)


def next_due(db: Backend, job: str, schedule: CronSchedule, now: datetime, tz: tzinfo) -> datetime | None:
    """When the job next becomes due: now if it already is, else the next fire time."""
    if due(db, job, schedule, now, tz):
        return now
    reference = _reference(db, job)
    start = max(now, reference) if reference is not None else now
    return schedule.next_after(start, tz)

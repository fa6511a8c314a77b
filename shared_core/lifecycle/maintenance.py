"""``store.maintain()``: every lifecycle job in one idempotent, process-safe run.

In order: recover tasks a crashed process left open (seed 000), sweep expired memories
(TTL), decay learnings (seed 000), run the forgetting engine on every namespace
(seed 003), tidy insight access logs (seed 003), size-prune into the archive (seed 002),
re-embed what changed (seed 003's content hash), re-index SKILL.md files, mine usage
patterns (seed 000), trim the vector mirror's change log, and finish an erase that another
connection's long read left pending (:mod:`shared_core.erasure`). Each job is idempotent, so
running ``maintain()`` twice in a row changes nothing the second time; a run lock shared
by all processes (``maintenance:<db>``) makes a second concurrent run return
``skipped_locked``; ``if_due=True`` runs only when seed 002's schedule
(``memory.prune_schedule``, "0 4 * * *") has fired since the last run.
"""

from __future__ import annotations

import html
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..erasure import Erasure
from ..insights import Insights
from ..learnings import Learnings
from ..memories.service import MemoryService
from ..reembedding import reembed
from ..skills import Skills
from ..tasks import TaskMemory
from ..usage import Usage
from .cron import CronSchedule, resolve_timezone
from .forgetting import ForgettingEngine
from .locks import RunLocks
from .pruning import Pruner
from .repository import trim_index_log
from .runs import due, last_run, next_due, record_run

if TYPE_CHECKING:
    from ..kernel import Kernel

__all__ = ["Maintenance", "MaintenanceReport", "StepResult", "STEPS"]

STEPS = ("recover_tasks", "expire", "decay", "forget", "insights", "prune", "reembed", "skills", "usage", "index_log",
         "finish_erase")
JOB = "maintenance"
LOCK_KEY = "maintenance"
LOCK_TTL_MS = 10 * 60_000
INDEX_LOG_KEEP = 100_000  # change-log entries kept for other processes' vector mirrors


@dataclass(frozen=True)
class StepResult:
    """One job of a maintenance run."""

    name: str
    changed: bool
    summary: str
    seconds: float
    error: str | None = None


@dataclass
class MaintenanceReport:
    """What ``maintain()`` did; renders as a table in Jupyter."""

    status: str  # ran | not_due | skipped_locked
    ran_at: datetime
    steps: list[StepResult] = field(default_factory=list)
    next_due: datetime | None = None

    @property
    def changed(self) -> bool:
        return any(step.changed for step in self.steps)

    @property
    def errors(self) -> list[StepResult]:
        return [step for step in self.steps if step.error]

    def __str__(self) -> str:
        lines = [f"maintenance {self.status} at {self.ran_at.isoformat(timespec='seconds')}"]
        for step in self.steps:
            mark = "error" if step.error else ("changed" if step.changed else "-")
            lines.append(f"  {step.name:14s} {mark:8s} {step.summary}" + (f" ({step.error})" if step.error else ""))
        if self.next_due is not None:
            lines.append(f"  next due: {self.next_due.isoformat(timespec='minutes')}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td>{html.escape(s.name)}</td><td>{'error' if s.error else ('yes' if s.changed else '')}</td>"
            f"<td style='text-align:left'>{html.escape(s.error or s.summary)}</td><td>{s.seconds:.2f}</td></tr>"
            for s in self.steps
        )
        return (f"<table><caption>maintenance: {html.escape(self.status)}</caption>"
                f"<thead><tr><th>step</th><th>changed</th><th>what</th><th>s</th></tr></thead>"
                f"<tbody>{rows}</tbody></table>")


class Maintenance:
    """``store.maintenance``; ``store.maintain()`` is ``store.maintenance.run()``."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self._locks = RunLocks(kernel.backend, kernel.clock)

    def _schedule(self) -> tuple[CronSchedule, Any]:
        cfg = self.kernel.config.memory
        return CronSchedule.parse(cfg.prune_schedule), resolve_timezone(cfg.schedule_timezone)

    def is_due(self) -> bool:
        schedule, tz = self._schedule()
        with self.kernel.session() as db:
            return due(db, JOB, schedule, self.kernel.clock.now(), tz)

    def next_due(self) -> datetime | None:
        schedule, tz = self._schedule()
        with self.kernel.session() as db:
            return next_due(db, JOB, schedule, self.kernel.clock.now(), tz)

    def last_run(self) -> Any:
        with self.kernel.session() as db:
            return last_run(db, JOB)

    def run(self, *, if_due: bool = False, steps: Sequence[str] | None = None) -> MaintenanceReport:
        """Run the jobs (all of them, or ``steps``); a failing job is reported and the rest still run."""
        chosen = list(STEPS if steps is None else steps)
        unknown = sorted(set(chosen) - set(STEPS))
        if unknown:
            raise ValueError(f"unknown maintenance steps {unknown}; choose from {', '.join(STEPS)}")
        now = self.kernel.clock.now()
        if if_due and not self.is_due():
            return MaintenanceReport("not_due", now, next_due=self.next_due())
        with self._locks.hold(LOCK_KEY, LOCK_TTL_MS) as lock:
            if lock is None:
                return MaintenanceReport("skipped_locked", now)
            if if_due and not self.is_due():  # another process ran it between our check and the lock
                return MaintenanceReport("not_due", now, next_due=self.next_due())
            report = MaintenanceReport("ran", now)
            for name in chosen:
                report.steps.append(self._step(name, getattr(self, f"_{name}")))
                self._locks.refresh(lock, LOCK_TTL_MS)
            with self.kernel.session(write=True) as db:
                record_run(db, JOB, now, "ran" if not report.errors else "ran_with_errors",
                           {s.name: s.summary for s in report.steps})
        report.next_due = self.next_due()
        return report

    def _step(self, name: str, job: Callable[[], tuple[bool, str]]) -> StepResult:
        started = time.perf_counter()
        try:
            changed, summary = job()
        except Exception as exc:  # one job's failure must not stop the others
            detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            return StepResult(name, False, "failed", time.perf_counter() - started, detail)
        return StepResult(name, changed, summary, time.perf_counter() - started)

    # -- the jobs (each returns (changed, summary)) -------------------------------------------

    def _recover_tasks(self) -> tuple[bool, str]:
        recovered = self.kernel.service(TaskMemory).recover()
        return bool(recovered), f"{len(recovered)} interrupted task(s) saved"

    def _expire(self) -> tuple[bool, str]:
        swept = self.kernel.service(MemoryService).sweep_expired()
        return swept > 0, f"{swept} expired memorie(s) removed"

    def _decay(self) -> tuple[bool, str]:
        r = self.kernel.service(Learnings).apply_decay()
        changed = bool(r.updated or r.pruned or r.orphans_removed)
        return changed, f"{r.checked} learnings checked, {r.updated} decayed, {r.pruned} pruned"

    def _forget(self) -> tuple[bool, str]:
        reports = self.kernel.service(ForgettingEngine).run_all()
        changed = any(r.changed for r in reports)
        skipped = sum(r.status == "skipped_locked" for r in reports)
        text = f"{len(reports)} namespace(s)" + (f", {skipped} locked by another run" if skipped else "")
        return changed, text

    def _insights(self) -> tuple[bool, str]:
        r = self.kernel.service(Insights).maintain()
        return r.changed, f"{r.removed_access_events} old access event(s) dropped"

    def _prune(self) -> tuple[bool, str]:
        r = self.kernel.service(Pruner).run()
        return r.changed, f"{r.status}, {r.archived} archived"

    def _reembed(self) -> tuple[bool, str]:
        count = reembed(self.kernel)
        return count > 0, f"{count} re-embedded"

    def _skills(self) -> tuple[bool, str]:
        r = self.kernel.service(Skills).sync()
        return r.changed, f"{len(r.added)} added, {len(r.updated)} updated, {len(r.removed)} removed"

    def _usage(self) -> tuple[bool, str]:
        r = self.kernel.service(Usage).mine()
        changed = bool(r.new or r.changed or r.lapsed or r.proposed)
        return changed, f"{len(r.patterns)} pattern(s), {r.new} new, {len(r.proposed)} SKILL.md proposed"

    def _index_log(self) -> tuple[bool, str]:
        with self.kernel.session(write=True) as db:
            trimmed = trim_index_log(db, INDEX_LOG_KEEP)
        return trimmed > 0, f"{trimmed} change-log entr(ies) trimmed"

    def _finish_erase(self) -> tuple[bool, str]:
        erasure = self.kernel.service(Erasure)
        if erasure.verify().complete:
            return False, "no erase pending"
        report = erasure.finish()
        return report.complete, "pending erase finished" if report.complete else "erase still pending: " + \
            "; ".join(report.remaining)

"""Maintenance on schedule: a background thread runs ``store.maintain(if_due=True)``.

The schedule is the store's (``memory.prune_schedule``, seed 002's "0 4 * * *", read in
``memory.schedule_timezone``). The thread wakes every ``server.maintenance_poll_seconds`` (or
sooner, when the next fire time is nearer) and asks whether a run is due; ``maintain`` itself
records runs in the database, so a run made by the CLI or another server counts, and two
servers on one file never run it twice (the second gets ``not_due`` or ``skipped_locked``).
"""

from __future__ import annotations

import logging
import threading
import traceback
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..clock import to_iso

if TYPE_CHECKING:
    from ..lifecycle.maintenance import MaintenanceReport
    from ..store import MemoryStore

__all__ = ["MaintenanceScheduler"]

logger = logging.getLogger("openkoi.server")


@dataclass(frozen=True)
class _Attempt:
    at: datetime
    report: MaintenanceReport | None
    error: str | None


class MaintenanceScheduler:
    """Runs ``store.maintain(if_due=True)`` in a daemon thread; :meth:`status` reports what happened."""

    def __init__(self, store: MemoryStore, *, poll_seconds: float | None = None, enabled: bool = True) -> None:
        self.store = store
        self.poll_seconds = store.config.server.maintenance_poll_seconds if poll_seconds is None else poll_seconds
        if self.poll_seconds <= 0:
            raise ValueError(f"poll_seconds must be positive, got {self.poll_seconds}")
        self.enabled = enabled
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._running = threading.Lock()
        self._last_check: _Attempt | None = None
        self._last_run: _Attempt | None = None  # the last check that did run (or failed)

    # -- the thread -------------------------------------------------------------------------------

    def start(self) -> None:
        if not self.enabled or self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="openkoi-maintenance", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        """Ask the thread to stop and wait for a run in progress to finish (at most ``timeout`` s)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.check()
            self._stop.wait(self._sleep())

    def _sleep(self) -> float:
        try:
            upcoming = self.store.maintenance.next_due()
        except Exception:  # the store may be closing; poll again later
            return self.poll_seconds
        if upcoming is None:
            return self.poll_seconds
        seconds = (upcoming - self.store.clock.now()).total_seconds()
        return min(self.poll_seconds, max(seconds, 1.0))

    def check(self, *, force: bool = False) -> MaintenanceReport | None:
        """Run maintenance if it is due (``force``: now); None if a run is already in progress here."""
        if not self._running.acquire(blocking=False):
            return None
        try:
            now = self.store.clock.now()
            try:
                report = self.store.maintain(if_due=not force)
            except Exception as exc:  # keep the server up; report it at the status endpoint
                logger.exception("scheduled maintenance failed")
                attempt = _Attempt(now, None, "".join(traceback.format_exception_only(type(exc), exc)).strip())
                self._last_check = self._last_run = attempt
                return None
            attempt = _Attempt(now, report, None)
            self._last_check = attempt
            if report.status != "not_due":
                self._last_run = attempt
                logger.info("maintenance %s: %s", report.status, "; ".join(
                    f"{s.name}: {s.summary}" for s in report.steps))
            return report
        finally:
            self._running.release()

    # -- reporting --------------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self._running.locked()

    def status(self, *, details: bool = True) -> dict[str, Any]:
        """The schedule, this server's last check and run, and the run recorded in the database.

        ``details=False`` leaves out the steps' summaries (they count rows of every namespace).
        """
        cfg = self.store.config.memory
        recorded = self.store.maintenance.last_run()
        upcoming = self.store.maintenance.next_due()
        return {
            "schedule": cfg.prune_schedule,
            "timezone": cfg.schedule_timezone,
            "enabled": self.enabled,
            "thread_alive": self._thread is not None and self._thread.is_alive(),
            "running": self.running,
            "poll_seconds": self.poll_seconds,
            "next_due": to_iso(upcoming) if upcoming else None,
            "last_check": to_iso(self._last_check.at) if self._last_check else None,
            "last_run": _attempt(self._last_run, details),
            "last_recorded_run": None if recorded is None else {
                "at": to_iso(recorded.last_run_at),
                "status": recorded.last_status,
                "steps": dict(recorded.last_report) if details else sorted(recorded.last_report),
            },
        }


def _attempt(attempt: _Attempt | None, details: bool) -> dict[str, Any] | None:
    if attempt is None:
        return None
    out: dict[str, Any] = {"at": to_iso(attempt.at), "error": attempt.error}
    report = attempt.report
    if report is not None:
        out["status"] = report.status
        out["steps"] = [
            {"name": s.name, "changed": s.changed, "seconds": round(s.seconds, 3),
             **({"summary": s.summary, "error": s.error} if details else {"failed": s.error is not None})}
            for s in report.steps
        ]
    else:
        out["status"] = "failed"
        out["steps"] = []
    if not details:
        out["error"] = None if attempt.error is None else "maintenance failed (details in the server log)"
    return out

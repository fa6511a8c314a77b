"""Size-based pruning into the archive (seed 002): when the live data outgrows
``memory.max_size`` (100 MB), archive the bottom ``memory.prune_percent`` (1 %) of the
memories by ``exp(score x 0.2) x 1/(1 + days x 0.01)``. Pinned memories are never pruned.

What is measured is the *live* searchable data, not the file: the file never shrinks by
itself, and the archive lives in the same file, so a file-size rule would archive forever.

The backend measures it (``measure_payload``): on SQLite the payload bytes of ``memory_chunks``,
its indexes and the FTS5 index (``dbstat`` when the build has it, else an exact ``estimate``),
on PostgreSQL the stored bytes of the live rows (``pg_column_size``); vectors as live rows x
dims x 4 bytes or as stored. Payload, not pages: deleting 1 % of the rows frees almost no pages,
while payload falls by exactly what was removed, so pruning converges.

After archiving, the keyword index is merged (FTS5's ``optimize``: deleted rows leave
tombstones until then) and the backend gives the freed space back (``reclaim_space``: SQLite's
incremental vacuum, switched on by one ``VACUUM`` the first time and reported as
``switched_to_incremental``; PostgreSQL's ``VACUUM`` of the table).

Runs are safe from several processes: the measure, the choice and the archiving happen
in one write transaction, together with the record of the run, so a second process sees
the first one's result (under the limit, or not due) and does nothing.
"""

from __future__ import annotations

import heapq
import html
import logging
from dataclasses import asdict, dataclass
from datetime import datetime, tzinfo
from typing import TYPE_CHECKING, Any

from ..clock import days_between, to_iso
from ..db.backend import SizeMeasure
from ..errors import StorageError
from ..memories import COLUMNS
from ..ranking import prune_count, prune_weight
from . import runs
from .cron import CronSchedule, resolve_timezone
from .repository import PruneRepository

if TYPE_CHECKING:
    from ..kernel import Kernel

__all__ = ["Pruner", "PruneReport", "SizeMeasure", "JOB"]

JOB = "size-prune"
REASON = "size-prune"
logger = logging.getLogger("openkoi.lifecycle")


@dataclass(frozen=True)
class PruneReport:
    """What one ``store.pruning.run()`` did.

    ``status``: ``pruned`` (archived something), ``under_limit`` (nothing to do),
    ``nothing_prunable`` (over the limit but every memory is pinned), ``not_due``
    (``if_due=True`` and no scheduled time has passed since the last run), ``disabled``
    (``max_size`` is 0) or ``dry_run`` (what would be archived, nothing changed).
    """

    status: str
    ran_at: datetime
    max_bytes: int
    percent: float
    before: SizeMeasure | None = None
    after: SizeMeasure | None = None
    archived: int = 0
    archived_ids: tuple[str, ...] = ()
    rounds: int = 0
    pages_reclaimed: int = 0
    switched_to_incremental: bool = False
    file_bytes: int = 0
    next_due: datetime | None = None

    @property
    def changed(self) -> bool:
        return self.archived > 0

    @property
    def over_limit(self) -> bool:
        last = self.after or self.before
        return bool(last and self.max_bytes and last.total > self.max_bytes)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for key in ("ran_at", "next_due"):
            out[key] = to_iso(out[key])
        out["archived_ids"] = list(self.archived_ids)
        return out

    def __str__(self) -> str:
        before = f"{self.before.total:,} B" if self.before else "unmeasured"
        after = f" -> {self.after.total:,} B" if self.after and self.after is not self.before else ""
        return (f"size-prune {self.status}: live data {before}{after} (limit {self.max_bytes:,} B), "
                f"archived {self.archived} in {self.rounds} round(s), reclaimed {self.pages_reclaimed} pages")

    def _repr_html_(self) -> str:
        rows = {
            "status": self.status, "ran at": to_iso(self.ran_at), "limit": f"{self.max_bytes:,} B",
            "live before": f"{self.before.total:,} B ({self.before.method})" if self.before else "",
            "live after": f"{self.after.total:,} B" if self.after else "",
            "archived": self.archived, "rounds": self.rounds, "pages reclaimed": self.pages_reclaimed,
            "switched to incremental vacuum": self.switched_to_incremental, "file": f"{self.file_bytes:,} B",
            "next due": to_iso(self.next_due) or "",
        }
        body = "".join(f"<tr><th style='text-align:left'>{k}</th><td style='text-align:left'>{html.escape(str(v))}</td></tr>"
                       for k, v in rows.items())
        return f"<table><caption>size prune</caption>{body}</table>"


class Pruner:
    """``store.pruning``: measure the live data, and archive its bottom percent when too big."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel

    @property
    def _db(self) -> Any:
        return self.kernel.backend

    # -- schedule ------------------------------------------------------------------------

    @property
    def schedule(self) -> CronSchedule:
        return CronSchedule.parse(self.kernel.config.memory.prune_schedule)

    @property
    def timezone(self) -> tzinfo:
        return resolve_timezone(self.kernel.config.memory.schedule_timezone)

    def is_due(self) -> bool:
        """Whether a scheduled time (``memory.prune_schedule``) has passed since the last run."""
        with self.kernel.session() as db:
            return runs.due(db, JOB, self.schedule, self.kernel.clock.now(), self.timezone)

    def next_due(self) -> datetime | None:
        with self.kernel.session() as db:
            return runs.next_due(db, JOB, self.schedule, self.kernel.clock.now(), self.timezone)

    def last_run(self) -> runs.JobRun | None:
        with self.kernel.session() as db:
            return runs.last_run(db, JOB)

    # -- measuring -----------------------------------------------------------------------

    def measure(self, method: str = "auto") -> SizeMeasure:
        """The live data's size: ``auto`` (dbstat when available), ``dbstat`` or ``estimate``."""
        if method not in ("auto", "dbstat", "estimate"):
            raise ValueError(f"unknown measure method {method!r}; use auto, dbstat or estimate")
        with self.kernel.session() as db:
            return db.measure_payload(method, columns=COLUMNS, dims=self.kernel.embedder.dims)

    # -- pruning -------------------------------------------------------------------------

    def candidates(self, count: int) -> list[tuple[float, str]]:
        """The ``count`` unpinned live memories of a prunable kind with the lowest pruning weight, lowest first."""
        with self.kernel.session():
            return [(w, mid) for w, _, _, mid in self._bottom(count)]

    def _bottom(self, count: int) -> list[tuple[float, float, int, str]]:
        if count <= 0:
            return []
        cfg = self.kernel.config.ranking
        now = self.kernel.clock.now()
        kinds = tuple(self.kernel.config.memory.prune_kinds)
        if not kinds:
            return []
        scored = []
        for rowid, memory_id, score, last, created_at in PruneRepository(self._db).unpinned(kinds):
            weight = prune_weight(score, days_between(last, now), score_weight=cfg.score_weight,
                                  recency_rate=cfg.recency_rate)
            scored.append((weight, created_at.timestamp() if created_at else 0.0, rowid, memory_id))
        return heapq.nsmallest(count, scored)  # ties: the older, then the lower rowid, goes first

    def run(self, *, if_due: bool = False, dry_run: bool = False, until_under: bool = False,
            method: str = "auto") -> PruneReport:
        """Check the live size and archive the bottom percent if it is over ``memory.max_size``.

        ``if_due``: only when a time of ``memory.prune_schedule`` has passed since the last run
        (else ``status == "not_due"``). ``until_under``: repeat rounds (one transaction each)
        until under the limit; by default one round per run, as seed 002's cron job does.
        ``dry_run``: report what would be archived, change nothing. Running again right
        after a run that ended under the limit changes nothing.
        """
        memory_cfg = self.kernel.config.memory
        limit, percent = memory_cfg.max_size, memory_cfg.prune_percent
        schedule, tz = self.schedule, self.timezone
        with self.kernel.session() as db:
            started = self.kernel.clock.now()
            if dry_run:
                return self._dry_run(started, limit, percent, if_due, schedule, tz, method)
            archived: list[str] = []
            first: SizeMeasure | None = None
            last: SizeMeasure | None = None
            status = "under_limit"
            rounds = 0
            while True:
                with db.transaction():
                    now = self.kernel.clock.now()
                    if if_due and rounds == 0 and not runs.due(db, JOB, schedule, now, tz):
                        return PruneReport("not_due", now, limit, percent, file_bytes=self._file_bytes(),
                                           next_due=runs.next_due(db, JOB, schedule, now, tz))
                    rounds += 1
                    if limit <= 0:
                        status = "disabled"
                        runs.record_run(db, JOB, now, status, {"max_bytes": 0})
                        break
                    before = self.measure(method)
                    if before.total > limit:  # tombstones of earlier deletes may be inflating the index
                        self._merge_keyword_index()
                        before = self.measure(method)
                    first = first or before
                    last = before
                    if before.total <= limit:
                        status = "under_limit" if not archived else "pruned"
                        runs.record_run(db, JOB, now, status, {"live_bytes": before.total, "max_bytes": limit})
                        break
                    picks = self._bottom(prune_count(before.rows, percent))
                    if not picks:
                        status = "nothing_prunable" if not archived else "pruned"
                        runs.record_run(db, JOB, now, status, {"live_bytes": before.total, "max_bytes": limit})
                        break
                    self.kernel.archive.move([p[2] for p in picks], REASON)
                    archived.extend(p[3] for p in picks)
                    self._merge_keyword_index()
                    last = self.measure(method)
                    status = "pruned"
                    runs.record_run(db, JOB, now, status, {
                        "live_bytes": last.total, "max_bytes": limit, "archived": len(picks)})
                progressed = last.total < before.total
                if not until_under or last.total <= limit or not progressed:
                    break
            pages, switched = self._reclaim() if archived else (0, False)
            now = self.kernel.clock.now()
            return PruneReport(
                status, started, limit, percent, before=first, after=last, archived=len(archived),
                archived_ids=tuple(archived), rounds=rounds, pages_reclaimed=pages, switched_to_incremental=switched,
                file_bytes=self._file_bytes(), next_due=runs.next_due(db, JOB, schedule, now, tz),
            )

    def _dry_run(self, now: datetime, limit: int, percent: float, if_due: bool, schedule: CronSchedule,
                 tz: tzinfo, method: str) -> PruneReport:
        next_time = runs.next_due(self._db, JOB, schedule, now, tz)
        if if_due and not runs.due(self._db, JOB, schedule, now, tz):
            return PruneReport("not_due", now, limit, percent, file_bytes=self._file_bytes(), next_due=next_time)
        before = self.measure(method)
        picks = self._bottom(prune_count(before.rows, percent)) if limit > 0 and before.total > limit else []
        return PruneReport("dry_run", now, limit, percent, before=before, after=before, archived=len(picks),
                           archived_ids=tuple(p[3] for p in picks), rounds=0, file_bytes=self._file_bytes(),
                           next_due=next_time)

    def _merge_keyword_index(self) -> None:
        self.kernel.keyword.optimize()

    def _reclaim(self) -> tuple[int, bool]:
        """Give freed space back (after the archiving has committed)."""
        try:
            return self._db.reclaim_space()
        except StorageError as exc:  # another connection is busy: the archive is done, space comes next time
            logger.warning("size-prune archived rows but could not reclaim space now: %s", exc)
            return 0, False

    def _file_bytes(self) -> int:
        return self._db.storage_bytes()

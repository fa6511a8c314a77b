"""Size-based pruning into the archive (seed 002): when the live data outgrows
``memory.max_size`` (100 MB), archive the bottom ``memory.prune_percent`` (1 %) of the
memories by ``exp(score x 0.2) x 1/(1 + days x 0.01)``. Pinned memories are never pruned.

What is measured is the *live* searchable data, not the file: the file never shrinks by
itself, and the archive lives in the same file, so a file-size rule would archive forever.

* ``dbstat`` (when the SQLite build has the virtual table, as the bundled sqlean one does):
  the payload bytes of ``memory_chunks``, its indexes and the FTS5 index's shadow tables.
  Payload, not pages: deleting 1 % of the rows frees almost no pages (they are spread over
  all of them), while payload falls by exactly what was removed, so pruning converges.
* ``estimate`` (otherwise): the bytes of every column of every live row, the key columns
  of the indexes (plus 8 bytes a row each), and the FTS5 index's blocks, read exactly.
* vectors, either way: live rows x dims x 4 bytes. sqlite-vec stores vectors in
  preallocated chunks of 1024 and frees a chunk only once it is empty, so its pages say
  little about the live vectors.
* on PostgreSQL (``pg_column_size``): the stored bytes of every live row, its vector and
  its tsvector counted apart, plus the index keys as in ``estimate``.

After archiving, the FTS5 index is merged (``optimize``: deleted rows leave tombstones
until then) and the freed pages go back to the file system with ``PRAGMA
incremental_vacuum`` (on PostgreSQL: ``VACUUM`` of the table). That needs ``auto_vacuum = INCREMENTAL``, which SQLite only accepts
before the first table exists or through a full ``VACUUM``; a WAL-mode file has its header
written before our first migration runs, so the first prune that archives anything on a
file that is not yet incremental switches it with one ``VACUUM`` (reported as
``switched_to_incremental``); every later prune is incremental.

Runs are safe from several processes: the measure, the choice and the archiving happen
in one write transaction, together with the record of the run, so a second process sees
the first one's result (under the limit, or not due) and does nothing.
"""

from __future__ import annotations

import heapq
import html
import logging
from dataclasses import asdict, dataclass, field
from datetime import datetime, tzinfo
from typing import TYPE_CHECKING, Any

from ..clock import days_between, from_iso, to_iso
from ..errors import StorageError
from ..memories import COLUMNS
from ..ranking import prune_count, prune_weight
from . import runs
from .cron import CronSchedule, resolve_timezone

if TYPE_CHECKING:
    from ..kernel import Kernel

__all__ = ["Pruner", "PruneReport", "SizeMeasure", "JOB"]

JOB = "size-prune"
REASON = "size-prune"
_FTS_SHADOWS = ("memory_fts_data", "memory_fts_idx", "memory_fts_docsize", "memory_fts_config")
_INDEX_KEYS = (  # key columns of memory_chunks' indexes, for the estimate
    "namespace", "kind", "namespace", "content_hash", "namespace", "category", "namespace", "created_at",
    "id", "owner_id", "expires_at",
)
_INDEX_ENTRIES = 7  # indexes per row (the two partial ones counted as if always present)

logger = logging.getLogger("openkoi.lifecycle")


@dataclass(frozen=True)
class SizeMeasure:
    """How big the live data is, and how that was measured (``dbstat`` or ``estimate``)."""

    method: str
    total: int
    rows: int
    parts: dict[str, int] = field(default_factory=dict)  # table/index bytes, keyword index, vectors


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
        self._has_dbstat: bool | None = None

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
            if db.dialect == "postgresql":
                if method == "dbstat":
                    raise StorageError("PostgreSQL has no dbstat table; use method='auto' or 'estimate'")
                return self._pg_payload()
            if method == "dbstat" and not self._dbstat_available():
                raise StorageError("this SQLite build has no dbstat table; use method='estimate'")
            if method == "estimate" or (method == "auto" and not self._dbstat_available()):
                return self._estimate()
            return self._dbstat()

    def _dbstat_available(self) -> bool:
        if self._has_dbstat is None:
            try:
                self._db.query("SELECT 1 FROM dbstat LIMIT 1")
                self._has_dbstat = True
            except StorageError:
                self._has_dbstat = False
        return self._has_dbstat

    def _live_btrees(self) -> list[str]:
        names = [r[0] for r in self._db.query(
            "SELECT name FROM sqlite_master WHERE (type = 'table' AND name = 'memory_chunks') "
            "OR (type = 'index' AND tbl_name = 'memory_chunks') ORDER BY name")]
        present = {r[0] for r in self._db.query(
            f"SELECT name FROM sqlite_master WHERE name IN ({', '.join('?' for _ in _FTS_SHADOWS)})", _FTS_SHADOWS)}
        return names + [n for n in _FTS_SHADOWS if n in present]

    def _vector_bytes(self, rows: int) -> int:
        return rows * self.kernel.embedder.dims * 4

    def _dbstat(self) -> SizeMeasure:
        parts: dict[str, int] = {}
        for name in self._live_btrees():
            try:
                value = self._db.scalar("SELECT payload FROM dbstat WHERE name = ? AND aggregate = 1", (name,))
            except StorageError:  # SQLite before 3.31 has no aggregate column
                value = self._db.scalar("SELECT sum(payload) FROM dbstat WHERE name = ?", (name,))
            parts[name] = int(value or 0)
        rows = int(self._db.scalar("SELECT count(*) FROM memory_chunks") or 0)
        parts["vectors"] = self._vector_bytes(rows)
        return SizeMeasure("dbstat", sum(parts.values()), rows, parts)

    def _pg_payload(self) -> SizeMeasure:
        key_bytes = " + ".join(f"coalesce(octet_length({c}), 0)" for c in _INDEX_KEYS)
        rows, whole, vectors, keywords, keys = self._db.query(
            "SELECT count(*), coalesce(sum(pg_column_size(c.*)), 0), coalesce(sum(pg_column_size(c.embedding)), 0), "
            f"coalesce(sum(pg_column_size(c.search_text)), 0), coalesce(sum({key_bytes}), 0) FROM memory_chunks c")[0]
        rows = int(rows)
        parts = {"rows": int(whole) - int(vectors) - int(keywords), "indexes": int(keys) + rows * _INDEX_ENTRIES * 8,
                 "keyword_index": int(keywords), "vectors": int(vectors)}
        return SizeMeasure("pg_column_size", sum(parts.values()), rows, parts)

    def _estimate(self) -> SizeMeasure:
        row_bytes = " + ".join(f"coalesce(length(CAST({c} AS BLOB)), 0)" for c in COLUMNS)
        key_bytes = " + ".join(f"coalesce(length(CAST({c} AS BLOB)), 0)" for c in _INDEX_KEYS)
        rows, data, keys = self._db.query(
            f"SELECT count(*), coalesce(sum({row_bytes}), 0), coalesce(sum({key_bytes}), 0) FROM memory_chunks")[0]
        fts = int(self._db.scalar("SELECT coalesce(sum(length(block)), 0) FROM memory_fts_data") or 0)
        fts += int(self._db.scalar("SELECT coalesce(sum(length(sz)), 0) FROM memory_fts_docsize") or 0)
        fts += int(self._db.scalar("SELECT coalesce(sum(length(CAST(term AS BLOB)) + 16), 0) FROM memory_fts_idx") or 0)
        rows = int(rows)
        parts = {"rows": int(data), "indexes": int(keys) + rows * _INDEX_ENTRIES * 8, "keyword_index": fts,
                 "vectors": self._vector_bytes(rows)}
        return SizeMeasure("estimate", sum(parts.values()), rows, parts)

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
        rows = self._db.query(
            "SELECT chunk_rowid, id, score, coalesce(last_hit_at, created_at), created_at FROM memory_chunks "
            f"WHERE pinned = 0 AND kind IN ({', '.join('?' for _ in kinds)})", kinds)
        scored = []
        for rowid, memory_id, score, last, created in rows:
            weight = prune_weight(float(score or 0.0), days_between(from_iso(last), now),
                                  score_weight=cfg.score_weight, recency_rate=cfg.recency_rate)
            created_at = from_iso(created)
            scored.append((weight, created_at.timestamp() if created_at else 0.0, int(rowid), memory_id))
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
        """Give freed pages back to the file system (after the archiving has committed)."""
        db = self._db
        if db.read_only:
            return 0, False
        if db.dialect == "postgresql":
            pages = "SELECT pg_relation_size('memory_chunks') / current_setting('block_size')::bigint"
            before = int(db.scalar(pages) or 0)
            with db.connection() as conn:
                conn.execute("VACUUM memory_chunks")
            return max(0, before - int(db.scalar(pages) or 0)), False
        if self._db.path == ":memory:":
            return 0, False
        try:
            mode = int(db.scalar("PRAGMA auto_vacuum") or 0)
            if mode == 1:  # FULL: SQLite already gave the pages back at commit
                return 0, False
            with db.log_to_ourselves():
                if mode != 2:
                    pages_before = int(db.scalar("PRAGMA page_count") or 0)
                    db.execute("PRAGMA auto_vacuum = INCREMENTAL")
                    db.execute("VACUUM")  # the one full rewrite that makes incremental vacuum possible
                    reclaimed, switched = max(0, pages_before - int(db.scalar("PRAGMA page_count") or 0)), True
                else:
                    reclaimed = int(db.scalar("PRAGMA freelist_count") or 0)
                    left = reclaimed
                    while left:  # SQLite 3.40 can end a pass with pages that moving the others freed
                        db.query("PRAGMA incremental_vacuum")  # fetch all: each step frees pages
                        left, before = int(db.scalar("PRAGMA freelist_count") or 0), left
                        if left >= before:
                            break
                    switched = False
                db.query("PRAGMA wal_checkpoint(TRUNCATE)")
            return reclaimed, switched
        except StorageError as exc:  # another connection is busy: the archive is done, space comes next time
            logger.warning("size-prune archived rows but could not reclaim space now: %s", exc)
            return 0, False

    def _file_bytes(self) -> int:
        return self._db.storage_bytes()

"""Task memory (seed 000, layer 2): a task's iteration cycles and findings, flushed on completion.

While a task runs, its cycles (score, decision, tokens, duration) and evaluation findings
(severity, dimension, title, location, fix, resolved_in) live in process, in a
:class:`TaskRecorder`. Completing it writes ``tasks``, ``iteration_cycles`` and ``findings``
in one transaction, indexes a summary of the task (kind ``"task"``, for "similar past tasks"
in recall), updates skill effectiveness, logs a usage event, and then extracts learnings.

Nothing is lost if the task never completes: every step is also appended to
``task_journal``, a write-ahead journal in the same file. Leaving a ``with`` block, calling
:meth:`TaskRecorder.abandon`, or closing the store flushes an unfinished task with status
``abandoned`` (``failed`` after an exception); a task whose process died is replayed from
the journal with status ``interrupted`` by :meth:`TaskMemory.recover` (run when
``store.tasks`` is first used, and by maintenance).

>>> from shared_core import MemoryStore
>>> with MemoryStore.open(":memory:") as store:
...     with store.tasks.start("Fix the login timeout", category="bugfix") as task:
...         _ = task.cycle(0.85, "continue")
...         _ = task.cycle(0.72, "continue")
...         outcome = task.complete()
...     [l.type.value for l in outcome.learnings.created]
['AntiPattern']
"""

from __future__ import annotations

import builtins
import json
import logging
import os
import secrets
import socket
import threading
import weakref
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..clock import from_iso, to_iso
from ..conversations.service import Conversations
from ..errors import NotFoundError
from ..learnings.records import ExtractionReport
from ..learnings.service import Learnings
from ..memories import DEFAULT_NAMESPACE, NewMemory, check_namespace, new_id
from ..skills.service import Skills
from ..usage import Usage
from .records import (
    TASK_STATUSES,
    Cycle,
    Finding,
    TaskOutcome,
    TaskRecord,
    cycle_json,
    json_default,
    optional_text,
    required_text,
    task_count,
    task_score,
)
from .repository import TaskRepository

if TYPE_CHECKING:
    from ..kernel import Kernel

__all__ = ["TaskMemory", "TaskRecorder"]

logger = logging.getLogger("openkoi.tasks")

# who is recording: a journal entry whose owner is dead gets recovered
_TOKEN = secrets.token_hex(4)
_HOST = socket.gethostname()
# recorders alive in this process, by task id (weak: a forgotten recorder becomes recoverable)
_ACTIVE: weakref.WeakValueDictionary[str, TaskRecorder] = weakref.WeakValueDictionary()
_ACTIVE_LOCK = threading.Lock()


def _owner() -> str:
    return f"{_HOST}:{os.getpid()}:{_TOKEN}"


class TaskRecorder:
    """A task in progress. Use as a context manager, or call :meth:`complete` / :meth:`abandon`."""

    def __init__(self, memory: TaskMemory, record: TaskRecord) -> None:
        self._memory = memory
        self.record = record
        self._lock = threading.RLock()
        self._finished = False

    def __repr__(self) -> str:
        state = self.record.status or "running"
        return f"TaskRecorder({self.record.id!r}, {self.record.description[:40]!r}, {state})"

    @property
    def id(self) -> str:
        return self.record.id

    @property
    def finished(self) -> bool:
        return self._finished

    # -- recording ----------------------------------------------------------------------------

    def cycle(
        self,
        score: float | None = None,
        decision: str = "continue",
        *,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        duration_ms: int | None = None,
    ) -> Cycle:
        """Record the next iteration (numbered from 1): its score (0..1) and the decision after it."""
        with self._lock:
            self._check_running()
            record = self.record
            cycle = Cycle(
                id=new_id(), task_id=record.id, iteration=len(record.cycles) + 1,
                score=task_score(score, "score"), decision=required_text(decision, "decision"),
                input_tokens=task_count(input_tokens, "input_tokens"), output_tokens=task_count(output_tokens, "output_tokens"),
                duration_ms=task_count(duration_ms, "duration_ms"), created_at=self._memory.kernel.clock.now(),
            )
            self._memory._journal(record, {"op": "cycle", **cycle_json(cycle)})
            record.cycles.append(cycle)
            return cycle

    def finding(
        self,
        severity: str,
        dimension: str,
        title: str,
        *,
        description: str | None = None,
        location: str | None = None,
        fix: str | None = None,
        cycle: Cycle | str | int | None = None,
    ) -> Finding:
        """Record an evaluation finding of ``cycle`` (default: the latest cycle)."""
        with self._lock:
            self._check_running()
            owner = self._cycle(cycle)
            finding = Finding(
                id=new_id(), cycle_id=owner.id, severity=required_text(severity, "severity"),
                dimension=required_text(dimension, "dimension"), title=required_text(title, "title"),
                description=optional_text(description, "description"), location=optional_text(location, "location"),
                fix=optional_text(fix, "fix"),
            )
            self._memory._journal(self.record, {"op": "finding", **finding.__dict__})
            self.record.findings.append(finding)
            return finding

    def resolve(self, finding: Finding | str, *, cycle: Cycle | str | int | None = None) -> Finding:
        """Mark a finding fixed in ``cycle`` (default: the latest cycle)."""
        with self._lock:
            self._check_running()
            finding_id = finding.id if isinstance(finding, Finding) else finding
            index = next((i for i, f in enumerate(self.record.findings) if f.id == finding_id), None)
            if index is None:
                raise NotFoundError(f"task {self.record.id!r} has no finding {finding_id!r}")
            resolved_in = self._cycle(cycle)
            self._memory._journal(self.record, {"op": "resolve", "finding": finding_id, "cycle": resolved_in.id})
            updated = Finding(**{**self.record.findings[index].__dict__, "resolved_in": resolved_in.id})
            self.record.findings[index] = updated
            return updated

    def use_skill(self, *names: str) -> None:
        """Note skills the task used (their effectiveness is updated on completion)."""
        with self._lock:
            self._check_running()
            for name in names:
                name = required_text(name, "skill name").strip()
                if name not in self.record.skills:
                    self._memory._journal(self.record, {"op": "skill", "name": name})
                    self.record.skills.append(name)

    # -- finishing ----------------------------------------------------------------------------

    def complete(
        self,
        *,
        final_score: float | None = None,
        decision: str | None = None,
        total_cost_usd: float | None = None,
        extract: bool = True,
    ) -> TaskOutcome:
        """Flush the task (one transaction), then extract learnings from it.

        ``final_score`` and ``decision`` default to the last cycle's. Extraction never loses
        the task: it runs after the flush, and a text model's bad answer falls back to the rules.
        """
        with self._lock:
            self._check_running()
            record = self.record
            if final_score is not None:
                record.final_score = task_score(final_score, "final_score")
            elif record.cycles:
                record.final_score = record.cycles[-1].score
            if decision is not None:
                record.decision = required_text(decision, "decision")
            elif record.cycles:
                record.decision = record.cycles[-1].decision
            if total_cost_usd is not None:
                if isinstance(total_cost_usd, bool) or not isinstance(total_cost_usd, (int, float)) or total_cost_usd < 0:
                    raise ValueError(f"total_cost_usd must be a non-negative number, got {total_cost_usd!r}")
                record.total_cost_usd = float(total_cost_usd)
            skills = self._memory._flush(record, "completed")
            self._done()
        report = None
        if extract:
            try:
                report = self._memory.kernel.service(Learnings).extract(record)
            except Exception as exc:  # the task is flushed already; extraction can be retried later
                logger.exception("learning extraction failed for task %s; retry with store.learnings.extract("
                                 "store.tasks.get(%r))", record.id, record.id)
                report = ExtractionReport(task_id=record.id, error=f"{type(exc).__name__}: {exc}")
        return TaskOutcome(task=record, learnings=report, skills_updated=skills)

    def abandon(self, status: str = "abandoned") -> TaskRecord:
        """Flush an unfinished task as it stands (``abandoned`` or ``failed``); no learnings."""
        if status not in ("abandoned", "failed"):
            raise ValueError(f"an unfinished task is 'abandoned' or 'failed', not {status!r}")
        with self._lock:
            self._check_running()
            self._memory._flush(self.record, status)
            self._done()
            return self.record

    def __enter__(self) -> TaskRecorder:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if not self._finished:
            self.abandon("failed" if exc_type is not None else "abandoned")

    # -- helpers ------------------------------------------------------------------------------

    def _check_running(self) -> None:
        if self._finished:
            raise ValueError(f"task {self.record.id!r} is already {self.record.status}; start a new task")
        self._memory.kernel.backend.check_open()

    def _done(self) -> None:
        self._finished = True
        with _ACTIVE_LOCK:
            if _ACTIVE.get(self.record.id) is self:
                del _ACTIVE[self.record.id]

    def _cycle(self, cycle: Cycle | str | int | None) -> Cycle:
        cycles = self.record.cycles
        if not cycles:
            raise ValueError("record a cycle first: findings belong to an evaluation (task.cycle(score, decision))")
        if cycle is None:
            return cycles[-1]
        if isinstance(cycle, Cycle):
            cycle = cycle.id
        for c in cycles:
            if (isinstance(cycle, int) and not isinstance(cycle, bool) and c.iteration == cycle) or c.id == cycle:
                return c
        raise NotFoundError(f"task {self.record.id!r} has no cycle {cycle!r}")


class TaskMemory:
    """``store.tasks``: start tasks, read them back, recover unfinished ones."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self._repo = TaskRepository(kernel.backend)
        self._recorders: weakref.WeakSet[TaskRecorder] = weakref.WeakSet()
        if not self.kernel.backend.read_only:
            try:
                self.recover()
            except Exception:  # never let recovery stop the caller from using tasks
                logger.exception("could not recover unfinished tasks from the journal; retry with store.tasks.recover()")

    def start(
        self,
        description: str,
        *,
        category: str | None = None,
        namespace: str = DEFAULT_NAMESPACE,
        session_id: str | None = None,
        skills: Sequence[str] = (),
        metadata: dict[str, Any] | None = None,
        id: str | None = None,  # noqa: A002
    ) -> TaskRecorder:
        """Start recording a task; returns its :class:`TaskRecorder`."""
        description = required_text(description, "description")
        check_namespace(namespace)
        category = optional_text(category, "category")
        if metadata is not None and not isinstance(metadata, dict):
            raise TypeError(f"metadata must be a dict, got {type(metadata).__name__}")
        task_id = id if id is not None else new_id()
        required_text(task_id, "id")
        with self.kernel.session():
            if self._repo.exists(task_id) or self._repo.journaled(task_id):
                raise ValueError(f"a task with id {task_id!r} already exists; choose another id")
            clash = self.kernel.memories.get_row(task_id)
            if clash is not None:
                raise ValueError(f"id {task_id!r} is already used by a memory of kind {clash.kind!r}; choose another id")
        record = TaskRecord(
            id=task_id, description=description, namespace=namespace, category=category, session_id=session_id,
            created_at=self.kernel.clock.now(), metadata=dict(metadata or {}),
        )
        recorder = TaskRecorder(self, record)
        self._journal(record, {"op": "start", "description": description, "category": category,
                               "session_id": session_id, "metadata": record.metadata,
                               "created_at": to_iso(record.created_at)})
        with _ACTIVE_LOCK:
            _ACTIVE[task_id] = recorder
        self._recorders.add(recorder)
        recorder.use_skill(*skills)
        return recorder

    @property
    def active(self) -> list[TaskRecorder]:
        """Tasks started through this store and not yet flushed."""
        return [r for r in list(self._recorders) if not r.finished]

    def close_all(self) -> int:
        """Flush every unfinished task as ``abandoned`` (the store does this when it closes)."""
        count = 0
        for recorder in self.active:
            try:
                recorder.abandon()
                count += 1
            except Exception:
                logger.exception("could not flush task %s on close; it stays in the journal", recorder.id)
        return count

    # -- reading ------------------------------------------------------------------------------

    def get(self, task_id: str, *, namespace: str | None = None) -> TaskRecord:
        """A flushed task with its cycles and findings, or :class:`NotFoundError`."""
        with self.kernel.session():
            record = self._repo.get(task_id)
        if record is None or (namespace is not None and record.namespace != namespace):
            where = f" in namespace {namespace!r}" if namespace is not None else ""
            raise NotFoundError(f"no task with id {task_id!r}{where}")
        return record

    def list(
        self,
        *,
        namespace: str = DEFAULT_NAMESPACE,
        category: str | None = None,
        status: str | None = None,
        limit: int | None = 50,
    ) -> list[TaskRecord]:
        """Flushed tasks, newest first."""
        check_namespace(namespace)
        if status is not None and status not in TASK_STATUSES:
            raise ValueError(f"status must be one of {', '.join(TASK_STATUSES)}, got {status!r}")
        with self.kernel.session():
            return self._repo.in_namespace(namespace, category=category, status=status, limit=limit)

    # -- the journal and the flush --------------------------------------------------------------

    def _journal(self, record: TaskRecord, entry: dict[str, Any]) -> None:
        if not self.kernel.config.memory.task_journal:
            return
        with self.kernel.session(write=True):
            self._repo.journal(record.id, record.namespace, _owner(),
                               json.dumps(entry, ensure_ascii=False, default=json_default), self.kernel.clock.now())

    def _flush(self, record: TaskRecord, status: str) -> builtins.list[str]:
        """Write the task, its cycles and findings, its index entry, skill effectiveness and a usage
        event in one transaction, and drop its journal. Returns the skills whose effectiveness moved."""
        now = self.kernel.clock.now()
        record.status = status
        record.iterations = len(record.cycles)
        if status == "completed":
            record.completed_at = now
        tokens = [(c.input_tokens or 0) + (c.output_tokens or 0) for c in record.cycles
                  if c.input_tokens is not None or c.output_tokens is not None]
        record.total_tokens = sum(tokens) if tokens else None
        (chunk,) = self.kernel.memories.prepare([NewMemory(
            text=record.summary(), id=record.id, kind="task", namespace=record.namespace, category=record.category,
            source="task", task_id=record.id, owner_id=record.id, session_id=record.session_id,
            created_at=record.created_at,
            metadata={"status": status, "final_score": record.final_score, "iterations": record.iterations,
                      "decision": record.decision, "skills": record.skills},
        )])
        updated: list[str] = []
        with self.kernel.session(write=True):
            self._ensure_session(record.session_id, now)
            self._repo.insert(record, now)
            self.kernel.memories.write(chunk, dedup=False)
            if status == "completed" and record.final_score is not None:
                category = record.category or self.kernel.config.learning.default_category
                for skill in record.skills:
                    self.kernel.service(Skills).record(skill, category, record.final_score, namespace=record.namespace)
                    updated.append(skill)
            if self.kernel.config.usage.log_tasks:
                self.kernel.service(Usage).log(
                    "task", description=record.description, category=record.category, skills=record.skills,
                    score=record.final_score, namespace=record.namespace,
                    channel=record.metadata.get("channel") if isinstance(record.metadata.get("channel"), str) else None,
                    at=record.created_at,
                )
            self._repo.drop_journal(record.id)
        return updated

    # -- recovery -----------------------------------------------------------------------------

    def recover(self, *, force: bool = False) -> builtins.list[str]:
        """Flush journaled tasks whose process is gone (``interrupted``); return their ids.

        A journal belongs to a dead process when its owner ran on this host and that process
        no longer exists (or is this process and no recorder holds the task any more), or when
        it has not been written for ``memory.task_stale_hours``. ``force=True`` recovers every
        journaled task not held by a recorder of this process.
        """
        with self.kernel.session():
            journaled = self._repo.journaled_tasks()
        recovered: list[str] = []
        now = self.kernel.clock.now()
        stale_seconds = self.kernel.config.memory.task_stale_hours * 3600
        for task in journaled:
            task_id = task.task_id
            with _ACTIVE_LOCK:
                held = task_id in _ACTIVE
            if held:
                continue
            stale = task.last_write is not None and (now - task.last_write).total_seconds() >= stale_seconds
            if not (force or stale or _owner_gone(task.owner)):
                continue
            record = self._replay(task_id)
            if record is None:
                continue
            with self.kernel.session():
                if self._repo.exists(task_id):  # flushed, journal left behind
                    with self.kernel.session(write=True):
                        self._repo.drop_journal(task_id)
                    continue
                self._flush(record, "interrupted")
            recovered.append(task_id)
            logger.info("recovered interrupted task %s from the journal", task_id)
        return recovered

    def _replay(self, task_id: str) -> TaskRecord | None:
        with self.kernel.session():
            journal = self._repo.journal_of(task_id)
        record: TaskRecord | None = None
        for step in journal:
            try:
                entry = json.loads(step.entry)
            except json.JSONDecodeError:
                logger.warning("skipping an unreadable journal entry of task %s", task_id)
                continue
            op = entry.pop("op", None)
            if op == "start":
                record = TaskRecord(
                    id=task_id, description=entry.get("description") or "(unknown task)", namespace=step.namespace,
                    category=entry.get("category"), session_id=entry.get("session_id"),
                    created_at=from_iso(entry.get("created_at")) or step.created_at,
                    metadata=entry.get("metadata") or {},
                )
            elif record is None:
                continue
            elif op == "cycle":
                entry["created_at"] = from_iso(entry.get("created_at"))
                record.cycles.append(Cycle(**entry))
            elif op == "finding":
                record.findings.append(Finding(**entry))
            elif op == "resolve":
                record.findings = [Finding(**{**f.__dict__, "resolved_in": entry["cycle"]}) if f.id == entry["finding"]
                                   else f for f in record.findings]
            elif op == "skill" and entry.get("name") not in record.skills:
                record.skills.append(entry["name"])
        return record

    def _ensure_session(self, session_id: str | None, now: datetime) -> None:
        """tasks.session_id references a conversation's session: its row is made if there is none yet."""
        stamp = to_iso(now)
        if session_id is not None and stamp is not None:
            self.kernel.service(Conversations).repository.ensure_session(session_id, stamp)

    def erase(self, namespace: str) -> None:
        """Remove a namespace's tasks, cycles, findings and journal (learnings go first: they point here).

        Tasks of the namespace still recording in this store are dropped too, so they cannot write
        the erased data back when they finish."""
        for recorder in self.active:
            if recorder.record.namespace == namespace:
                recorder.record.status = "erased"
                recorder._done()
        self.kernel.service(Learnings).detach_tasks(self._repo.ids_in(namespace))
        self._repo.erase(namespace)


# -- helpers ------------------------------------------------------------------------------------


def _owner_gone(owner: str) -> bool:
    host, _, rest = owner.partition(":")
    pid_text, _, token = rest.partition(":")
    if host != _HOST:
        return False  # another machine: only staleness can tell
    try:
        pid = int(pid_text)
    except ValueError:
        return True
    if token == _TOKEN:
        return True  # this process wrote it, and no live recorder holds the task
    if pid == os.getpid():
        return True  # an earlier process with our pid: it is gone
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except (PermissionError, OSError):
        return False
    return False

"""Learnings (seed 000): Heuristic, AntiPattern and Preference, extracted from finished tasks.

Every completed task goes through two tiers of extraction:

* rules (0 tokens): a score drop of more than 0.1 between iterations is an ``AntiPattern``;
  3+ iterations whose last one improved by less than 0.02 is a ``Heuristic`` (fewer
  iterations would do); 2+ blocker findings in one dimension is an ``AntiPattern``;
* a text model (about 500 tokens), only when the task ran 2+ cycles and some evaluation had
  3+ findings: 1-3 single-sentence learnings. A model that fails or answers badly is logged
  and ignored; the rules' learnings and the task are kept either way.

A candidate more than 0.8 similar (cosine of the embeddings) to a live learning of the same
type and category in the namespace, and saying the same words (case, punctuation, articles and
contractions aside: :mod:`shared_core.restatement`), reinforces that learning instead: confidence + 0.1
(capped at 1.0), ``reinforced`` + 1, ``last_used`` = now.

Confidence decays as ``base x exp(-0.05 x weeks since last reinforced)``, where ``base`` is
the confidence set at the last reinforcement (or creation): computed from the age, never
compounded, so it does not matter how often maintenance runs. Below 0.1 a learning is
pruned by :meth:`Learnings.apply_decay`: archived (reason ``"decayed"``), or deleted when
``memory.archive_pruned`` is false. Pinned learnings do not decay.

Each learning is a row of ``learnings`` and a memory of kind ``"learning"`` with the same id
(the index entry carries its text, so search and recall find it). The index entry is the
handle: a learning whose memory was deleted or archived is no longer live.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import numpy as np

from .archive import Archive
from .clock import from_iso, to_iso
from .errors import NotFoundError
from .learning_records import (
    DecayReport,
    ExtractionReport,
    Learning,
    LearningCandidate,
    LearningType,
    learning_sentence,
)
from .learning_rules import model_learnings, rule_learnings, wants_model
from .llm import TextModel
from .memories import DEFAULT_NAMESPACE, NewMemory, check_namespace, new_id
from .memories.service import MemoryService
from .ranking import (
    decayed_confidence,
    is_pruned,
    learning_recall_score,
    reinforced_confidence,
    weeks_since_reinforced,
)
from .restatement import is_restatement
from .validation import unit_or_none

if TYPE_CHECKING:
    from .kernel import Kernel
    from .task_records import TaskRecord

__all__ = ["Learnings"]

logger = logging.getLogger("openkoi.learnings")

_COLUMNS = ("l.id, l.type, l.content, l.category, l.confidence, l.base_confidence, l.source_task, l.reinforced, "
            "l.created_at, l.last_used, l.expires_at, l.namespace, l.origin, c.pinned, c.chunk_rowid")


class Learnings:
    """``store.learnings``: add, reinforce, extract, decay and query learnings."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel

    # -- reading ------------------------------------------------------------------------------

    def get(self, learning_id: str, *, namespace: str | None = None) -> Learning:
        """A live learning (its index entry exists), or :class:`NotFoundError`."""
        with self.kernel.session():
            rows = self._rows("l.id = ?", [learning_id])
        if not rows or (namespace is not None and rows[0].namespace != namespace):
            where = f" in namespace {namespace!r}" if namespace is not None else ""
            raise NotFoundError(f"no live learning with id {learning_id!r}{where}")
        return rows[0]

    def list(
        self,
        *,
        namespace: str = DEFAULT_NAMESPACE,
        type: LearningType | str | Sequence[LearningType | str] | None = None,  # noqa: A002
        category: str | None = None,
        min_confidence: float | None = None,
        include_expired: bool = False,
        limit: int | None = None,
    ) -> list[Learning]:
        """Live learnings, most confident first (current, decayed confidence)."""
        clauses, params = ["l.namespace = ?"], [check_namespace(namespace)]
        types = _types(type)
        if types is not None:
            clauses.append(f"l.type IN ({', '.join('?' for _ in types)})")
            params.extend(t.value for t in types)
        if category is not None:
            clauses.append("l.category = ?")
            params.append(category)
        with self.kernel.session():
            found = self._rows(" AND ".join(clauses), params)
        now = self.kernel.clock.now()
        if not include_expired:
            found = [x for x in found if x.expires_at is None or x.expires_at > now]
        if min_confidence is not None:
            found = [x for x in found if x.confidence >= min_confidence]
        found.sort(key=lambda x: (-x.confidence, -(x.created_at.timestamp() if x.created_at else 0.0)))
        return found[:limit] if limit is not None else found

    def _rows(self, where: str, params: list[Any]) -> list[Learning]:
        rows = self.kernel.backend.query(
            f"SELECT {_COLUMNS} FROM learnings l JOIN memory_chunks c ON c.id = l.id WHERE {where}", params
        )
        now = self.kernel.clock.now()
        return [self._from_row(r, now) for r in rows]

    def _from_row(self, row: Sequence[Any], now: datetime) -> Learning:
        base = float(row[5] if row[5] is not None else row[4])
        created, last_used, pinned = from_iso(row[8]), from_iso(row[9]), bool(row[13])
        return Learning(
            id=row[0], type=LearningType.parse(row[1]), content=row[2], category=row[3],
            confidence=self._current(base, last_used or created, now, pinned), base_confidence=base,
            source_task=row[6], reinforced=int(row[7] or 0), created_at=created, last_used=last_used,
            expires_at=from_iso(row[10]), namespace=row[11], origin=row[12], pinned=pinned,
        )

    def _current(self, base: float, since: datetime | None, now: datetime, pinned: bool) -> float:
        if pinned or since is None:
            return base
        days = (now - since).total_seconds() / 86400.0
        return decayed_confidence(base, weeks_since_reinforced(days), self.kernel.config.memory.learning_decay_rate)

    # -- writing ------------------------------------------------------------------------------

    def add(
        self,
        content: str,
        type: LearningType | str = LearningType.HEURISTIC,  # noqa: A002
        *,
        category: str | None = None,
        namespace: str = DEFAULT_NAMESPACE,
        confidence: float | None = None,
        source_task: str | None = None,
        expires_at: datetime | str | None = None,
        ttl: float | timedelta | None = None,
        pinned: bool = False,
        dedup: bool = True,
    ) -> Learning:
        """Store a learning by hand; a similar live one (> 0.8) is reinforced and returned instead."""
        candidate = LearningCandidate(LearningType.parse(type), learning_sentence(content), category, "manual")
        created, reinforced = self._persist(
            [candidate], namespace=check_namespace(namespace), source_task=source_task, confidence=confidence,
            expires_at=expires_at, ttl=ttl, pinned=pinned, dedup=dedup,
        )
        return (created or reinforced)[0]

    def reinforce(self, learning_id: str, *, namespace: str | None = None) -> Learning:
        """The learning proved useful: confidence + bump (capped at 1.0) from its current value,
        ``reinforced`` + 1, ``last_used`` = now (which restarts its decay clock)."""
        with self.kernel.session() as db:
            learning = self.get(learning_id, namespace=namespace)
            now = self.kernel.clock.now()
            if learning.expires_at is not None and learning.expires_at <= now:
                raise ValueError(f"learning {learning_id!r} expired at {to_iso(learning.expires_at)}; add it again")
            with db.transaction():
                self._reinforce_rows([learning], now)
            return self.get(learning_id)

    def _reinforce_rows(self, learnings: Iterable[Learning], now: datetime) -> None:
        bump = self.kernel.config.memory.learning_reinforce_bump
        for learning in learnings:
            value = reinforced_confidence(learning.confidence, bump)
            self.kernel.backend.execute(
                "UPDATE learnings SET base_confidence = ?, confidence = ?, reinforced = reinforced + 1, last_used = ? "
                "WHERE id = ?", (value, value, to_iso(now), learning.id),
            )
            self.kernel.memories.set_confidence([(value, learning.id)])

    def restore(self, learning_id: str, *, confidence: float | None = None) -> Learning:
        """Bring back a learning pruned into the archive, with a fresh decay clock at ``confidence``
        (default ``memory.learning_initial_confidence``). ``store.restore`` alone would keep the old
        confidence, and the next maintenance would prune it again."""
        value = self.kernel.config.memory.learning_initial_confidence if confidence is None else \
            unit_or_none(confidence, "confidence")
        with self.kernel.session(write=True) as db:
            if not db.scalar("SELECT 1 FROM learnings WHERE id = ?", (learning_id,)):
                raise NotFoundError(f"no learning with id {learning_id!r}")
            self.kernel.service(Archive).restore(learning_id)
            db.execute(
                "UPDATE learnings SET base_confidence = ?, confidence = ?, last_used = ? WHERE id = ?",
                (value, value, to_iso(self.kernel.clock.now()), learning_id),
            )
            self.kernel.memories.set_confidence([(value, learning_id)])
        return self.get(learning_id)

    def _persist(
        self,
        candidates: Sequence[LearningCandidate],
        *,
        namespace: str,
        source_task: str | None,
        confidence: float | None = None,
        expires_at: datetime | str | None = None,
        ttl: float | timedelta | None = None,
        pinned: bool = False,
        dedup: bool = True,
    ) -> tuple[list[Learning], list[Learning]]:
        """Dedup against live learnings and each other, then write in one transaction."""
        if not candidates:
            return [], []
        cfg = self.kernel.config.memory
        initial = cfg.learning_initial_confidence if confidence is None else unit_or_none(confidence, "confidence")
        vectors = self.kernel.embed([c.content for c in candidates])
        plan: list[tuple[LearningCandidate, np.ndarray, str | None]] = []  # (candidate, vector, existing id)
        fresh: list[tuple[LearningCandidate, np.ndarray, int]] = []  # new ones so far, with their plan index
        with self.kernel.session() as db:
            for candidate, vector in zip(candidates, vectors, strict=False):
                target: str | None = None
                if dedup:
                    target = self._similar(candidate, vector, namespace)
                    if target is None:
                        for other, other_vector, index in fresh:
                            if (other.type, other.category) == (candidate.type, candidate.category) and \
                                    float(other_vector @ vector) > cfg.learning_dedup_threshold and \
                                    is_restatement(candidate.content, other.content):
                                target = f"#{index}"
                                break
                if target is None:
                    fresh.append((candidate, vector, len(plan)))
                plan.append((candidate, vector, target))
            new_ids = {index: new_id() for _, _, index in fresh}
            items = [
                NewMemory(
                    text=c.content, id=new_ids[i], kind="learning", namespace=namespace, category=c.category,
                    source=c.origin, tags=[c.type.value], confidence=initial, pinned=pinned, task_id=source_task,
                    owner_id=new_ids[i], expires_at=expires_at, ttl=ttl, vector=v,
                    metadata={"learning_type": c.type.value, "learning_category": c.category or "",
                              "origin": c.origin, "source_task": source_task},
                )
                for c, v, i in fresh
            ]
            prepared = self.kernel.memories.prepare(items)
            now = self.kernel.clock.now()
            reinforce_ids: list[str] = []
            with db.transaction():
                for item, (candidate, _, index) in zip(prepared, fresh, strict=False):
                    db.execute(
                        "INSERT INTO learnings (id, type, content, category, confidence, source_task, reinforced, "
                        "created_at, last_used, expires_at, namespace, base_confidence, origin) "
                        "VALUES (?, ?, ?, ?, ?, ?, 0, ?, NULL, ?, ?, ?, ?)",
                        (new_ids[index], candidate.type.value, candidate.content, candidate.category, initial,
                         _task_ref(db, source_task), to_iso(now), to_iso(item.expires_at), namespace, initial,
                         candidate.origin),
                    )
                    self.kernel.memories.write(item, dedup=False)
                for _, _, target in plan:
                    if target is None:
                        continue
                    reinforce_ids.append(new_ids[int(target[1:])] if target.startswith("#") else target)
                for learning_id in reinforce_ids:  # one at a time: the same one may be hit twice
                    self._reinforce_rows(self._rows("l.id = ?", [learning_id]), now)
            created = self._rows(f"l.id IN ({', '.join('?' for _ in new_ids)})", list(new_ids.values())) \
                if new_ids else []
            order = {lid: i for i, lid in enumerate(new_ids.values())}
            created.sort(key=lambda x: order[x.id])
            reinforced = [self.get(lid) for lid in dict.fromkeys(reinforce_ids)]
        return created, reinforced

    def _similar(self, candidate: LearningCandidate, vector: np.ndarray, namespace: str) -> str | None:
        """The live learning of the same type and category that ``candidate`` restates: above 0.8
        similar and the same words (:func:`~shared_core.restatement.is_restatement`). A similar
        learning that says something else (a reversed preference, another number) is not one."""
        hits = self.kernel.service(MemoryService).search(
            vector=vector, kind="learning", namespace=namespace, fusion="vector", limit=3, track_access=False,
            where={"learning_type": candidate.type.value, "learning_category": candidate.category or ""},
        )
        threshold = self.kernel.config.memory.learning_dedup_threshold
        for hit in hits:
            if (hit.parts.similarity or 0.0) > threshold and is_restatement(candidate.content, hit.text):
                return hit.id
        return None

    # -- extraction ---------------------------------------------------------------------------

    def extract(self, task: TaskRecord, *, model: TextModel | None = None, use_model: bool = True) -> ExtractionReport:
        """Seed 000's extraction flow for a finished task: rules, then (if warranted) the text model,
        then dedup/reinforce, then persist. ``model`` defaults to ``store.text_model``."""
        cfg = self.kernel.config.learning
        report = ExtractionReport(task_id=task.id)
        candidates = rule_learnings(task, self.kernel.config)
        report.rule_candidates = len(candidates)
        model = model if model is not None else self.kernel.text_model
        if use_model and model is not None and wants_model(task, self.kernel.config):
            report.model_used = True
            try:
                found = model_learnings(task, model, self.kernel.config)
            except Exception as exc:  # a failing or misbehaving model never costs the task or the rules
                report.model_error = f"{type(exc).__name__}: {exc}"
                logger.warning("learning extraction by the text model failed for task %s (%s); using the rules only",
                               task.id, report.model_error)
            else:
                report.model_candidates = len(found)
                candidates += found[: cfg.model_max_learnings]
        with self.kernel.session() as db:
            source = task.id if db.scalar("SELECT 1 FROM tasks WHERE id = ?", (task.id,)) else None
        report.created, report.reinforced = self._persist(candidates, namespace=task.namespace, source_task=source)
        return report

    # -- decay --------------------------------------------------------------------------------

    def apply_decay(self) -> DecayReport:
        """Bring every learning's stored confidence up to date and prune those below the threshold.

        Computed from ``base_confidence`` and the whole days since ``last_used`` (or creation),
        so one run after 8 weeks and 56 daily runs give the same 0.54. Pruned learnings go to the
        archive (reason ``"decayed"``) unless ``memory.archive_pruned`` is false. Pinned learnings
        are left alone. Running it twice in a row changes nothing the second time.
        """
        cfg = self.kernel.config.memory
        with self.kernel.session() as db:
            now = self.kernel.clock.now()
            rows = db.query(f"SELECT {_COLUMNS} FROM learnings l JOIN memory_chunks c ON c.id = l.id")
            updates: list[tuple[float, str]] = []
            pruned: list[tuple[str, int]] = []
            for row in rows:
                learning = self._from_row(row, now)
                if not learning.pinned and is_pruned(learning.confidence, cfg.learning_prune_threshold):
                    pruned.append((learning.id, int(row[14])))
                if row[4] is None or abs(float(row[4]) - learning.confidence) > 1e-12:
                    updates.append((learning.confidence, learning.id))
            orphans_sql = ("FROM learnings WHERE id NOT IN (SELECT id FROM memory_chunks) "
                           "AND id NOT IN (SELECT id FROM memory_archive)")
            orphans = int(db.scalar(f"SELECT count(*) {orphans_sql}") or 0)
            archived = deleted = 0
            if updates or pruned or orphans:
                with db.transaction():
                    db.executemany("UPDATE learnings SET confidence = ? WHERE id = ?", updates)
                    self.kernel.memories.set_confidence(updates)
                    rowids = [rowid for _, rowid in pruned]
                    if rowids and cfg.archive_pruned:
                        archived = self.kernel.archive.move(rowids, "decayed")
                    elif rowids:
                        deleted = self.kernel.memories.delete_rows(rowids)
                        db.executemany("DELETE FROM learnings WHERE id = ?", [(lid,) for lid, _ in pruned])
                    if orphans:
                        db.execute(f"DELETE {orphans_sql}")
            return DecayReport(
                checked=len(rows), updated=len(updates), pruned=len(pruned), archived=archived, deleted=deleted,
                orphans_removed=orphans, pruned_ids=tuple(lid for lid, _ in pruned),
            )

    # -- recall -------------------------------------------------------------------------------

    def relevant(
        self,
        task_description: str,
        *,
        types: Sequence[LearningType | str],
        limit: int,
        category: str | None = None,
        namespace: str = DEFAULT_NAMESPACE,
        candidates: int = 20,
    ) -> list[tuple[Learning, float]]:
        """Live, unexpired, unpruned learnings of ``types`` that match a task, best first, with scores.

        A learning matches when the hybrid search finds it for the description, or it comes from
        the task's category; it ranks by ``(search score + category boost) x confidence``.
        """
        if limit <= 0:
            return []
        wanted = [LearningType.parse(t).value for t in types]
        relevance: dict[str, float] = {}
        if task_description and task_description.strip():
            for hit in self.kernel.service(MemoryService).search(
                task_description, kind="learning", namespace=namespace, limit=candidates, track_access=False,
                where={"learning_type": {"$in": wanted}},
            ):
                relevance[hit.id] = hit.score
        with self.kernel.session() as db:
            marks = ", ".join("?" for _ in wanted)
            ids = list(relevance)
            if category is not None:
                ids += [r[0] for r in db.query(
                    f"SELECT l.id FROM learnings l JOIN memory_chunks c ON c.id = l.id WHERE l.namespace = ? "
                    f"AND l.category = ? AND l.type IN ({marks}) ORDER BY l.base_confidence DESC, l.created_at DESC "
                    "LIMIT ?", (namespace, category, *wanted, candidates))]
            ids = list(dict.fromkeys(ids))
            found = self._rows(f"l.id IN ({', '.join('?' for _ in ids)})", ids) if ids else []
        now = self.kernel.clock.now()
        threshold = self.kernel.config.memory.learning_prune_threshold
        boost = self.kernel.config.recall.category_boost
        scored: list[tuple[Learning, float]] = []
        for learning in found:
            if learning.expires_at is not None and learning.expires_at <= now:
                continue
            if not learning.pinned and is_pruned(learning.confidence, threshold):
                continue
            same = category is not None and learning.category == category
            score = learning_recall_score(relevance.get(learning.id, 0.0), learning.confidence, same, boost)
            if score > 0:
                scored.append((learning, score))
        scored.sort(key=lambda pair: (-pair[1], -pair[0].confidence, pair[0].id))
        return scored[:limit]

    def is_learning(self, memory_id: str) -> bool:
        """Whether ``memory_id`` is a learning's (live, archived or pruned)."""
        with self.kernel.session() as db:
            return db.scalar("SELECT 1 FROM learnings WHERE id = ?", (memory_id,)) is not None

    def detach_tasks(self, task_ids: Sequence[str]) -> None:
        """The tasks are going (an erase): learnings no longer point at them as their source."""
        ids = list(task_ids)
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            self.kernel.backend.execute(
                f"UPDATE learnings SET source_task = NULL WHERE source_task IN ({', '.join('?' for _ in part)})", part)

    def erase(self, namespace: str) -> None:
        """Remove the namespace's rows (``erase_namespace``)."""
        self.kernel.backend.execute("DELETE FROM learnings WHERE namespace = ?", (namespace,))


def _types(value: Any) -> list[LearningType] | None:
    if value is None:
        return None
    if isinstance(value, (str, LearningType)):
        return [LearningType.parse(value)]
    return [LearningType.parse(v) for v in value]


def _task_ref(db: Any, task_id: str | None) -> str | None:
    """learnings.source_task references tasks(id): keep it only when the task was flushed."""
    if task_id is None:
        return None
    return task_id if db.scalar("SELECT 1 FROM tasks WHERE id = ?", (task_id,)) else None

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

import builtins
import logging
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import numpy as np

from ..archive import Archive
from ..clock import to_iso
from ..errors import NotFoundError
from ..llm import TextModel
from ..memories import DEFAULT_NAMESPACE, NewMemory, check_namespace, new_id
from ..memories.service import MemoryService
from ..ranking import (
    decayed_confidence,
    is_pruned,
    learning_recall_score,
    reinforced_confidence,
    weeks_since_reinforced,
)
from ..restatement import is_restatement
from ..validation import unit_or_none
from .records import (
    DecayReport,
    ExtractionReport,
    Learning,
    LearningCandidate,
    LearningType,
    StoredLearning,
    learning_sentence,
)
from .repository import LearningRepository
from .rules import model_learnings, rule_learnings, wants_model

if TYPE_CHECKING:
    from ..kernel import Kernel
    from ..tasks.records import TaskRecord

__all__ = ["Learnings"]

logger = logging.getLogger("openkoi.learnings")


class Learnings:
    """``store.learnings``: add, reinforce, extract, decay and query learnings."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self._repo = LearningRepository(kernel.backend)

    # -- reading ------------------------------------------------------------------------------

    def get(self, learning_id: str, *, namespace: str | None = None) -> Learning:
        """A live learning (its index entry exists), or :class:`NotFoundError`."""
        with self.kernel.session():
            found = self._live(learning_id)
        if found is None or (namespace is not None and found.namespace != namespace):
            where = f" in namespace {namespace!r}" if namespace is not None else ""
            raise NotFoundError(f"no live learning with id {learning_id!r}{where}")
        return found

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
        check_namespace(namespace)
        types = _types(type)
        with self.kernel.session():
            stored = self._repo.live_in(namespace, types, category)
        now = self.kernel.clock.now()
        found = [self._learning(x, now) for x in stored]
        if not include_expired:
            found = [x for x in found if x.expires_at is None or x.expires_at > now]
        if min_confidence is not None:
            found = [x for x in found if x.confidence >= min_confidence]
        found.sort(key=lambda x: (-x.confidence, -(x.created_at.timestamp() if x.created_at else 0.0)))
        return found[:limit] if limit is not None else found

    def _live(self, learning_id: str) -> Learning | None:
        stored = self._repo.live(learning_id)
        return None if stored is None else self._learning(stored, self.kernel.clock.now())

    def _live_by_ids(self, ids: Sequence[str]) -> builtins.list[Learning]:
        if not ids:
            return []
        now = self.kernel.clock.now()
        return [self._learning(x, now) for x in self._repo.live_by_ids(ids)]

    def _learning(self, row: StoredLearning, now: datetime) -> Learning:
        return Learning(
            id=row.id, type=row.type, content=row.content, category=row.category,
            confidence=self._current(row.base_confidence, row.last_used or row.created_at, now, row.pinned),
            base_confidence=row.base_confidence, source_task=row.source_task, reinforced=row.reinforced,
            created_at=row.created_at, last_used=row.last_used, expires_at=row.expires_at, namespace=row.namespace,
            origin=row.origin, pinned=row.pinned,
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
        with self.kernel.session():
            learning = self.get(learning_id, namespace=namespace)
            now = self.kernel.clock.now()
            if learning.expires_at is not None and learning.expires_at <= now:
                raise ValueError(f"learning {learning_id!r} expired at {to_iso(learning.expires_at)}; add it again")
            with self.kernel.session(write=True):
                self._reinforce_rows([learning], now)
            return self.get(learning_id)

    def _reinforce_rows(self, learnings: Iterable[Learning], now: datetime) -> None:
        bump = self.kernel.config.memory.learning_reinforce_bump
        for learning in learnings:
            value = reinforced_confidence(learning.confidence, bump)
            self._repo.reinforce(learning.id, value, now)
            self.kernel.memories.set_confidence([(value, learning.id)])

    def restore(self, learning_id: str, *, confidence: float | None = None) -> Learning:
        """Bring back a learning pruned into the archive, with a fresh decay clock at ``confidence``
        (default ``memory.learning_initial_confidence``). ``store.restore`` alone would keep the old
        confidence, and the next maintenance would prune it again."""
        value = self._confidence(confidence)
        with self.kernel.session(write=True):
            if not self._repo.exists(learning_id):
                raise NotFoundError(f"no learning with id {learning_id!r}")
            self.kernel.service(Archive).restore(learning_id)
            self._repo.restart(learning_id, value, self.kernel.clock.now())
            self.kernel.memories.set_confidence([(value, learning_id)])
        return self.get(learning_id)

    def _confidence(self, value: float | None) -> float:
        """``value`` checked (0..1), or ``memory.learning_initial_confidence`` when None."""
        checked = unit_or_none(value, "confidence")
        return self.kernel.config.memory.learning_initial_confidence if checked is None else checked

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
    ) -> tuple[builtins.list[Learning], builtins.list[Learning]]:
        """Dedup against live learnings and each other, then write in one transaction."""
        if not candidates:
            return [], []
        cfg = self.kernel.config.memory
        initial = self._confidence(confidence)
        vectors = self.kernel.embed([c.content for c in candidates])
        plan: list[tuple[LearningCandidate, np.ndarray, str | None]] = []  # (candidate, vector, existing id)
        fresh: list[tuple[LearningCandidate, np.ndarray, int]] = []  # new ones so far, with their plan index
        with self.kernel.session():
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
            with self.kernel.session(write=True):
                for item, (candidate, _, index) in zip(prepared, fresh, strict=False):
                    self._repo.insert(new_ids[index], candidate, namespace=namespace, confidence=initial,
                                      source_task=self._task_ref(source_task), created_at=now,
                                      expires_at=item.expires_at)
                    self.kernel.memories.write(item, dedup=False)
                for _, _, target in plan:
                    if target is None:
                        continue
                    reinforce_ids.append(new_ids[int(target[1:])] if target.startswith("#") else target)
                for learning_id in reinforce_ids:  # one at a time: the same one may be hit twice
                    self._reinforce_rows(self._live_by_ids([learning_id]), now)
            created = self._live_by_ids(list(new_ids.values()))
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

    def _task_ref(self, task_id: str | None) -> str | None:
        """learnings.source_task references tasks(id): keep it only when the task was flushed."""
        if task_id is None:
            return None
        return task_id if self._repo.task_exists(task_id) else None

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
        with self.kernel.session():
            source = task.id if self._repo.task_exists(task.id) else None
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
        with self.kernel.session():
            now = self.kernel.clock.now()
            rows = self._repo.all_live()
            updates: builtins.list[tuple[float, str]] = []
            pruned: builtins.list[tuple[str, int]] = []
            for row in rows:
                learning = self._learning(row, now)
                if not learning.pinned and is_pruned(learning.confidence, cfg.learning_prune_threshold):
                    pruned.append((learning.id, row.chunk_rowid))
                if row.stored_confidence is None or abs(row.stored_confidence - learning.confidence) > 1e-12:
                    updates.append((learning.confidence, learning.id))
            orphans = self._repo.count_orphans()
            archived = deleted = 0
            if updates or pruned or orphans:
                with self.kernel.session(write=True):
                    self._repo.set_confidences(updates)
                    self.kernel.memories.set_confidence(updates)
                    rowids = [rowid for _, rowid in pruned]
                    if rowids and cfg.archive_pruned:
                        archived = self.kernel.archive.move(rowids, "decayed")
                    elif rowids:
                        deleted = self.kernel.memories.delete_rows(rowids)
                        self._repo.delete([lid for lid, _ in pruned])
                    if orphans:
                        self._repo.delete_orphans()
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
    ) -> builtins.list[tuple[Learning, float]]:
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
        with self.kernel.session():
            ids = list(relevance)
            if category is not None:
                ids += self._repo.live_ids_of_category(namespace, category, wanted, candidates)
            ids = list(dict.fromkeys(ids))
            found = self._live_by_ids(ids)
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
        with self.kernel.session():
            return self._repo.exists(memory_id)

    def detach_tasks(self, task_ids: Sequence[str]) -> None:
        """The tasks are going (an erase): learnings no longer point at them as their source."""
        self._repo.detach_tasks(task_ids)

    def erase(self, namespace: str) -> None:
        """Remove the namespace's rows (``erase_namespace``)."""
        self._repo.erase(namespace)


def _types(value: Any) -> list[LearningType] | None:
    if value is None:
        return None
    if isinstance(value, (str, LearningType)):
        return [LearningType.parse(value)]
    return [LearningType.parse(v) for v in value]

"""``store.inspector``: what the memory inspector shows, computed from the domains' own services.

Everything here reads, in one namespace at a time: a namespace's overview (counts by kind and tier,
growth by day, the last maintenance, the store's size), one memory with its provenance, version
history, links and the value curves ahead of it, and sessions with their messages and summaries.
Changes go through the services that own them (``MemoryService``, ``Archive``...), never through here.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from ..archive.service import Archive
from ..clock import days_between
from ..conversations.service import Conversations
from ..documents.knowledge_base import KnowledgeBase
from ..errors import NotFoundError
from ..insights import Insights
from ..learnings import Learnings
from ..lifecycle.forgetting import ForgettingEngine
from ..lifecycle.links import LinkGraph
from ..lifecycle.maintenance import STEPS, Maintenance
from ..memories import Memory, check_namespace
from ..memories.activity_repository import RETENTION_DAYS, ActivityDay, day_of
from ..memories.facts import Facts
from ..memories.service import MemoryService
from ..ranking import (
    decayed_confidence,
    insight_decay_factor,
    insight_weight,
    prune_weight,
    weeks_since_reinforced,
)
from .records import (
    CurvePoint,
    GrowthPoint,
    LinkView,
    MaintenanceView,
    MemoryDetail,
    Overview,
    Provenance,
    SessionDetail,
    SessionView,
    ValueCurve,
    Version,
    plain,
)
from .repository import InspectionRepository

if TYPE_CHECKING:
    from ..kernel import Kernel

__all__ = ["Inspector", "CURVE_DAYS", "EDITABLE_KINDS_OWNERS"]

CURVE_DAYS = 180  # how far ahead the value curves look
CURVE_STEP = 5
# the domain that keeps memories of a kind as its own records: change those through that domain
EDITABLE_KINDS_OWNERS = ("memories", "facts")


class Inspector:
    """Read-only views of one namespace for the memory inspector (``openkoi-memory ui``)."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel

    # -- the overview ---------------------------------------------------------------------------

    def overview(self, namespace: str, *, with_store: bool = False) -> Overview:
        """Counts of ``namespace``; ``with_store=True`` adds what concerns every namespace (the file's
        size, what each maintenance step did): for callers allowed to see all of them."""
        check_namespace(namespace)
        kernel = self.kernel
        now = kernel.clock.now()
        with kernel.session() as db:
            repo = InspectionRepository(db)
            growth, total = [], 0
            for day, added in repo.growth(namespace):
                total += added
                growth.append(GrowthPoint(day, added, total))
            size = None
            if with_store:
                size = 0 if db.capabilities.in_memory else db.storage_bytes()
            return Overview(
                namespace=namespace, live_by_kind=repo.live_by_kind(namespace, now),
                archived_by_kind=repo.archived_by_kind(namespace), superseded=repo.superseded(namespace),
                expired=repo.expired(namespace, now), pinned=repo.pinned(namespace),
                message_tiers=repo.message_tiers(namespace), summary_tiers=repo.summary_tiers(namespace),
                documents=repo.documents(namespace), sessions=repo.sessions(namespace), links=repo.links(namespace),
                growth=growth, maintenance=self._maintenance(with_store), file_bytes=size,
            )

    def _maintenance(self, details: bool) -> MaintenanceView:
        maintenance = self.kernel.service(Maintenance)
        run = maintenance.last_run()
        steps: list[dict[str, Any]] = []
        if run is not None:
            order = {name: i for i, name in enumerate(STEPS)}
            steps = [{"name": name, "summary": str(summary) if details else None}
                     for name, summary in sorted(run.last_report.items(), key=lambda kv: order.get(kv[0], len(order)))]
        return MaintenanceView(last_run_at=run.last_run_at if run else None, status=run.last_status if run else None,
                               next_due=maintenance.next_due(), steps=steps)

    # -- one memory ----------------------------------------------------------------------------

    def memory(self, memory_id: str, namespace: str) -> MemoryDetail:
        """A live or archived memory of ``namespace`` with its provenance, history, links and curves."""
        check_namespace(namespace)
        memory, archived = self._find(memory_id, namespace)
        owner = self._owner_domain(memory.kind)
        decays, fate = self.fate(memory)
        return MemoryDetail(
            memory=plain(memory.to_dict()), archived=archived, editable=owner in EDITABLE_KINDS_OWNERS,
            owner_domain=owner, provenance=self._provenance(memory), history=self._history(memory),
            links=self._links(memory), curves=[] if archived else self.curves(memory),
            activity=self.activity(memory.id), decays=decays, fate=fate, as_of=self.kernel.clock.now(),
        )

    def activity(self, memory_id: str) -> list[ActivityDay]:
        """The memory's days with accesses or feedback within the kept window, oldest first."""
        since = self.kernel.clock.now() - timedelta(days=RETENTION_DAYS - 1)
        with self.kernel.session():
            return self.kernel.memories.activity.days(memory_id, since=day_of(since))

    def fate(self, memory: Memory) -> tuple[bool, str]:
        """(whether anything lowers the memory's value or removes it by itself, how its kind leaves)."""
        kind = memory.kind
        ways = []
        if kind == "learning":
            ways.append("its confidence decays with the weeks since it was last used; maintenance archives it "
                        "under the prune threshold")
        if kind == "message":
            ways.append("the forgetting engine judges it by its value when it is old enough for its tier: below "
                        "the threshold it is compressed into a summary")
        if kind == "insight":
            ways.append("its weight decays while nobody accesses it (never below the floor), so it ranks lower "
                        "among insights")
        if kind in self.kernel.config.memory.prune_kinds:
            ways.append("when the store outgrows memory.max_size, size pruning archives the memories of lowest "
                        "rank weight first")
        if kind == "fact":
            ways.append("a newer fact on the same subject supersedes it")
        if memory.expires_at is not None:
            ways.append(f"it expires at {memory.expires_at:%Y-%m-%d %H:%M} UTC (its TTL)")
        if not ways:
            owner = self._owner_domain(kind)
            whose = f"its domain ({owner})" if owner else "you"
            return False, (f"A {kind} never decays and is never forgotten by itself: size pruning skips its kind "
                           f"(memory.prune_kinds) and no maintenance step lowers its value. It stays until {whose} "
                           "changes or deletes it. Its rank weight below only orders search results.")
        if memory.pinned:
            return False, f"Pinned: no lifecycle step archives, compresses or prunes it. Unpinned, {'; '.join(ways)}."
        return True, f"A {kind}: {'; '.join(ways)}."

    def _find(self, memory_id: str, namespace: str) -> tuple[Memory, bool]:
        try:
            return self.kernel.service(MemoryService).get(memory_id, namespace=namespace), False
        except NotFoundError:
            pass
        try:
            return self.kernel.service(Archive).get(memory_id, namespace=namespace), True
        except NotFoundError:
            raise NotFoundError(f"no memory with id {memory_id!r} in namespace {namespace!r}, live or archived") \
                from None

    def _owner_domain(self, kind: str) -> str | None:
        for domain in self.kernel.domains.values():
            if kind in domain.kinds:
                return domain.name
        return None

    def _provenance(self, memory: Memory) -> Provenance:
        document_id = document_name = None
        if memory.kind == "document" and memory.owner_id:
            try:
                document = self.kernel.service(KnowledgeBase).get_document(memory.owner_id,
                                                                           namespace=memory.namespace)
                document_id, document_name = document.id, document.title
            except NotFoundError:
                document_id = memory.owner_id
        return Provenance(source=memory.source, session_id=memory.session_id, document_id=document_id,
                          document_name=document_name, owner_id=memory.owner_id, task_id=memory.task_id)

    def _history(self, memory: Memory) -> list[Version]:
        versions = [m for m in self.kernel.service(Facts).history(memory.id) if m.namespace == memory.namespace]
        if len(versions) <= 1:
            return []
        return [Version(id=m.id, text=m.text, valid_from=m.valid_from or m.created_at, valid_to=m.valid_to,
                        superseded_by=m.superseded_by, reason=m.metadata.get("superseded_reason"),
                        archived=m.archived_at is not None, current=m.superseded_by is None)
                for m in versions]

    def _links(self, memory: Memory, limit: int = 20) -> list[LinkView]:
        links = [link for link in self.kernel.service(LinkGraph).neighbours(memory.id)
                 if link.namespace == memory.namespace][:limit]
        if not links:
            return []
        ids = [link.other for link in links]
        live = {m.id: m for m in self.kernel.service(MemoryService).get_many(ids, namespace=memory.namespace)}
        out = []
        for link in links:
            other = live.get(link.other)
            archived = False
            if other is None:
                try:
                    other = self.kernel.service(Archive).get(link.other, namespace=memory.namespace)
                    archived = True
                except NotFoundError:
                    other = None
            out.append(LinkView(memory_id=link.other, strength=link.strength, text=other.text if other else None,
                                kind=other.kind if other else None, archived=archived, updated_at=link.updated_at))
        return out

    # -- the curves ahead ------------------------------------------------------------------------

    def curves(self, memory: Memory, *, days: int = CURVE_DAYS) -> list[ValueCurve]:
        """How the lifecycle's measures of a live ``memory`` go on over the next ``days`` days if
        nothing happens to it: its rank (every memory), and its domain's own measure (a message's
        forgetting value, a learning's confidence)."""
        now = self.kernel.clock.now()
        curves = [self._rank_curve(memory, now, days)]
        if memory.kind == "message" and memory.owner_id:
            curve = self._message_curve(memory.owner_id, now, days)
            if curve is not None:
                curves.append(curve)
        if memory.kind == "learning":
            curve = self._learning_curve(memory.owner_id or memory.id, memory.namespace, now, days)
            if curve is not None:
                curves.append(curve)
        if memory.kind == "insight":
            curve = self._insight_curve(memory.owner_id or memory.id, memory.namespace, now, days)
            if curve is not None:
                curves.append(curve)
        return curves

    def _rank_curve(self, memory: Memory, now: datetime, days: int) -> ValueCurve:
        cfg = self.kernel.config.ranking
        since = days_between(memory.last_hit_at or memory.created_at, now)
        ends = None if memory.expires_at is None else max(0.0, (memory.expires_at - now).total_seconds() / 86400)

        def rank(day: float) -> float:
            if ends is not None and day >= ends:
                return 0.0
            return prune_weight(memory.score, since + day, score_weight=cfg.score_weight,
                                recency_rate=cfg.recency_rate)

        prunable = memory.kind in self.kernel.config.memory.prune_kinds
        protected = None
        if memory.pinned:
            protected = "pinned: pruning never archives it"
        elif not prunable:
            protected = f"a {memory.kind} is never size-pruned (memory.prune_kinds): this only orders search results"
        return ValueCurve(
            measure="rank", label="rank weight (feedback x recency)",
            explanation=(f"exp({cfg.score_weight:g} x score {memory.score:+g}) x 1 / (1 + {cfg.recency_rate:g} x days "
                         f"since the last hit, now {since:.1f})"
                         + ("; when the store outgrows memory.max_size, pruning archives the lowest first" if prunable
                            else "") + f". Search multiplies relevance by the same with the recency part held at or "
                         f"above {cfg.recency_floor:g}. A search hit or reinforcement resets the days."),
            points=_sample(rank, days), ends_at_day=ends, protected=protected,
        )

    def _insight_curve(self, insight_id: str, namespace: str, now: datetime, days: int) -> ValueCurve | None:
        try:
            insight = self.kernel.service(Insights).get(insight_id, namespace=namespace)
        except NotFoundError:
            return None
        cfg = self.kernel.config.insights
        inactive = days_between(insight.last_access_at or insight.created_at, now)

        def weight(day: float) -> float:
            decay = insight_decay_factor(inactive + day, cfg.decay_bands, cfg.decay_period_days)
            return insight_weight(insight.custom_weight, decay_factor=decay, floor=cfg.weight_floor, cap=cfg.weight_cap)

        bands = ", ".join(f"x{rate:g} a day after {start:g} days" for start, rate in cfg.decay_bands)
        return ValueCurve(
            measure="weight", label="insight weight (inactivity decay)",
            explanation=(f"weight {insight.custom_weight:g} x the inactivity decay ({bands}; {inactive:.1f} days "
                         f"inactive now), never below {cfg.weight_floor:g}; insights rank by value x weight. An "
                         "access resets the days; favourites and views boost it for a while."),
            points=_sample(weight, days), threshold=cfg.weight_floor, threshold_label="floor",
        )

    def _message_curve(self, message_id: str, now: datetime, days: int) -> ValueCurve | None:
        conversations = self.kernel.service(Conversations)
        with self.kernel.session():
            message = conversations.repository.message(message_id)
        if message is None or message.sent_at is None:
            return None
        engine = self.kernel.service(ForgettingEngine)
        cfg = self.kernel.config.forgetting
        threshold, max_age = ((cfg.short_to_mid_threshold, cfg.short_max_age_days) if message.tier == "short"
                              else (cfg.mid_to_long_threshold, cfg.mid_max_age_days))
        points = _sample(lambda day: engine.value(message, now=now + timedelta(days=day)).total, days)
        age = days_between(message.sent_at, now)
        decided = None if message.tier == "long" else max(0.0, max_age - age)
        explanation = (f"the forgetting engine's value score (recency, accesses, importance, media, pinned). In tier "
                       f"{message.tier!r}" + ("" if decided is None else
                       f", it is judged once older than {max_age:g} days (in {decided:.0f} days): at or above "
                       f"{threshold:g} it moves up a tier, below it is compressed into a summary") + ".")
        return ValueCurve(
            measure="value", label=f"forgetting value (tier {message.tier})", explanation=explanation, points=points,
            threshold=None if message.tier == "long" else threshold,
            threshold_label=None if message.tier == "long" else f"{message.tier} -> next tier",
            crosses_at_day=decided, protected="pinned: never compressed" if message.pinned else None,
        )

    def _learning_curve(self, learning_id: str, namespace: str, now: datetime, days: int) -> ValueCurve | None:
        try:
            learning = self.kernel.service(Learnings).get(learning_id, namespace=namespace)
        except NotFoundError:
            return None
        cfg = self.kernel.config.memory
        since = days_between(learning.last_used or learning.created_at, now)

        def confidence(day: float) -> float:
            if learning.pinned:
                return learning.base_confidence
            return decayed_confidence(learning.base_confidence, weeks_since_reinforced(since + day),
                                      cfg.learning_decay_rate)

        points = _sample(confidence, days)
        crosses = next((p.day for p in points if p.value < cfg.learning_prune_threshold), None)
        return ValueCurve(
            measure="confidence", label="learning confidence",
            explanation=(f"confidence {learning.base_confidence:g} x exp(-{cfg.learning_decay_rate:g} x weeks since it "
                         f"was last used, now {since / 7:.1f}); under {cfg.learning_prune_threshold:g} the decay step "
                         "archives it. Using or reinforcing it resets the weeks."),
            points=points, threshold=cfg.learning_prune_threshold, threshold_label="pruned below",
            crosses_at_day=crosses, protected="pinned: it does not decay" if learning.pinned else None,
        )

    # -- sessions ------------------------------------------------------------------------------

    def sessions(self, namespace: str, *, limit: int = 50, offset: int = 0) -> list[SessionView]:
        """The namespace's sessions, most recently updated first, with their message counts."""
        check_namespace(namespace)
        found = self.kernel.service(Conversations).sessions(namespace=namespace, limit=limit, offset=offset)
        with self.kernel.session() as db:
            counts = InspectionRepository(db).message_counts([s.id for s in found])
        return [SessionView(id=s.id, namespace=s.namespace, channel=s.channel, created_at=s.created_at,
                            updated_at=s.updated_at, ended_at=s.ended_at, messages=counts.get(s.id, 0))
                for s in found]

    def session(self, session_id: str, namespace: str, *, limit: int = 500) -> SessionDetail:
        """A session of ``namespace``: its first ``limit`` messages, working summaries, and the
        forgetting engine's summaries that its messages were compressed into."""
        check_namespace(namespace)
        conversations = self.kernel.service(Conversations)
        session = conversations.session(session_id, namespace=namespace)
        messages = conversations.messages(session.id, namespace=namespace, limit=limit)
        refs = sorted({m.summary_ref_id for m in messages if m.summary_ref_id})
        with self.kernel.session():
            summaries = [s for s in (conversations.repository.summary(ref) for ref in refs) if s is not None]
        return SessionDetail(
            session=session.to_dict(), messages=[_message_row(m.to_dict()) for m in messages],
            working_summaries=[w.to_dict() for w in conversations.working_summaries(session.id)],
            summaries=[s.to_dict() for s in summaries if s.namespace == namespace],
        )


def _message_row(message: dict[str, Any]) -> dict[str, Any]:
    keep = ("message_id", "seq", "role", "content", "name", "sent_at", "tier", "pinned", "access_count",
            "archived_at", "summary_ref_id", "active", "channel", "person")
    return {key: message.get(key) for key in keep}


def _sample(measure: Callable[[float], float], days: int) -> list[CurvePoint]:
    points = []
    for day in range(0, days + 1, CURVE_STEP):
        value = measure(float(day))
        points.append(CurvePoint(float(day), round(value, 6) if math.isfinite(value) else 0.0))
    return points

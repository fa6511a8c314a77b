"""``store.insights``: upsert, weigh, rank, search and extract insights (seed 003).

Every change to an insight and its index entry (kind ``insight``, id = owner id = the
insight id) happens in one transaction. Scores are computed when asked, from the stored
facts (importance, urgency, favourite, boosts, last access) and the access log, with the
clock of the store: nothing decays in place, so maintenance frequency changes nothing.
"""

from __future__ import annotations

import builtins
import json
import logging
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from ..archive import Archive
from ..clock import days_between, to_iso
from ..errors import NotFoundError
from ..llm import ModelOutputError
from ..memories import DEFAULT_NAMESPACE, check_namespace
from ..memories.service import MemoryService
from ..ranking import (
    InsightValue,
    insight_decay_factor,
    insight_frequency_score,
    insight_freshness_score,
    insight_is_active,
    insight_relevance_score,
    insight_trend,
    insight_value_score,
    insight_weight,
)
from .extract import (
    batches,
    build_prompt,
    group_messages,
    normalise_messages,
    parse_model_insights,
    rule_based_insights,
)
from .records import (
    AccessCounts,
    ExtractionResult,
    Insight,
    InsightData,
    InsightHit,
    InsightWeights,
    RankedInsight,
    RankedInsights,
    dedupe_key_for,
    insight_id,
)
from .repository import InsightRepository

if TYPE_CHECKING:
    from ..kernel import Kernel

__all__ = ["Insights", "InsightsMaintenance"]

logger = logging.getLogger("openkoi.insights")


@dataclass(frozen=True)
class InsightsMaintenance:
    """What :meth:`Insights.maintain` did: access events older than ``insights.access_log_days`` dropped."""

    ran_at: datetime
    removed_access_events: int

    @property
    def changed(self) -> bool:
        return self.removed_access_events > 0


class Insights:
    """Structured insights with seed 003's value score, weight adjustment, decay and trend."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self._repo = InsightRepository(kernel.backend)

    @property
    def _cfg(self) -> Any:
        return self.kernel.config.insights

    # -- writing ---------------------------------------------------------------------------

    def upsert(
        self,
        title: str | InsightData,
        description: str = "",
        *,
        namespace: str = DEFAULT_NAMESPACE,
        bot_id: str = "default",
        importance: str = "medium",
        urgency: str = "medium",
        details: Sequence[Any] = (),
        timeline: Sequence[Any] = (),
        task_label: str | None = None,
        dedupe_key: str | None = None,
        platform: str | None = None,
        channel: str | None = None,
    ) -> Insight:
        """The insight ``(namespace, bot_id, dedupe_key)``, created or updated.

        The new title, description, importance, urgency, label, platform and channel replace the
        old ones; new details and timeline events are appended (duplicates skipped). Upserting
        what is already stored changes nothing, not even ``updated_at``.
        """
        data = title if isinstance(title, InsightData) else InsightData(
            title=title, description=description, importance=importance, urgency=urgency, details=details,
            timeline=timeline, task_label=task_label, dedupe_key=dedupe_key, platform=platform, channel=channel,
        )
        with self.kernel.session(write=True):
            return self._write(data, namespace=namespace, bot_id=bot_id)[0]

    def upsert_many(self, items: Iterable[InsightData | Mapping[str, Any]], *, namespace: str = DEFAULT_NAMESPACE,
                    bot_id: str = "default") -> list[Insight]:
        """Upsert several insights in one transaction (all or nothing)."""
        data = [i if isinstance(i, InsightData) else InsightData.from_mapping(i) for i in items]
        with self.kernel.session(write=True):
            return [self._write(d, namespace=namespace, bot_id=bot_id)[0] for d in data]

    def _write(self, data: InsightData, *, namespace: str, bot_id: str) -> tuple[Insight, str]:
        fields = self._validate(data)
        check_namespace(namespace)
        if not isinstance(bot_id, str) or not bot_id.strip():
            raise ValueError(f"bot_id must be a non-empty string, got {bot_id!r}")
        key = fields.pop("dedupe_key")
        new_id = insight_id(namespace, bot_id, key)
        now = self.kernel.clock.now()
        existing = self._get(new_id)
        if existing is None:
            insight = Insight(id=new_id, namespace=namespace, bot_id=bot_id, dedupe_key=key, created_at=now,
                              updated_at=now, **fields)
            event = "created"
        else:
            merged = replace(
                existing, **{k: v for k, v in fields.items() if k not in ("details", "timeline")},
                details=_append_new(existing.details, fields["details"]),
                timeline=_append_new(existing.timeline, fields["timeline"]),
            )
            if merged == existing:
                return existing, "unchanged"
            insight = replace(merged, updated_at=now)
            event = "updated"
        if self.kernel.archive.get(new_id) is not None:  # its index entry was size-pruned: bring it back
            self.kernel.service(Archive).restore(new_id)
        self._repo.upsert(insight)
        if existing is None or existing.text != insight.text or existing.task_label != insight.task_label or \
                existing.importance != insight.importance or existing.urgency != insight.urgency or \
                self.kernel.memories.get_row(new_id) is None:
            self._index(insight)
        return insight, event

    def _index(self, insight: Insight) -> None:
        self.kernel.service(MemoryService).add(
            insight.text, id=insight.id, kind="insight", namespace=insight.namespace, owner_id=insight.id,
            category=insight.task_label, tags=[insight.task_label] if insight.task_label else [], source="insight",
            importance=self._cfg.importance_scale.get(insight.importance),
            metadata={"bot_id": insight.bot_id, "importance": insight.importance, "urgency": insight.urgency,
                      "task_label": insight.task_label, "platform": insight.platform, "channel": insight.channel},
            dedup=False,
        )

    def _validate(self, data: InsightData) -> dict[str, Any]:
        if not isinstance(data.title, str) or not data.title.strip():
            raise ValueError("an insight needs a non-empty title")
        description = data.description if data.description is not None else ""
        if not isinstance(description, str):
            raise TypeError(f"description must be a string, got {type(description).__name__}")
        importance = _level(data.importance, self._cfg.importance_scale, "importance")
        urgency = _level(data.urgency, self._cfg.urgency_scale, "urgency")
        for name in ("task_label", "platform", "channel", "dedupe_key"):
            value = getattr(data, name)
            if value is not None and not isinstance(value, str):
                raise TypeError(f"{name} must be a string, got {type(value).__name__}")
        key = (data.dedupe_key or "").strip() or dedupe_key_for(data.title)
        return {
            "title": data.title.strip(), "description": description.strip(), "importance": importance,
            "urgency": urgency, "details": _records(data.details, "details", "text"),
            "timeline": _records(data.timeline, "timeline", "event"), "task_label": (data.task_label or None),
            "platform": data.platform, "channel": data.channel, "dedupe_key": key,
        }

    def delete(self, insight_id: str, *, namespace: str | None = None) -> bool:
        """Remove an insight, its index entry (live or archived) and its access log."""
        with self.kernel.session() as db:
            if self._get(insight_id, namespace) is None:
                return False
            with db.transaction():
                self.kernel.service(MemoryService).delete(insight_id, missing_ok=True)
                self.kernel.archive.delete([insight_id], kind="insight")
                self._repo.delete(insight_id)
            return True

    def erase(self, namespace: str) -> int:
        """Remove every insight and access event of a namespace (an ``erase_namespace`` eraser)."""
        return self._repo.erase(namespace)

    # -- interactions (seed 003's weight adjustment) ------------------------------------------

    def view(self, insight_id: str, *, namespace: str | None = None) -> Insight:
        """The user looked at the insight: log the access; after more than
        ``insights.view_min_inactive_days`` (1) without access, boost it x1.1 for 24 h."""
        with self.kernel.session() as db:
            insight = self.get(insight_id, namespace=namespace)
            now = self.kernel.clock.now()
            inactive = days_between(insight.last_access_at or insight.created_at, now)
            boost = inactive > self._cfg.view_min_inactive_days
            with db.transaction():
                self._log(insight, "view", now)
                if boost:
                    self._repo.set_view_boost(insight.id, now)
            return self.get(insight.id)

    def favorite(self, insight_id: str, on: bool = True, *, namespace: str | None = None) -> Insight:
        """Mark (or unmark) a favourite: favourite score 1 and a x1.5 boost for 7 days from now.

        Favouriting a favourite again changes nothing (the boost does not restart).
        """
        with self.kernel.session() as db:
            insight = self.get(insight_id, namespace=namespace)
            now = self.kernel.clock.now()
            with db.transaction():
                if on and not insight.favorite:
                    self._repo.mark_favorite(insight.id, now)
                    self._log(insight, "favorite", now)
                elif not on and insight.favorite:
                    self._repo.unmark_favorite(insight.id)
            return self.get(insight.id)

    def set_weight(self, insight_id: str, multiplier: float, *, namespace: str | None = None) -> Insight:
        """Set the user's ``customWeightMultiplier`` (0 < multiplier <= ``insights.weight_cap``)."""
        if isinstance(multiplier, bool) or not isinstance(multiplier, (int, float)) or math.isnan(multiplier) \
                or not 0 < multiplier <= self._cfg.weight_cap:
            raise ValueError(f"the weight multiplier must be above 0 and at most {self._cfg.weight_cap}, got {multiplier!r}")
        with self.kernel.session() as db:
            insight = self.get(insight_id, namespace=namespace)
            with db.transaction():
                self._repo.set_custom_weight(insight.id, float(multiplier))
            return self.get(insight.id)

    def _log(self, insight: Insight, kind: str, now: datetime) -> None:
        self._repo.log_access(insight, kind, now)

    # -- reading ---------------------------------------------------------------------------

    def _get(self, insight_id: str, namespace: str | None = None) -> Insight | None:
        insight = self._repo.get(insight_id)
        if insight is None or (namespace is not None and insight.namespace != namespace):
            return None
        return insight

    def get(self, insight_id: str, *, namespace: str | None = None) -> Insight:
        """The insight with this id, or :class:`NotFoundError`."""
        if not isinstance(insight_id, str) or not insight_id:
            raise ValueError(f"an insight id must be a non-empty string, got {insight_id!r}")
        with self.kernel.session():
            insight = self._get(insight_id, namespace)
        if insight is None:
            where = f" in namespace {namespace!r}" if namespace is not None else ""
            raise NotFoundError(f"no insight with id {insight_id!r}{where}")
        return insight

    def find(self, dedupe_key: str, *, namespace: str = DEFAULT_NAMESPACE, bot_id: str = "default") -> Insight | None:
        """The insight with this dedupe key, if any."""
        with self.kernel.session():
            return self._get(insight_id(namespace, bot_id, dedupe_key))

    def list(self, *, namespace: str = DEFAULT_NAMESPACE, task_label: str | None = None,
             limit: int | None = None) -> list[Insight]:
        """Insights of a namespace, most recently updated first."""
        check_namespace(namespace)
        with self.kernel.session():
            return self._repo.most_recent(namespace, task_label=task_label, limit=limit)

    def count(self, *, namespace: str | None = None) -> int:
        with self.kernel.session():
            return self._repo.count(namespace)

    # -- scoring ---------------------------------------------------------------------------

    def _counts(self, namespace: str, now: datetime) -> dict[str, AccessCounts]:
        cfg = self._cfg
        return self._repo.access_counts(
            namespace, now, frequency_since=now - timedelta(days=cfg.frequency_window_days),
            recent_since=now - timedelta(days=cfg.trend_window_days),
            previous_since=now - timedelta(days=2 * cfg.trend_window_days),
            active_since=now - timedelta(days=cfg.active_window_days))

    def _score(self, insight: Insight, counts: AccessCounts, now: datetime) -> tuple[InsightValue, InsightWeights]:
        cfg = self._cfg
        value = insight_value_score(
            insight_frequency_score(counts.frequency, cfg.frequency_max_accesses),
            insight_freshness_score(days_between(insight.updated_at or insight.created_at, now), cfg.freshness_bands,
                                    cfg.freshness_past_30_days),
            insight_relevance_score(cfg.importance_scale.get(insight.importance, 0.0),
                                    cfg.urgency_scale.get(insight.urgency, 0.0),
                                    importance_weight=cfg.relevance_importance_weight,
                                    urgency_weight=cfg.relevance_urgency_weight),
            insight.favorite,
            weights=(cfg.frequency_weight, cfg.freshness_weight, cfg.relevance_weight, cfg.favorite_weight),
        )
        inactive = days_between(insight.last_access_at or insight.created_at, now)
        decay = insight_decay_factor(inactive, cfg.decay_bands, cfg.decay_period_days)
        favorite_active = bool(insight.favorite and insight.favorited_at is not None
                               and days_between(insight.favorited_at, now) < cfg.favorite_days)
        view_active = bool(insight.view_boosted_at is not None
                           and days_between(insight.view_boosted_at, now) * 24.0 < cfg.view_hours)
        weight = insight_weight(
            insight.custom_weight, decay_factor=decay, floor=cfg.weight_floor,
            favorite_boost=cfg.favorite_multiplier if favorite_active else None,
            view_boost=cfg.view_multiplier if view_active else None, cap=cfg.weight_cap,
        )
        weights = InsightWeights(
            access_count_30d=counts.frequency, access_count_7d=counts.last_7d, previous_7d=counts.previous_7d,
            current_event_rank=None, custom_weight_multiplier=insight.custom_weight, weight=weight,
            decay_factor=decay, days_inactive=inactive, favorite_boost_active=favorite_active,
            view_boost_active=view_active, trend=insight_trend(counts.last_7d, counts.previous_7d, cfg.trend_ratio),
            active=insight_is_active(counts.active),
        )
        return value, weights

    def rank(self, *, namespace: str = DEFAULT_NAMESPACE, limit: int | None = None, task_label: str | None = None,
             state: str | None = None) -> RankedInsights:
        """The namespace's insights by ``value score x weight``, best first, with 1-based ranks.

        ``state``: ``"active"`` or ``"dormant"`` keeps only those (ranks stay those of the
        whole namespace, the seed's ``currentEventRank``).
        """
        if state not in (None, "active", "dormant"):
            raise ValueError(f"state must be 'active', 'dormant' or None, got {state!r}")
        check_namespace(namespace)
        with self.kernel.session():
            now = self.kernel.clock.now()
            insights = self._repo.all_in(namespace)
            counts = self._counts(namespace, now)
        scored = []
        for insight in insights:
            value, weights = self._score(insight, counts.get(insight.id, AccessCounts()), now)
            scored.append((value.score * weights.weight, insight, value, weights))
        scored.sort(key=lambda s: (-s[0], -(s[1].updated_at.timestamp() if s[1].updated_at else 0.0), s[1].id))
        ranked = RankedInsights()
        for position, (score, insight, value, weights) in enumerate(scored, 1):
            if task_label is not None and insight.task_label != task_label:
                continue
            if state is not None and weights.state != state:
                continue
            ranked.append(RankedInsight(insight, value, replace(weights, current_event_rank=position), score, position))
            if limit is not None and len(ranked) >= limit:
                break
        return ranked

    def ranked(self, insight_id: str, *, namespace: str | None = None) -> RankedInsight:
        """One insight's place in its namespace's ranking, with its value and weights."""
        insight = self.get(insight_id, namespace=namespace)
        for entry in self.rank(namespace=insight.namespace):
            if entry.insight.id == insight.id:
                return entry
        raise NotFoundError(f"no insight with id {insight_id!r}")  # pragma: no cover - deleted meanwhile

    def weights(self, insight_id: str, *, namespace: str | None = None) -> InsightWeights:
        """Seed 003's ``insightWeights`` of one insight now."""
        return self.ranked(insight_id, namespace=namespace).weights

    def value(self, insight_id: str, *, namespace: str | None = None) -> InsightValue:
        """Seed 003's value score of one insight now, with its four parts."""
        return self.ranked(insight_id, namespace=namespace).value

    def search(self, query: str, *, namespace: str = DEFAULT_NAMESPACE, limit: int = 10,
               track_access: bool = True) -> builtins.list[InsightHit]:
        """Hybrid search over insights; each returned insight logs a ``search`` access."""
        with self.kernel.session() as db:
            hits = self.kernel.service(MemoryService).search(query, kind="insight", namespace=namespace, limit=limit,
                                      track_access=track_access)
            out: list[InsightHit] = []
            for hit in hits:
                insight = self._get(hit.memory.owner_id or hit.id)
                if insight is not None:
                    out.append(InsightHit(insight, hit.score, hit))
            if track_access and out and not db.read_only:
                now = self.kernel.clock.now()
                with db.transaction():
                    for found in out:
                        self._log(found.insight, "search", now)
            return out

    # -- extraction --------------------------------------------------------------------------

    def extract(self, messages: Iterable[Any], *, namespace: str = DEFAULT_NAMESPACE, bot_id: str = "default",
                platform: str | None = None, channel: str | None = None,
                use_model: bool | None = None) -> ExtractionResult:
        """Extract insights from messages and upsert them (seed 003's generation pipeline).

        Messages are grouped by platform + channel. With ``store.text_model`` (and
        ``use_model`` not False) the model extracts them; an unusable answer stores nothing for
        its batch, logs a warning and adds it to ``result.warnings``. Without a model (or with
        ``use_model=False``) the rule-based extractor runs (see ``insights.extract``).
        """
        check_namespace(namespace)
        found = normalise_messages(messages, platform=platform, channel=channel)
        model = self.kernel.text_model if use_model is not False else None
        if use_model is True and model is None:
            raise ValueError("use_model=True, but the store has no text model; open it with "
                             "MemoryStore.open(..., text_model=...) or set store.text_model")
        result = ExtractionResult(method="model" if model is not None else "rules")
        items: list[InsightData] = []
        cfg = self._cfg
        for (group_platform, group_channel), group in group_messages(found).items():
            if model is None:
                items.extend(rule_based_insights(group))
                continue
            for batch in batches(group, cfg.extract_prompt_tokens):
                where = f"{group_platform or '-'}/{group_channel or '-'}"
                prompt = build_prompt(batch, platform=group_platform, channel=group_channel,
                                      limit=cfg.extract_max_insights, importance_levels=cfg.importance_scale,
                                      urgency_levels=cfg.urgency_scale)
                try:
                    answer = model.complete(prompt, max_tokens=cfg.extract_max_tokens)
                    extracted, notes = parse_model_insights(
                        answer, importance_levels=cfg.importance_scale, urgency_levels=cfg.urgency_scale,
                        limit=cfg.extract_max_insights)
                except ModelOutputError as exc:
                    self._warn(result, f"{where}: unusable model answer ({exc}); nothing stored from {len(batch)} messages")
                    continue
                except Exception as exc:  # a model client's own failure must not lose the caller's work
                    self._warn(result, f"{where}: the text model failed ({type(exc).__name__}: {exc}); "
                                       f"nothing stored from {len(batch)} messages")
                    continue
                for note in notes:
                    self._warn(result, f"{where}: {note}")
                for item in extracted:
                    item.platform, item.channel = group_platform, group_channel
                items.extend(extracted)
        if not items:
            return result
        with self.kernel.session(write=True) as db:
            for item in items:
                try:
                    with db.transaction():  # a savepoint: one bad item does not undo the others
                        insight, event = self._write(item, namespace=namespace, bot_id=bot_id)
                except (ValueError, TypeError) as exc:
                    self._warn(result, f"insight {item.title!r} skipped: {exc}")
                    continue
                result.insights.append(insight)
                setattr(result, event, getattr(result, event) + 1)
        return result

    @staticmethod
    def _warn(result: ExtractionResult, message: str) -> None:
        logger.warning("insight extraction: %s", message)
        result.warnings.append(message)

    # -- maintenance -------------------------------------------------------------------------

    def maintain(self) -> InsightsMaintenance:
        """Remove access events older than ``insights.access_log_days``; idempotent."""
        with self.kernel.session() as db:
            now = self.kernel.clock.now()
            with db.transaction():
                removed = self._repo.drop_access_until(now - timedelta(days=self._cfg.access_log_days))
            return InsightsMaintenance(now, removed)


def _level(value: Any, scale: Mapping[str, float], what: str) -> str:
    level = str(value).strip().lower() if isinstance(value, str) else None
    if level is None or level not in scale:
        raise ValueError(f"{what} must be one of {', '.join(scale)}, got {value!r}")
    return level


def _records(values: Any, what: str, text_key: str) -> list[dict[str, Any]]:
    if values is None:
        return []
    if isinstance(values, (str, Mapping)) or not isinstance(values, Iterable):
        raise TypeError(f"{what} must be a list of records, got {type(values).__name__}")
    out: list[dict[str, Any]] = []
    for item in values:
        record = {text_key: item} if isinstance(item, str) else item
        if not isinstance(record, Mapping):
            raise TypeError(f"each of {what} must be a dict or a string, got {item!r}")
        try:
            out.append(json.loads(json.dumps(dict(record), default=_json_default, allow_nan=False)))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{what} must be JSON-serialisable: {exc}") from None
    return out


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime):
        return to_iso(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def _append_new(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = list(old)
    for record in new:
        if record not in out:
            out.append(record)
    return out


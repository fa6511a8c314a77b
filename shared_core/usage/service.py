"""``store.usage``: log usage events, mine recurring patterns from them and propose skills for the
confident ones (the rules are in the package's docs). The logic only: SQL is the repository's."""

from __future__ import annotations

import hashlib
import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast
from zoneinfo import ZoneInfo

from ..clock import from_iso, to_iso
from ..errors import NotFoundError
from ..memories import DEFAULT_NAMESPACE, check_namespace, new_id
from ..ranking import combination_confidence, recurrence_confidence
from .records import PATTERN_STATUSES, MiningReport, UsageEvent, UsagePattern, UsageSummary
from .repository import UsageRepository

if TYPE_CHECKING:
    from ..kernel import Kernel

__all__ = ["Usage"]

_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


class Usage:
    """``store.usage``."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self._repo = UsageRepository(kernel.backend)

    @property
    def _zone(self) -> ZoneInfo:
        return ZoneInfo(self.kernel.config.usage.timezone)

    def log(
        self,
        event_type: str,
        *,
        description: str | None = None,
        category: str | None = None,
        channel: str | None = None,
        skills: Sequence[str] = (),
        score: float | None = None,
        at: datetime | str | None = None,
        namespace: str = DEFAULT_NAMESPACE,
    ) -> str:
        """Record one usage event; returns its id."""
        if not isinstance(event_type, str) or not event_type.strip():
            raise ValueError(f"event_type must be a non-empty string such as 'task', got {event_type!r}")
        if isinstance(skills, str) or not all(isinstance(s, str) and s.strip() for s in skills):
            raise ValueError(f"skills must be a list of skill names, got {skills!r}")
        if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float))):
            raise ValueError(f"score must be a number, got {score!r}")
        when = cast(datetime, from_iso(at if isinstance(at, str) else to_iso(at))) if at is not None \
            else self.kernel.clock.now()
        local = when.astimezone(self._zone)
        event = UsageEvent(
            id=new_id(), event_type=event_type.strip(), timestamp=when, day=local.date().isoformat(), hour=local.hour,
            day_of_week=local.weekday(), channel=channel, description=description, category=category,
            skills=tuple(dict.fromkeys(s.strip() for s in skills)), score=None if score is None else float(score),
            namespace=check_namespace(namespace),
        )
        with self.kernel.session(write=True):
            self._repo.insert_event(event)
        return event.id

    def events(
        self,
        *,
        namespace: str = DEFAULT_NAMESPACE,
        since: datetime | str | None = None,
        event_type: str | None = None,
        limit: int | None = None,
    ) -> list[UsageEvent]:
        """Events, oldest first."""
        check_namespace(namespace)
        start = from_iso(since if isinstance(since, str) else to_iso(since)) if since is not None else None
        if since is not None and start is None:  # an empty time: nothing is at or after it
            return []
        with self.kernel.session():
            return self._repo.events(namespace, since=start, event_type=event_type, limit=limit)

    def patterns(self, *, namespace: str = DEFAULT_NAMESPACE, status: str | None = None) -> list[UsagePattern]:
        """Stored patterns, most confident first."""
        check_namespace(namespace)
        if status is not None and status not in PATTERN_STATUSES:
            raise ValueError(f"status must be one of {', '.join(PATTERN_STATUSES)}, got {status!r}")
        with self.kernel.session():
            return self._repo.patterns(namespace, status=status)

    def dismiss(self, pattern_id: str) -> UsagePattern:
        """Never propose a skill for this pattern (mining keeps it dismissed)."""
        with self.kernel.session(write=True):
            if not self._repo.dismiss(pattern_id):
                raise NotFoundError(f"no usage pattern with id {pattern_id!r}")
            pattern = self._repo.pattern(pattern_id)
        assert pattern is not None  # just updated, in this transaction
        return pattern

    def summary(self, *, namespace: str = DEFAULT_NAMESPACE, top: int = 10) -> UsageSummary:
        """Access frequency and feedback of the namespace's memories, and its usage events (seed 003)."""
        check_namespace(namespace)
        if isinstance(top, bool) or not isinstance(top, int) or top < 0:
            raise ValueError(f"top must be a whole number >= 0, got {top!r}")
        with self.kernel.session():
            memories = self._repo.memory_usage(namespace, top=top)
            by_type = self._repo.event_counts_by_type(namespace)
            patterns = self._repo.pattern_count(namespace)
        return UsageSummary(
            namespace=namespace, memories=sum(memories.by_kind.values()), by_kind=memories.by_kind,
            accesses=memories.accesses, accessed=memories.accessed, reinforced=memories.reinforced,
            demoted=memories.demoted, most_accessed=memories.most_accessed, events=sum(by_type.values()),
            events_by_type=by_type, patterns=patterns,
        )

    # -- mining -------------------------------------------------------------------------------

    def mine(self, *, namespace: str | None = None, propose: bool = True) -> MiningReport:
        """Detect recurring patterns in recent events (every namespace unless one is given),
        store them, and propose SKILL.md files for the confident ones."""
        report = MiningReport()
        with self.kernel.session():
            namespaces = [check_namespace(namespace)] if namespace is not None else self._repo.namespaces()
            for ns in namespaces:
                self._mine_namespace(ns, report, propose)
        return report

    def _mine_namespace(self, namespace: str, report: MiningReport, propose: bool) -> None:
        cfg = self.kernel.config.usage
        now = self.kernel.clock.now()
        events = self.events(namespace=namespace, since=now - timedelta(days=cfg.window_days))
        events = [e for e in events if e.timestamp <= now]  # a clock that went back: ignore the future
        report.events += len(events)
        found = _detect(events, now.astimezone(self._zone).date(), cfg)
        existing = {p.id: p for p in self.patterns(namespace=namespace)}
        to_propose: list[UsagePattern] = []
        with self.kernel.session(write=True):
            for spec in found:
                pattern_id = _pattern_id(namespace, spec["pattern_type"], spec["key"])
                old = existing.pop(pattern_id, None)
                status = old.status if old is not None and old.status in ("proposed", "dismissed") else "detected"
                pattern = UsagePattern(
                    id=pattern_id, pattern_type=spec["pattern_type"], description=spec["description"],
                    frequency=spec["frequency"], trigger=spec["trigger"], confidence=round(spec["confidence"], 6),
                    sample_count=spec["samples"], first_seen=spec["first"], last_seen=spec["last"],
                    proposed_skill=old.proposed_skill if old else None, status=status, namespace=namespace,
                )
                report.patterns.append(pattern)
                if old is None:
                    report.new += 1
                elif _differs(old, pattern):
                    report.changed += 1
                if old is None or _differs(old, pattern):
                    self._repo.save_pattern(pattern)
                if (propose and pattern.status == "detected" and pattern.confidence >= cfg.propose_confidence
                        and pattern.sample_count >= cfg.propose_min_samples):
                    to_propose.append(pattern)
            for old in existing.values():
                if old.status == "detected":
                    self._repo.mark_lapsed(old.id)
                    report.lapsed += 1
        for pattern in to_propose:
            path = self._propose(pattern, events)
            with self.kernel.session(write=True):
                self._repo.mark_proposed(pattern.id, path)
            report.proposed.append(path)

    def _propose(self, pattern: UsagePattern, events: list[UsageEvent]) -> str:
        """Write skills/proposed/<slug>/SKILL.md for a pattern (an existing file is left as it is)."""
        slug = f"{_slug(pattern.description)}-{pattern.id[-6:]}"
        relative = f"proposed/{slug}/SKILL.md"
        path = Path(self.kernel.data_dir) / "skills" / relative
        if path.exists():
            return relative
        examples = [e.description for e in reversed(events) if e.description and _matches(pattern, e)][:3]
        lines = [
            "---", f"name: {slug}", f"description: {pattern.description}", "origin: proposed",
            f"pattern: {pattern.id}", f"confidence: {pattern.confidence:.2f}", f"samples: {pattern.sample_count}",
            "---", f"# {pattern.description}", "",
            f"Proposed from usage patterns ({pattern.pattern_type}, {pattern.frequency or 'recurring'}, "
            f"seen {pattern.sample_count} times, confidence {pattern.confidence:.2f}). Review it, then move it to "
            "skills/user/ to adopt it, or dismiss the pattern.", "", "## When to use",
        ]
        trigger = pattern.trigger
        if pattern.pattern_type == "recurring_time":
            lines.append(f"- {trigger['category']} work {pattern.frequency}, around {trigger['hour']:02d}:00 "
                         f"({trigger['timezone']})")
        else:
            lines.append(f"- Tasks that need {', '.join(trigger['skills'])}"
                         + (f" (usually {trigger['category']})" if trigger.get("category") else ""))
        lines += ["", "## Steps"]
        if pattern.pattern_type == "skill_combination":
            lines += [f"{i}. Apply the {name} skill." for i, name in enumerate(trigger["skills"], 1)]
        else:
            lines.append(f"1. Prepare the usual {trigger['category']} work before it is asked for.")
        if examples:
            lines += ["", "## Recent examples"] + [f"- {e}" for e in examples]
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
        tmp.replace(path)
        return relative

    def erase(self, namespace: str) -> None:
        """Remove the namespace's events and patterns, and the SKILL.md files its patterns proposed."""
        root = Path(self.kernel.data_dir) / "skills"
        for pattern_id, relative in self._repo.proposed_skills(namespace):
            path = (root / relative).resolve()
            if not path.is_relative_to((root / "proposed").resolve()) or not path.is_file():
                continue
            try:
                if f"pattern: {pattern_id}" in path.read_text(encoding="utf-8"):
                    path.unlink()
                    if not any(path.parent.iterdir()):
                        path.parent.rmdir()
            except OSError:
                continue
        self._repo.erase(namespace)


def _detect(events: list[UsageEvent], today: Any, cfg: Any) -> list[dict[str, Any]]:
    """Pattern specs (type, key, description, frequency, trigger, confidence, samples, first, last)."""
    out: list[dict[str, Any]] = []
    by_hour: dict[tuple[str, int], list[UsageEvent]] = defaultdict(list)
    for e in events:
        if e.category:
            by_hour[(e.category, e.hour)].append(e)
    confident_daily: set[tuple[str, int]] = set()
    for (category, hour), group in sorted(by_hour.items()):
        days = sorted({e.day for e in group})
        periods = (today - datetime.fromisoformat(days[0]).date()).days + 1
        confidence = recurrence_confidence(len(days), periods)
        if len(days) >= cfg.min_samples and confidence >= cfg.min_confidence:
            confident_daily.add((category, hour))
            out.append(_spec("recurring_time", f"daily|{category}|{hour}", f"{category} tasks daily around {hour:02d}:00",
                             "daily", {"category": category, "hour": hour, "timezone": cfg.timezone},
                             confidence, len(days), group))
    by_weekday: dict[tuple[str, int, int], list[UsageEvent]] = defaultdict(list)
    for e in events:
        if e.category and (e.category, e.hour) not in confident_daily:
            by_weekday[(e.category, e.day_of_week, e.hour)].append(e)
    for (category, weekday, hour), group in sorted(by_weekday.items()):
        weeks = sorted({datetime.fromisoformat(e.day).date() for e in group})
        periods = (today - weeks[0]).days // 7 + 1
        confidence = recurrence_confidence(len(weeks), periods)
        if len(weeks) >= cfg.min_samples and confidence >= cfg.min_confidence:
            out.append(_spec("recurring_time", f"weekly|{category}|{weekday}|{hour}",
                             f"{category} tasks on {_WEEKDAYS[weekday]}s around {hour:02d}:00", "weekly",
                             {"category": category, "hour": hour, "day_of_week": weekday, "timezone": cfg.timezone},
                             confidence, len(weeks), group))
    combos: Counter[tuple[str, ...]] = Counter()
    for e in events:
        if len(set(e.skills)) >= 2:
            combos[tuple(sorted(set(e.skills)))] += 1
    for combo in sorted(combos):
        together = [e for e in events if set(combo) <= set(e.skills)]
        with_any = sum(1 for e in events if set(combo) & set(e.skills))
        confidence = combination_confidence(len(together), with_any)
        if len(together) >= cfg.min_samples and confidence >= cfg.min_confidence:
            categories = Counter(e.category for e in together if e.category)
            usual = categories.most_common(1)[0][0] if categories else None
            where = f" for {usual} tasks" if usual else ""
            out.append(_spec("skill_combination", "skills|" + "|".join(combo),
                             f"{' + '.join(combo)} used together{where}", f"{len(together)} times",
                             {"skills": list(combo), "category": usual}, confidence, len(together), together))
    return out


def _spec(kind: str, key: str, description: str, frequency: str, trigger: dict[str, Any], confidence: float,
          samples: int, group: list[UsageEvent]) -> dict[str, Any]:
    return {"pattern_type": kind, "key": key, "description": description, "frequency": frequency,
            "trigger": trigger, "confidence": confidence, "samples": samples,
            "first": min(e.timestamp for e in group), "last": max(e.timestamp for e in group)}


def _matches(pattern: UsagePattern, event: UsageEvent) -> bool:
    trigger = pattern.trigger
    if pattern.pattern_type == "skill_combination":
        return set(trigger["skills"]) <= set(event.skills)
    return event.category == trigger["category"] and event.hour == trigger["hour"] and (
        "day_of_week" not in trigger or event.day_of_week == trigger["day_of_week"])


def _differs(old: UsagePattern, new: UsagePattern) -> bool:
    return (old.description, old.frequency, old.trigger, old.confidence, old.sample_count, old.last_seen,
            old.status) != (new.description, new.frequency, new.trigger, new.confidence, new.sample_count,
                            new.last_seen, new.status)


def _pattern_id(namespace: str, kind: str, key: str) -> str:
    return "pat-" + hashlib.sha1(f"{namespace}\x00{kind}\x00{key}".encode()).hexdigest()[:16]


def _slug(text: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", text.casefold()).strip("-")
    return slug[:48].rstrip("-") or "pattern"

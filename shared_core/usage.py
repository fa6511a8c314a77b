"""Usage events and pattern mining (seed 000): what the user does, when, and with which skills.

Every event is a row of ``usage_events`` with the seed's fields (type, channel, description,
category, skills used, score, timestamp, day, hour, day of week); ``day``/``hour``/
``day_of_week`` (Monday = 0) are computed in ``usage.timezone``. Flushed tasks log one
automatically (``usage.log_tasks``).

:meth:`Usage.mine` looks at the last ``usage.window_days`` of events and records patterns
in ``usage_patterns`` (ids derived from what they are about, so mining again updates them):

* ``recurring_time``, daily: one category in one hour of the day. Confidence = days with
  such an event / days since the first one (today included);
* ``recurring_time``, weekly (only where the daily pattern is not confident): one category
  on one weekday and hour. Confidence = weeks with one / weeks since the first one;
* ``skill_combination``: a set of 2+ skills used together. Confidence = events using all of
  them / events using any of them.

A pattern needs ``usage.min_samples`` (3) occurrences and ``usage.min_confidence`` (0.5). One
seen ``usage.propose_min_samples`` (5) times with ``usage.propose_confidence`` (0.7) proposes a
skill: a SKILL.md under ``<data dir>/skills/proposed/`` (status ``proposed``); ``dismiss``
stops a pattern from being proposed. Patterns that stop qualifying become ``lapsed``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from .clock import from_iso, to_iso
from .errors import NotFoundError
from .memories import COLUMNS, DEFAULT_NAMESPACE, Memory, check_namespace, new_id
from .ranking import combination_confidence, recurrence_confidence

if TYPE_CHECKING:
    from .kernel import Kernel

__all__ = ["Usage", "UsageEvent", "UsagePattern", "UsageSummary", "MiningReport", "PATTERN_STATUSES"]

PATTERN_STATUSES = ("detected", "proposed", "dismissed", "lapsed")
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_EVENT_COLUMNS = ("id, event_type, channel, description, category, skills_used, score, timestamp, day, hour, "
                  "day_of_week, namespace")
_PATTERN_COLUMNS = ("id, pattern_type, description, frequency, trigger_json, confidence, sample_count, first_seen, "
                    "last_seen, proposed_skill, status, namespace")


@dataclass(frozen=True)
class UsageEvent:
    id: str
    event_type: str
    timestamp: datetime
    day: str
    hour: int
    day_of_week: int
    channel: str | None = None
    description: str | None = None
    category: str | None = None
    skills: tuple[str, ...] = ()
    score: float | None = None
    namespace: str = DEFAULT_NAMESPACE


@dataclass(frozen=True)
class UsagePattern:
    id: str
    pattern_type: str  # recurring_time | skill_combination
    description: str
    frequency: str | None
    trigger: dict[str, Any]
    confidence: float
    sample_count: int
    first_seen: datetime
    last_seen: datetime
    proposed_skill: str | None = None  # path of the proposed SKILL.md, relative to the skills directory
    status: str = "detected"
    namespace: str = DEFAULT_NAMESPACE


@dataclass
class MiningReport:
    """What :meth:`Usage.mine` did; mining twice in a row reports no changes the second time."""

    events: int = 0
    patterns: list[UsagePattern] = field(default_factory=list)  # qualifying now
    new: int = 0
    changed: int = 0
    lapsed: int = 0
    proposed: list[str] = field(default_factory=list)  # SKILL.md paths written


@dataclass(frozen=True)
class UsageSummary:
    """Seed 003's usage analytics for one namespace: how often what is remembered gets used.

    ``accesses`` sums every memory's ``access_count`` (returned by a search or a lookup, seed
    003); ``reinforced``/``demoted`` count memories whose feedback score is above/below zero
    (seed 002); ``events`` are the seed-000 usage events by type.
    """

    namespace: str
    memories: int
    by_kind: dict[str, int]
    accesses: int
    accessed: int  # memories returned at least once
    reinforced: int
    demoted: int
    most_accessed: list[Memory]
    events: int
    events_by_type: dict[str, int]
    patterns: int

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k != "most_accessed"}
        out["most_accessed"] = [m.to_dict() for m in self.most_accessed]
        return out


class Usage:
    """``store.usage``."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel

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
        when = from_iso(at if isinstance(at, str) else to_iso(at)) if at is not None else self.kernel.clock.now()
        local = when.astimezone(self._zone)  # type: ignore[union-attr]
        event_id = new_id()
        with self.kernel.session(write=True) as db:
            db.execute(
                f"INSERT INTO usage_events ({_EVENT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (event_id, event_type.strip(), channel, description, category,
                 json.dumps(list(dict.fromkeys(s.strip() for s in skills)), ensure_ascii=False),
                 None if score is None else float(score), to_iso(when), local.date().isoformat(), local.hour,
                 local.weekday(), check_namespace(namespace)),
            )
        return event_id

    def events(
        self,
        *,
        namespace: str = DEFAULT_NAMESPACE,
        since: datetime | str | None = None,
        event_type: str | None = None,
        limit: int | None = None,
    ) -> list[UsageEvent]:
        """Events, oldest first."""
        clauses, params = ["namespace = ?"], [check_namespace(namespace)]
        if since is not None:
            clauses.append("timestamp >= ?")
            params.append(to_iso(from_iso(since if isinstance(since, str) else to_iso(since))))
        if event_type is not None:
            clauses.append("event_type = ?")
            params.append(event_type)
        tail = f" LIMIT {int(limit)}" if limit is not None else ""
        with self.kernel.session() as db:
            rows = db.query(
                f"SELECT {_EVENT_COLUMNS} FROM usage_events WHERE {' AND '.join(clauses)} "
                f"ORDER BY timestamp, rowid{tail}", params)
        return [UsageEvent(id=r[0], event_type=r[1], channel=r[2], description=r[3], category=r[4],
                           skills=tuple(json.loads(r[5] or "[]")), score=r[6], timestamp=from_iso(r[7]),  # type: ignore[arg-type]
                           day=r[8], hour=int(r[9]), day_of_week=int(r[10]), namespace=r[11]) for r in rows]

    def patterns(self, *, namespace: str = DEFAULT_NAMESPACE, status: str | None = None) -> list[UsagePattern]:
        """Stored patterns, most confident first."""
        clauses, params = ["namespace = ?"], [check_namespace(namespace)]
        if status is not None:
            if status not in PATTERN_STATUSES:
                raise ValueError(f"status must be one of {', '.join(PATTERN_STATUSES)}, got {status!r}")
            clauses.append("status = ?")
            params.append(status)
        with self.kernel.session() as db:
            rows = db.query(
                f"SELECT {_PATTERN_COLUMNS} FROM usage_patterns WHERE {' AND '.join(clauses)} "
                "ORDER BY confidence DESC, sample_count DESC, id", params)
        return [_pattern(r) for r in rows]

    def dismiss(self, pattern_id: str) -> UsagePattern:
        """Never propose a skill for this pattern (mining keeps it dismissed)."""
        with self.kernel.session(write=True) as db:
            if db.execute("UPDATE usage_patterns SET status = 'dismissed' WHERE id = ?", (pattern_id,)).rowcount == 0:
                raise NotFoundError(f"no usage pattern with id {pattern_id!r}")
            row = db.query(f"SELECT {_PATTERN_COLUMNS} FROM usage_patterns WHERE id = ?", (pattern_id,))
        return _pattern(row[0])

    def summary(self, *, namespace: str = DEFAULT_NAMESPACE, top: int = 10) -> UsageSummary:
        """Access frequency and feedback of the namespace's memories, and its usage events (seed 003)."""
        check_namespace(namespace)
        if isinstance(top, bool) or not isinstance(top, int) or top < 0:
            raise ValueError(f"top must be a whole number >= 0, got {top!r}")
        with self.kernel.session() as db:
            by_kind = {k: int(n) for k, n in db.query(
                "SELECT kind, count(*) FROM memory_chunks WHERE namespace = ? GROUP BY kind ORDER BY kind", (namespace,))}
            accesses, accessed, reinforced, demoted = db.query(
                "SELECT coalesce(sum(access_count), 0), coalesce(sum(access_count > 0), 0), coalesce(sum(score > 0), 0), "
                "coalesce(sum(score < 0), 0) FROM memory_chunks WHERE namespace = ?", (namespace,))[0]
            top_rows = db.query(
                f"SELECT {', '.join(COLUMNS)} FROM memory_chunks WHERE namespace = ? AND access_count > 0 "
                "ORDER BY access_count DESC, last_access_at DESC, chunk_rowid LIMIT ?", (namespace, top))
            by_type = {t: int(n) for t, n in db.query(
                "SELECT event_type, count(*) FROM usage_events WHERE namespace = ? GROUP BY event_type "
                "ORDER BY event_type", (namespace,))}
            patterns = int(db.scalar("SELECT count(*) FROM usage_patterns WHERE namespace = ?", (namespace,)) or 0)
        return UsageSummary(
            namespace=namespace, memories=sum(by_kind.values()), by_kind=by_kind, accesses=int(accesses),
            accessed=int(accessed), reinforced=int(reinforced), demoted=int(demoted),
            most_accessed=[Memory.from_row(r) for r in top_rows], events=sum(by_type.values()),
            events_by_type=by_type, patterns=patterns,
        )

    # -- mining -------------------------------------------------------------------------------

    def mine(self, *, namespace: str | None = None, propose: bool = True) -> MiningReport:
        """Detect recurring patterns in recent events (every namespace unless one is given),
        store them, and propose SKILL.md files for the confident ones."""
        report = MiningReport()
        with self.kernel.session() as db:
            namespaces = [check_namespace(namespace)] if namespace is not None else [
                r[0] for r in db.query("SELECT DISTINCT namespace FROM usage_events UNION "
                                       "SELECT DISTINCT namespace FROM usage_patterns")]
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
        db = self.kernel.backend
        existing = {p.id: p for p in self.patterns(namespace=namespace)}
        to_propose: list[UsagePattern] = []
        with db.transaction():
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
                    db.execute(
                        f"INSERT INTO usage_patterns ({_PATTERN_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                        "ON CONFLICT(id) DO UPDATE SET description = excluded.description, frequency = "
                        "excluded.frequency, trigger_json = excluded.trigger_json, confidence = excluded.confidence, "
                        "sample_count = excluded.sample_count, last_seen = excluded.last_seen, status = excluded.status",
                        (pattern.id, pattern.pattern_type, pattern.description, pattern.frequency,
                         json.dumps(pattern.trigger, sort_keys=True), pattern.confidence, pattern.sample_count,
                         to_iso(pattern.first_seen), to_iso(pattern.last_seen), pattern.proposed_skill,
                         pattern.status, namespace),
                    )
                if (propose and pattern.status == "detected" and pattern.confidence >= cfg.propose_confidence
                        and pattern.sample_count >= cfg.propose_min_samples):
                    to_propose.append(pattern)
            for old in existing.values():
                if old.status == "detected":
                    db.execute("UPDATE usage_patterns SET status = 'lapsed' WHERE id = ?", (old.id,))
                    report.lapsed += 1
        for pattern in to_propose:
            path = self._propose(pattern, events)
            with db.transaction():
                db.execute("UPDATE usage_patterns SET proposed_skill = ?, status = 'proposed' WHERE id = ?",
                           (path, pattern.id))
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
        """Delete the namespace's events and patterns, and the SKILL.md files its patterns proposed."""
        db = self.kernel.backend
        root = Path(self.kernel.data_dir) / "skills"
        for pattern_id, relative in db.query(
            "SELECT id, proposed_skill FROM usage_patterns WHERE namespace = ? AND proposed_skill IS NOT NULL",
            (namespace,),
        ):
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
        db.execute("DELETE FROM usage_events WHERE namespace = ?", (namespace,))
        db.execute("DELETE FROM usage_patterns WHERE namespace = ?", (namespace,))


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
            category = categories.most_common(1)[0][0] if categories else None
            where = f" for {category} tasks" if category else ""
            out.append(_spec("skill_combination", "skills|" + "|".join(combo),
                             f"{' + '.join(combo)} used together{where}", f"{len(together)} times",
                             {"skills": list(combo), "category": category}, confidence, len(together), together))
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


def _pattern(row: Sequence[Any]) -> UsagePattern:
    return UsagePattern(id=row[0], pattern_type=row[1], description=row[2], frequency=row[3],
                        trigger=json.loads(row[4] or "{}"), confidence=float(row[5]), sample_count=int(row[6]),
                        first_seen=from_iso(row[7]), last_seen=from_iso(row[8]),  # type: ignore[arg-type]
                        proposed_skill=row[9], status=row[10] or "detected", namespace=row[11])


def _pattern_id(namespace: str, kind: str, key: str) -> str:
    return "pat-" + hashlib.sha1(f"{namespace}\x00{kind}\x00{key}".encode()).hexdigest()[:16]


def _slug(text: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", text.casefold()).strip("-")
    return slug[:48].rstrip("-") or "pattern"

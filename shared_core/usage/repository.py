"""All SQL of the usage domain (``usage_events``, ``usage_patterns``), and the read-only counts of
``memory_chunks`` its summary reports. Callers hold the kernel's session; writes run in its transaction."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any, cast

from ..clock import from_iso, to_iso
from ..db import Backend
from ..memories import COLUMNS, Memory
from .records import MemoryUsage, UsageEvent, UsagePattern

__all__ = ["UsageRepository"]

_EVENT_COLUMNS = ("id, event_type, channel, description, category, skills_used, score, timestamp, day, hour, "
                  "day_of_week, namespace")
_PATTERN_COLUMNS = ("id, pattern_type, description, frequency, trigger_json, confidence, sample_count, first_seen, "
                    "last_seen, proposed_skill, status, namespace")


class UsageRepository:
    """Usage events and patterns as records; counts as plain values."""

    def __init__(self, db: Backend) -> None:
        self.db = db

    # -- events ------------------------------------------------------------------------------

    def insert_event(self, event: UsageEvent) -> None:
        self.db.execute(
            f"INSERT INTO usage_events ({_EVENT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (event.id, event.event_type, event.channel, event.description, event.category,
             json.dumps(list(event.skills), ensure_ascii=False), event.score, to_iso(event.timestamp), event.day,
             event.hour, event.day_of_week, event.namespace),
        )

    def events(self, namespace: str, *, since: datetime | None = None, event_type: str | None = None,
               limit: int | None = None) -> list[UsageEvent]:
        """A namespace's events (from ``since`` on, of one type), oldest first."""
        clauses, params = ["namespace = ?"], [namespace]
        if since is not None:
            clauses.append("timestamp >= ?")
            params.append(to_iso(since))
        if event_type is not None:
            clauses.append("event_type = ?")
            params.append(event_type)
        tail = f" LIMIT {int(limit)}" if limit is not None else ""
        rows = self.db.query(
            f"SELECT {_EVENT_COLUMNS} FROM usage_events WHERE {' AND '.join(clauses)} "
            f"ORDER BY timestamp, rowid{tail}", params)
        return [_event(r) for r in rows]

    def event_counts_by_type(self, namespace: str) -> dict[str, int]:
        return {t: int(n) for t, n in self.db.query(
            "SELECT event_type, count(*) FROM usage_events WHERE namespace = ? GROUP BY event_type "
            "ORDER BY event_type", (namespace,))}

    def namespaces(self) -> list[str]:
        """Every namespace with events or patterns."""
        return [r[0] for r in self.db.query("SELECT DISTINCT namespace FROM usage_events UNION "
                                            "SELECT DISTINCT namespace FROM usage_patterns")]

    # -- patterns ----------------------------------------------------------------------------

    def patterns(self, namespace: str, *, status: str | None = None) -> list[UsagePattern]:
        """A namespace's patterns (of one status), most confident first."""
        clauses, params = ["namespace = ?"], [namespace]
        if status is not None:
            clauses.append("status = ?")
            params.append(status)
        rows = self.db.query(
            f"SELECT {_PATTERN_COLUMNS} FROM usage_patterns WHERE {' AND '.join(clauses)} "
            "ORDER BY confidence DESC, sample_count DESC, id", params)
        return [_pattern(r) for r in rows]

    def pattern(self, pattern_id: str) -> UsagePattern | None:
        rows = self.db.query(f"SELECT {_PATTERN_COLUMNS} FROM usage_patterns WHERE id = ?", (pattern_id,))
        return _pattern(rows[0]) if rows else None

    def pattern_count(self, namespace: str) -> int:
        return int(self.db.scalar("SELECT count(*) FROM usage_patterns WHERE namespace = ?", (namespace,)) or 0)

    def save_pattern(self, pattern: UsagePattern) -> None:
        """Insert the pattern, or update what mining may change (never its proposed skill or first sighting)."""
        self.db.execute(
            f"INSERT INTO usage_patterns ({_PATTERN_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT(id) DO UPDATE SET description = excluded.description, frequency = "
            "excluded.frequency, trigger_json = excluded.trigger_json, confidence = excluded.confidence, "
            "sample_count = excluded.sample_count, last_seen = excluded.last_seen, status = excluded.status",
            (pattern.id, pattern.pattern_type, pattern.description, pattern.frequency,
             json.dumps(pattern.trigger, sort_keys=True), pattern.confidence, pattern.sample_count,
             to_iso(pattern.first_seen), to_iso(pattern.last_seen), pattern.proposed_skill,
             pattern.status, pattern.namespace),
        )

    def dismiss(self, pattern_id: str) -> bool:
        """Mark the pattern dismissed; False when there is no such pattern."""
        return self.db.execute("UPDATE usage_patterns SET status = 'dismissed' WHERE id = ?", (pattern_id,)).rowcount != 0

    def mark_lapsed(self, pattern_id: str) -> None:
        self.db.execute("UPDATE usage_patterns SET status = 'lapsed' WHERE id = ?", (pattern_id,))

    def mark_proposed(self, pattern_id: str, skill_path: str) -> None:
        self.db.execute("UPDATE usage_patterns SET proposed_skill = ?, status = 'proposed' WHERE id = ?",
                        (skill_path, pattern_id))

    def proposed_skills(self, namespace: str) -> list[tuple[str, str]]:
        """(pattern id, SKILL.md path relative to the skills directory) of the namespace's proposals."""
        return [(r[0], r[1]) for r in self.db.query(
            "SELECT id, proposed_skill FROM usage_patterns WHERE namespace = ? AND proposed_skill IS NOT NULL",
            (namespace,))]

    def erase(self, namespace: str) -> None:
        """Remove the namespace's events and patterns."""
        self.db.execute("DELETE FROM usage_events WHERE namespace = ?", (namespace,))
        self.db.execute("DELETE FROM usage_patterns WHERE namespace = ?", (namespace,))

    # -- the memories' use (read only) ----------------------------------------------------------

    def memory_usage(self, namespace: str, *, top: int) -> MemoryUsage:
        """Counts by kind, accesses and feedback of the namespace's memories, and its ``top`` most accessed."""
        by_kind = {k: int(n) for k, n in self.db.query(
            "SELECT kind, count(*) FROM memory_chunks WHERE namespace = ? GROUP BY kind ORDER BY kind", (namespace,))}
        accesses, accessed, reinforced, demoted = self.db.query(
            "SELECT coalesce(sum(access_count), 0), coalesce(sum(access_count > 0), 0), coalesce(sum(score > 0), 0), "
            "coalesce(sum(score < 0), 0) FROM memory_chunks WHERE namespace = ?", (namespace,))[0]
        top_rows = self.db.query(
            f"SELECT {', '.join(COLUMNS)} FROM memory_chunks WHERE namespace = ? AND access_count > 0 "
            "ORDER BY access_count DESC, last_access_at DESC, chunk_rowid LIMIT ?", (namespace, top))
        return MemoryUsage(by_kind=by_kind, accesses=int(accesses), accessed=int(accessed), reinforced=int(reinforced),
                           demoted=int(demoted), most_accessed=[Memory.from_row(r) for r in top_rows])


def _stamp(text: str) -> datetime:
    return cast(datetime, from_iso(text))  # the columns are NOT NULL


def _event(row: Sequence[Any]) -> UsageEvent:
    return UsageEvent(id=row[0], event_type=row[1], channel=row[2], description=row[3], category=row[4],
                      skills=tuple(json.loads(row[5] or "[]")), score=row[6], timestamp=_stamp(row[7]),
                      day=row[8], hour=int(row[9]), day_of_week=int(row[10]), namespace=row[11])


def _pattern(row: Sequence[Any]) -> UsagePattern:
    return UsagePattern(id=row[0], pattern_type=row[1], description=row[2], frequency=row[3],
                        trigger=json.loads(row[4] or "{}"), confidence=float(row[5]), sample_count=int(row[6]),
                        first_seen=_stamp(row[7]), last_seen=_stamp(row[8]), proposed_skill=row[9],
                        status=row[10] or "detected", namespace=row[11])

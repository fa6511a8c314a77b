"""All SQL of the insights domain (the ``insights`` and ``insight_access`` tables).

Callers hold the kernel's session; writes run inside its transaction.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from ..clock import to_iso
from ..db import Backend
from .records import AccessCounts, Insight

__all__ = ["InsightRepository"]

_COLUMNS = ", ".join(Insight.COLUMNS)


class InsightRepository:
    """Rows of insights and their access log, as :class:`Insight` records and plain values."""

    def __init__(self, db: Backend) -> None:
        self.db = db

    # -- insights ----------------------------------------------------------------------------

    def get(self, insight_id: str) -> Insight | None:
        rows = self.db.query(f"SELECT {_COLUMNS} FROM insights WHERE id = ?", (insight_id,))
        return Insight.from_row(rows[0]) if rows else None

    def most_recent(self, namespace: str, *, task_label: str | None = None, limit: int | None = None) -> list[Insight]:
        """A namespace's insights (one task label's only, if given), most recently updated first."""
        sql = f"SELECT {_COLUMNS} FROM insights WHERE namespace = ?"
        params: list[Any] = [namespace]
        if task_label is not None:
            sql += " AND task_label = ?"
            params.append(task_label)
        sql += " ORDER BY updated_at DESC, id"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(int(limit))
        return [Insight.from_row(r) for r in self.db.query(sql, params)]

    def all_in(self, namespace: str) -> list[Insight]:
        """Every insight of a namespace, in no particular order (ranking sorts them)."""
        return [Insight.from_row(r) for r in self.db.query(
            f"SELECT {_COLUMNS} FROM insights WHERE namespace = ?", (namespace,))]

    def count(self, namespace: str | None = None) -> int:
        if namespace is None:
            return int(self.db.scalar("SELECT count(*) FROM insights") or 0)
        return int(self.db.scalar("SELECT count(*) FROM insights WHERE namespace = ?", (namespace,)) or 0)

    def upsert(self, insight: Insight) -> None:
        """Insert the insight, or replace what an upsert may change (never its favourite, weight or accesses)."""
        self.db.execute(
            f"INSERT INTO insights ({_COLUMNS}) VALUES ({', '.join('?' for _ in Insight.COLUMNS)}) "
            "ON CONFLICT(id) DO UPDATE SET title = excluded.title, description = excluded.description, "
            "importance = excluded.importance, urgency = excluded.urgency, details = excluded.details, "
            "timeline = excluded.timeline, task_label = excluded.task_label, platform = excluded.platform, "
            "channel = excluded.channel, updated_at = excluded.updated_at",
            _row_values(insight),
        )

    def delete(self, insight_id: str) -> None:
        self.db.execute("DELETE FROM insights WHERE id = ?", (insight_id,))

    def set_view_boost(self, insight_id: str, at: datetime) -> None:
        self.db.execute("UPDATE insights SET view_boosted_at = ? WHERE id = ?", (to_iso(at), insight_id))

    def mark_favorite(self, insight_id: str, at: datetime) -> None:
        self.db.execute("UPDATE insights SET favorite = 1, favorited_at = ? WHERE id = ?", (to_iso(at), insight_id))

    def unmark_favorite(self, insight_id: str) -> None:
        self.db.execute("UPDATE insights SET favorite = 0, favorited_at = NULL WHERE id = ?", (insight_id,))

    def set_custom_weight(self, insight_id: str, multiplier: float) -> None:
        self.db.execute("UPDATE insights SET custom_weight = ? WHERE id = ?", (float(multiplier), insight_id))

    def erase(self, namespace: str) -> int:
        """Remove a namespace's access events and insights; return how many insights."""
        self.db.execute("DELETE FROM insight_access WHERE namespace = ?", (namespace,))
        return int(self.db.execute("DELETE FROM insights WHERE namespace = ?", (namespace,)).rowcount or 0)

    # -- the access log ----------------------------------------------------------------------

    def log_access(self, insight: Insight, kind: str, at: datetime) -> None:
        """Log one access and move the insight's ``last_access_at`` up to ``at``."""
        self.db.execute("INSERT INTO insight_access (insight_id, namespace, kind, at) VALUES (?, ?, ?, ?)",
                        (insight.id, insight.namespace, kind, to_iso(at)))
        # never move backwards, even if the clock does
        self.db.execute("UPDATE insights SET last_access_at = max(coalesce(last_access_at, ''), ?) WHERE id = ?",
                        (to_iso(at), insight.id))

    def access_counts(self, namespace: str, now: datetime, *, frequency_since: datetime, recent_since: datetime,
                      previous_since: datetime, active_since: datetime) -> dict[str, AccessCounts]:
        """Per insight of the namespace: its accesses after each ``*_since`` up to ``now`` (the previous
        trend window is ``previous_since`` up to ``recent_since``); insights without any are left out."""
        t_freq, t_recent, t_previous, t_active = (to_iso(t) for t in (frequency_since, recent_since, previous_since,
                                                                    active_since))
        oldest = min(t_freq, t_previous, t_active)
        rows = self.db.query(
            "SELECT insight_id, sum(at > ?), sum(at > ?), sum(at > ? AND at <= ?), sum(at > ?) FROM insight_access "
            "WHERE namespace = ? AND at > ? AND at <= ? GROUP BY insight_id",
            (t_freq, t_recent, t_previous, t_recent, t_active, namespace, oldest, to_iso(now)),
        )
        return {r[0]: AccessCounts(int(r[1]), int(r[2]), int(r[3]), int(r[4])) for r in rows}

    def drop_access_until(self, cutoff: datetime) -> int:
        """Remove access events at or before ``cutoff``; return how many."""
        return int(self.db.execute("DELETE FROM insight_access WHERE at <= ?", (to_iso(cutoff),)).rowcount or 0)


def _row_values(insight: Insight) -> tuple[Any, ...]:
    values = []
    for column in Insight.COLUMNS:
        value = getattr(insight, column)
        if column in ("details", "timeline"):
            value = json.dumps(value, ensure_ascii=False, sort_keys=True)
        elif isinstance(value, datetime):
            value = to_iso(value)
        elif isinstance(value, bool):
            value = int(value)
        values.append(value)
    return tuple(values)

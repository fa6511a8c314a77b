"""The inspector's SQL: counts of one namespace across the memory, archive, message and summary tables.

Only reads; every query names its namespace.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from ..clock import to_iso
from ..db import Backend

__all__ = ["InspectionRepository"]


class InspectionRepository:
    """Counts for the overview and the session list (run inside ``kernel.session()``)."""

    def __init__(self, db: Backend) -> None:
        self.db = db

    def live_by_kind(self, namespace: str, now: datetime) -> dict[str, int]:
        rows = self.db.query(
            "SELECT kind, count(*) FROM memory_chunks WHERE namespace = ? AND superseded_by IS NULL "
            "AND (expires_at IS NULL OR expires_at > ?) GROUP BY kind ORDER BY kind", (namespace, to_iso(now)))
        return {str(kind): int(n) for kind, n in rows}

    def archived_by_kind(self, namespace: str) -> dict[str, int]:
        rows = self.db.query("SELECT kind, count(*) FROM memory_archive WHERE namespace = ? GROUP BY kind "
                             "ORDER BY kind", (namespace,))
        return {str(kind): int(n) for kind, n in rows}

    def superseded(self, namespace: str) -> int:
        return int(self.db.scalar("SELECT count(*) FROM memory_chunks WHERE namespace = ? AND superseded_by IS NOT NULL",
                                  (namespace,)) or 0)

    def expired(self, namespace: str, now: datetime) -> int:
        return int(self.db.scalar("SELECT count(*) FROM memory_chunks WHERE namespace = ? AND expires_at IS NOT NULL "
                                  "AND expires_at <= ?", (namespace, to_iso(now))) or 0)

    def pinned(self, namespace: str) -> int:
        return int(self.db.scalar("SELECT count(*) FROM memory_chunks WHERE namespace = ? AND pinned = 1",
                                  (namespace,)) or 0)

    def growth(self, namespace: str) -> list[tuple[str, int]]:
        """(day, memories created that day) for live and archived memories, oldest day first."""
        rows = self.db.query(
            "SELECT substr(created_at, 1, 10), count(*) FROM ("
            "SELECT created_at FROM memory_chunks WHERE namespace = ? UNION ALL "
            "SELECT created_at FROM memory_archive WHERE namespace = ?) AS created GROUP BY 1 ORDER BY 1",
            (namespace, namespace))
        return [(str(day), int(n)) for day, n in rows]

    def message_tiers(self, namespace: str) -> dict[str, int]:
        """Messages by the forgetting engine's tier (short, mid, long), and those it compressed."""
        rows = self.db.query(
            "SELECT CASE WHEN archived_at IS NULL THEN memory_stage ELSE 'compressed' END, count(*) "
            "FROM raw_messages WHERE namespace = ? GROUP BY 1", (namespace,))
        found = {str(tier): int(n) for tier, n in rows}
        return {tier: found.get(tier, 0) for tier in ("short", "mid", "long", "compressed")}

    def summary_tiers(self, namespace: str) -> dict[str, int]:
        rows = self.db.query("SELECT summary_tier, count(*) FROM memory_summaries WHERE namespace = ? GROUP BY 1",
                             (namespace,))
        found = {str(tier): int(n) for tier, n in rows}
        return {tier: found.get(tier, 0) for tier in ("L1", "L2", "L3")}

    def sessions(self, namespace: str) -> int:
        return int(self.db.scalar("SELECT count(*) FROM sessions WHERE namespace = ?", (namespace,)) or 0)

    def documents(self, namespace: str) -> int:
        return int(self.db.scalar("SELECT count(*) FROM rag_documents WHERE namespace = ?", (namespace,)) or 0)

    def links(self, namespace: str) -> int:
        return int(self.db.scalar("SELECT count(*) FROM memory_links WHERE namespace = ?", (namespace,)) or 0)

    def message_counts(self, session_ids: Sequence[str]) -> dict[str, int]:
        if not session_ids:
            return {}
        marks = ", ".join("?" for _ in session_ids)
        rows = self.db.query(f"SELECT session_id, count(*) FROM raw_messages WHERE session_id IN ({marks}) "
                             "GROUP BY session_id", tuple(session_ids))
        return {str(sid): int(n) for sid, n in rows}

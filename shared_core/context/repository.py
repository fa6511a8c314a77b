"""All SQL of the context manager: which messages were read for facts (``context_extracted``) and the
log of flushes and compactions (``context_events``)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, cast

from ..clock import from_iso, to_iso
from ..db import Backend
from .records import ContextEvent

__all__ = ["ContextRepository"]

_COLUMNS = ("id, action, session_key, namespace, policy, created_at, messages_before, messages_after, compacted, "
            "tokens_before, tokens_after, fact_ids, summary_id, summary, method")


class ContextRepository:
    """Callers hold the kernel's session; writes run inside its transaction."""

    def __init__(self, db: Backend) -> None:
        self.db = db

    def extracted(self, key: str, fingerprints: Sequence[str]) -> set[str]:
        """Which of ``fingerprints`` were already read for facts in conversation ``key``."""
        found: set[str] = set()
        unique = list(dict.fromkeys(fingerprints))
        for start in range(0, len(unique), 500):
            part = unique[start : start + 500]
            rows = self.db.query(
                f"SELECT fingerprint FROM context_extracted WHERE session_key = ? AND fingerprint IN "
                f"({', '.join('?' for _ in part)})", [key, *part])
            found.update(r[0] for r in rows)
        return found

    def mark_extracted(self, key: str, namespace: str, fingerprints: Iterable[str], now: datetime) -> None:
        self.db.executemany(
            "INSERT OR IGNORE INTO context_extracted (session_key, fingerprint, namespace, extracted_at) "
            "VALUES (?, ?, ?, ?)", [(key, f, namespace, to_iso(now)) for f in dict.fromkeys(fingerprints)])

    def log(self, event: ContextEvent) -> None:
        self.db.execute(
            f"INSERT OR REPLACE INTO context_events ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (event.id, event.action, event.session_key, event.namespace, event.policy, to_iso(event.created_at),
             event.messages_before, event.messages_after, event.compacted, event.tokens_before,
             event.tokens_after, json.dumps(event.fact_ids), event.summary_id, event.summary, event.method))

    def events(self, key: str, *, action: str | None = None, limit: int | None = None) -> list[ContextEvent]:
        """Flushes and compactions of a conversation (or only one ``action``), newest first."""
        where, params = "session_key = ?", [key]
        if action is not None:
            where += " AND action = ?"
            params.append(action)
        tail = f" LIMIT {int(limit)}" if limit is not None else ""
        rows = self.db.query(f"SELECT {_COLUMNS} FROM context_events WHERE {where} "
                             f"ORDER BY created_at DESC, rowid DESC{tail}", params)
        return [_event(r) for r in rows]

    def flushed_since_compaction(self, key: str) -> bool:
        """True when the conversation was flushed after its last compaction (one flush per fill cycle)."""
        latest = self.db.query("SELECT action FROM context_events WHERE session_key = ? "
                               "ORDER BY created_at DESC, rowid DESC LIMIT 1", (key,))
        return bool(latest) and latest[0][0] == "flush"

    def erase(self, namespace: str) -> None:
        self.db.execute("DELETE FROM context_extracted WHERE namespace = ?", (namespace,))
        self.db.execute("DELETE FROM context_events WHERE namespace = ?", (namespace,))


def _event(row: Sequence[Any]) -> ContextEvent:
    return ContextEvent(
        id=row[0], action=row[1], session_key=row[2], namespace=row[3], policy=row[4],
        created_at=cast(datetime, from_iso(row[5])),  # NOT NULL
        messages_before=int(row[6]), messages_after=int(row[7]), compacted=int(row[8]), tokens_before=int(row[9]),
        tokens_after=int(row[10]), fact_ids=json.loads(row[11] or "[]"), summary_id=row[12], summary=row[13],
        method=row[14],
    )

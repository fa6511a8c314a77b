"""SQL of the context manager: which messages were read for facts, and the compaction log."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..clock import from_iso, to_iso
from ..db import Database

__all__ = ["ContextState", "CompactionRecord", "session_key"]


def session_key(session_id: str | None, namespace: str) -> str:
    """The bookkeeping key of a conversation: its id, or ``ns:<namespace>`` for a list without one."""
    return session_id if session_id else f"ns:{namespace}"


@dataclass(frozen=True)
class CompactionRecord:
    """One compaction, as logged."""

    id: str
    session_key: str
    namespace: str
    policy: str
    created_at: datetime
    messages_before: int
    messages_after: int
    compacted: int
    tokens_before: int
    tokens_after: int
    fact_ids: list[str] = field(default_factory=list)
    summary_id: str | None = None
    summary: str = ""
    method: str = "rules"


_COLUMNS = ("id, session_key, namespace, policy, created_at, messages_before, messages_after, compacted, "
            "tokens_before, tokens_after, fact_ids, summary_id, summary, method")


class ContextState:
    """Callers hold the store lock; writes run inside ``db.transaction()``."""

    def __init__(self, db: Database) -> None:
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

    def log_compaction(self, record: CompactionRecord) -> None:
        self.db.execute(
            f"INSERT OR REPLACE INTO context_compactions ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (record.id, record.session_key, record.namespace, record.policy, to_iso(record.created_at),
             record.messages_before, record.messages_after, record.compacted, record.tokens_before,
             record.tokens_after, json.dumps(record.fact_ids), record.summary_id, record.summary, record.method))

    def compactions(self, key: str, limit: int | None = None) -> list[CompactionRecord]:
        """Compactions of a conversation, newest first."""
        tail = f" LIMIT {int(limit)}" if limit is not None else ""
        rows = self.db.query(f"SELECT {_COLUMNS} FROM context_compactions WHERE session_key = ? "
                             f"ORDER BY created_at DESC, rowid DESC{tail}", (key,))
        return [_record(r) for r in rows]

    def erase(self, namespace: str) -> None:
        self.db.execute("DELETE FROM context_extracted WHERE namespace = ?", (namespace,))
        self.db.execute("DELETE FROM context_compactions WHERE namespace = ?", (namespace,))


def _record(row: Sequence[Any]) -> CompactionRecord:
    return CompactionRecord(
        id=row[0], session_key=row[1], namespace=row[2], policy=row[3], created_at=from_iso(row[4]),  # type: ignore[arg-type]
        messages_before=int(row[5]), messages_after=int(row[6]), compacted=int(row[7]), tokens_before=int(row[8]),
        tokens_after=int(row[9]), fact_ids=json.loads(row[10] or "[]"), summary_id=row[11], summary=row[12],
        method=row[13],
    )

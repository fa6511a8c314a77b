"""All SQL of episodic memory (the ``episodic_memory`` table); callers hold the kernel's session."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ..clock import from_iso, to_iso
from ..db import Backend
from .records import Episode

__all__ = ["EpisodeRepository"]

_COLUMNS = "id, namespace, summary, occurred_at, channel, importance, session_id, metadata, created_at"


class EpisodeRepository:
    def __init__(self, db: Backend) -> None:
        self.db = db

    def insert(self, episode: Episode) -> None:
        self.db.execute(
            f"INSERT INTO episodic_memory ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (episode.id, episode.namespace, episode.summary, to_iso(episode.occurred_at), episode.channel,
             float(episode.importance), episode.session_id,
             json.dumps(episode.metadata, ensure_ascii=False, default=str), to_iso(episode.created_at)),
        )

    def get(self, episode_id: str) -> Episode | None:
        rows = self._select("id = ?", [episode_id])
        return rows[0] if rows else None

    def by_ids(self, ids: Sequence[str]) -> list[Episode]:
        return self._select(f"id IN ({', '.join('?' for _ in ids)})", list(ids)) if ids else []

    def between(self, namespace: str, since: datetime | None, until: datetime | None, channel: str | None,
                limit: int | None) -> list[Episode]:
        """Episodes with ``since <= occurred_at < until`` (either end open), oldest first."""
        clauses: list[str] = ["namespace = ?"]
        params: list[Any] = [namespace]
        if since is not None:
            clauses.append("occurred_at >= ?")
            params.append(to_iso(since))
        if until is not None:
            clauses.append("occurred_at < ?")
            params.append(to_iso(until))
        if channel is not None:
            clauses.append("channel = ?")
            params.append(channel)
        return self._select(" AND ".join(clauses), params, order="occurred_at, rowid", limit=limit)

    def recent(self, namespace: str, channel: str | None, limit: int | None) -> list[Episode]:
        """The latest episodes, newest first."""
        clauses, params = ["namespace = ?"], [namespace]
        if channel is not None:
            clauses.append("channel = ?")
            params.append(channel)
        return self._select(" AND ".join(clauses), params, order="occurred_at DESC, rowid DESC", limit=limit)

    def delete(self, episode_id: str) -> None:
        self.db.execute("DELETE FROM episodic_memory WHERE id = ?", (episode_id,))

    def erase(self, namespace: str) -> None:
        self.db.execute("DELETE FROM episodic_memory WHERE namespace = ?", (namespace,))

    def _select(self, where: str, params: Sequence[Any], *, order: str = "occurred_at",
                limit: int | None = None) -> list[Episode]:
        tail = f" LIMIT {int(limit)}" if limit is not None else ""
        rows = self.db.query(f"SELECT {_COLUMNS} FROM episodic_memory WHERE {where} ORDER BY {order}{tail}",
                             list(params))
        return [_episode(r) for r in rows]


def _episode(row: Sequence[Any]) -> Episode:
    occurred = from_iso(row[3])
    assert occurred is not None  # the column is NOT NULL
    return Episode(id=row[0], namespace=row[1], summary=row[2], occurred_at=occurred, channel=row[4],
                   importance=float(row[5]), session_id=row[6], metadata=json.loads(row[7] or "{}"),
                   created_at=from_iso(row[8]))

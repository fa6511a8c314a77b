"""All SQL of the key-value domain (the ``kv_entries`` table). Values are stored as JSON text;
callers hold the kernel's session, and writes run in its transaction."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from ..clock import to_iso
from ..db import Backend

__all__ = ["KeyValueRepository"]

_BATCH = 500  # keys per statement: well under both backends' bound-parameter limits


class KeyValueRepository:
    """Rows of ``(namespace, collection, key) -> JSON text``."""

    def __init__(self, db: Backend) -> None:
        self.db = db

    def put_many(self, namespace: str, collection: str, entries: Sequence[tuple[str, str]], at: datetime) -> None:
        """Insert or replace ``(key, JSON text)`` entries of a collection, updated ``at``."""
        updated_at = to_iso(at)
        self.db.executemany(
            "INSERT INTO kv_entries (namespace, collection, key, value, updated_at) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (namespace, collection, key) DO UPDATE SET value = excluded.value, "
            "updated_at = excluded.updated_at",
            [(namespace, collection, key, value, updated_at) for key, value in entries],
        )

    def delete_keys(self, namespace: str, collection: str, keys: Sequence[str]) -> int:
        """Remove these keys of a collection (no duplicates among them); return how many existed."""
        deleted = 0
        for start in range(0, len(keys), _BATCH):
            part = keys[start : start + _BATCH]
            cursor = self.db.execute(
                f"DELETE FROM kv_entries WHERE namespace = ? AND collection = ? "
                f"AND key IN ({', '.join('?' for _ in part)})",
                (namespace, collection, *part),
            )
            deleted += max(cursor.rowcount, 0)
        return deleted

    def delete_collection(self, namespace: str, collection: str) -> int:
        cursor = self.db.execute("DELETE FROM kv_entries WHERE namespace = ? AND collection = ?", (namespace, collection))
        return max(cursor.rowcount, 0)

    def erase(self, namespace: str) -> int:
        cursor = self.db.execute("DELETE FROM kv_entries WHERE namespace = ?", (namespace,))
        return max(cursor.rowcount, 0)

    def values(self, namespace: str, collection: str, keys: Sequence[str]) -> dict[str, str]:
        """The JSON text of those of ``keys`` that exist, in no particular order."""
        out: dict[str, str] = {}
        for start in range(0, len(keys), _BATCH):
            part = keys[start : start + _BATCH]
            for key, value in self.db.query(
                f"SELECT key, value FROM kv_entries WHERE namespace = ? AND collection = ? "
                f"AND key IN ({', '.join('?' for _ in part)})",
                (namespace, collection, *part),
            ):
                out[key] = value
        return out

    def items(self, namespace: str, collection: str) -> list[tuple[str, str]]:
        """``(key, JSON text)`` of a collection, in key order."""
        rows = self.db.query(
            "SELECT key, value FROM kv_entries WHERE namespace = ? AND collection = ? ORDER BY key",
            (namespace, collection),
        )
        return [(key, value) for key, value in rows]

    def keys(self, namespace: str, collection: str) -> list[str]:
        rows = self.db.query(
            "SELECT key FROM kv_entries WHERE namespace = ? AND collection = ? ORDER BY key",
            (namespace, collection),
        )
        return [r[0] for r in rows]

    def collections(self, namespace: str) -> dict[str, int]:
        """Every collection of a namespace and how many keys it holds, by name."""
        rows = self.db.query(
            "SELECT collection, count(*) FROM kv_entries WHERE namespace = ? GROUP BY collection ORDER BY collection",
            (namespace,),
        )
        return {c: int(n) for c, n in rows}

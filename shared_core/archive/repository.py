"""``ArchiveRepository``: all SQL of ``memory_archive``, where pruned and compressed memories go
(the archive's service, :mod:`shared_core.archive.service`, says what archiving means)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..clock import Clock, from_iso, to_iso
from ..db import Backend
from ..index.keyword import keyword_index_for
from ..index.keyword_query import KeywordQuery
from ..index.scope import Scope
from ..memories.records import COLUMNS, Memory
from ..memories.repository import MemoryRepository

__all__ = ["ArchiveRepository", "archived_memory"]

# the columns both tables share (everything but the rowid key)
_SHARED = [c for c in COLUMNS if c != "chunk_rowid"]
_ARCHIVE_SELECT = ", ".join(["archive_rowid", *_SHARED, "archived_at", "archive_reason"])


class ArchiveRepository:
    """SQL for ``memory_archive``; callers hold the kernel's session."""

    def __init__(self, db: Backend, memories: MemoryRepository, clock: Clock, keyword: Any = None) -> None:
        self.db = db
        self.memories = memories
        self.clock = clock
        self.keyword = keyword if keyword is not None else keyword_index_for(db)

    def move(self, rowids: Sequence[int], reason: str) -> int:
        """Archive live rows (inside the caller's transaction); return how many moved."""
        if not reason or not isinstance(reason, str):
            raise ValueError("archiving needs a reason, e.g. 'size-prune' or 'decayed'")
        ids = list(rowids)
        now = to_iso(self.clock.now())
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            marks = ", ".join("?" for _ in part)
            self.db.execute(
                f"INSERT INTO memory_archive ({', '.join(_SHARED)}, archived_at, archive_reason) "
                f"SELECT {', '.join(_SHARED)}, ?, ? FROM memory_chunks WHERE chunk_rowid IN ({marks})",
                (now, reason, *part),
            )
        return self.memories.delete_rows(ids)

    def get(self, memory_id: str, namespace: str | None = None) -> Memory | None:
        rows = self.db.query(f"SELECT {_ARCHIVE_SELECT} FROM memory_archive WHERE id = ?", (memory_id,))
        if not rows:
            return None
        memory = archived_memory(rows[0])
        if namespace is not None and memory.namespace != namespace:
            return None
        return memory

    def restore(self, memory: Memory) -> None:
        """Put an archived memory back into the live index (inside the caller's transaction)."""
        vector = self.memories.embed([memory.text])[0]
        self.memories.insert_full(memory, vector)
        self.db.execute("DELETE FROM memory_archive WHERE id = ?", (memory.id,))

    def search(self, query: KeywordQuery, scope: Scope, limit: int) -> list[tuple[Memory, float]]:
        """(memory, BM25 as a positive number), best first, within ``scope``."""
        rows = self.keyword.search_archive(query, scope, limit, ["archive_rowid", *_SHARED, "archived_at", "archive_reason"])
        return [(archived_memory(row[:-1]), float(row[-1])) for row in rows]

    def select(self, scope: Scope, *, limit: int | None = None, offset: int = 0) -> list[Memory]:
        sql, params = scope.sql("c", self.db.capabilities.sql_flavour)
        tail = " LIMIT ? OFFSET ?" if limit is not None else ""
        extra: list[Any] = [limit, offset] if limit is not None else []
        rows = self.db.query(
            f"SELECT {', '.join('c.' + c for c in ['archive_rowid', *_SHARED, 'archived_at', 'archive_reason'])} "
            f"FROM memory_archive c WHERE {sql} ORDER BY c.archived_at, c.archive_rowid{tail}",
            (*params, *extra),
        )
        return [archived_memory(r) for r in rows]

    def count(self, namespace: str | None = None) -> int:
        if namespace is None:
            return int(self.db.scalar("SELECT count(*) FROM memory_archive") or 0)
        return int(self.db.scalar("SELECT count(*) FROM memory_archive WHERE namespace = ?", (namespace,)) or 0)

    def delete(self, ids: Sequence[str], *, kind: str | None = None) -> None:
        """Delete archived memories for good (of ``kind`` only, when given)."""
        ids = list(ids)
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            marks = ", ".join("?" for _ in part)
            if kind is None:
                self.db.execute(f"DELETE FROM memory_archive WHERE id IN ({marks})", part)
            else:
                self.db.execute(f"DELETE FROM memory_archive WHERE id IN ({marks}) AND kind = ?", (*part, kind))

    def superseded_by(self, memory_id: str) -> list[str]:
        """The ids of the archived rows that ``memory_id`` superseded."""
        return [r[0] for r in self.db.query("SELECT id FROM memory_archive WHERE superseded_by = ?", (memory_id,))]

    def erase(self, namespace: str) -> int:
        cursor = self.db.execute("DELETE FROM memory_archive WHERE namespace = ?", (namespace,))
        self.keyword.optimize_archive()
        return int(cursor.rowcount or 0)


def archived_memory(row: Sequence[Any]) -> Memory:
    """A Memory from an archive row (``archive_rowid, <shared columns>, archived_at, archive_reason``)."""
    live_shaped = (row[0], *row[1 : 1 + len(_SHARED)])
    memory = Memory.from_row(live_shaped)
    memory.archived_at = from_iso(row[1 + len(_SHARED)])
    memory.archive_reason = row[2 + len(_SHARED)]
    memory.rowid = 0
    return memory

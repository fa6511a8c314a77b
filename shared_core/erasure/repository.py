"""The SQL of an erase: what rows a namespace has in each table, and the marker of an unfinished erase.

The rows themselves are deleted by each domain's eraser (the registry), never here.
"""

from __future__ import annotations

from ..db import Backend
from .records import PENDING_KEY

__all__ = ["ErasureRepository"]


class ErasureRepository:
    def __init__(self, db: Backend) -> None:
        self.db = db

    def row_counts(self, namespace: str) -> dict[str, int]:
        """Rows of ``namespace`` in every table with a ``namespace`` column."""
        return {table: int(self.db.scalar(f'SELECT count(*) FROM "{table}" WHERE namespace = ?', (namespace,)) or 0)
                for table in self.db.tables_with_column("namespace")}

    def clear_pending(self) -> None:
        """Remove the marker of an unfinished erase (the backend keeps it with its other metadata)."""
        self.db.execute("DELETE FROM store_meta WHERE key = ?", (PENDING_KEY,))

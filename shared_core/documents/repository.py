"""SQL for the knowledge base's own tables (``rag_documents``, ``rag_chunks``; migration 0030).

Callers hold the store lock and run writes inside ``store.transaction()``; the chunks'
text and vectors are written through the store's index in the same transaction.
"""

from __future__ import annotations

import builtins
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..clock import from_iso, to_iso
from ..db import Backend

__all__ = ["Document", "DocumentChunk", "DocumentRepository"]

_IDF_FLOOR = 1e-6  # FTS5's own floor for the BM25 idf

_DOCUMENT_COLUMNS = (
    "id, namespace, file_name, content_type, size_bytes, total_chunks, blob_path, uploaded_at, updated_at, "
    "metadata, content_hash, chunker"
)


@dataclass(frozen=True)
class Document:
    """A document in the knowledge base (seed 003's ``rag_documents`` row, without its text)."""

    id: str
    namespace: str
    file_name: str
    content_type: str
    size_bytes: int
    total_chunks: int
    blob_path: str
    uploaded_at: datetime
    updated_at: datetime
    metadata: dict[str, Any] = field(default_factory=dict)
    content_hash: str = ""
    chunker: str = ""

    @property
    def title(self) -> str:
        """The title the file records, else its file name."""
        return str(self.metadata.get("title") or self.file_name)

    def to_dict(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["uploaded_at"] = to_iso(self.uploaded_at)
        out["updated_at"] = to_iso(self.updated_at)
        return out

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> Document:
        return cls(
            id=row[0], namespace=row[1], file_name=row[2], content_type=row[3], size_bytes=int(row[4]),
            total_chunks=int(row[5]), blob_path=row[6], uploaded_at=from_iso(row[7]),  # type: ignore[arg-type]
            updated_at=from_iso(row[8]), metadata=json.loads(row[9] or "{}"),  # type: ignore[arg-type]
            content_hash=row[10], chunker=row[11],
        )


@dataclass(frozen=True)
class DocumentChunk:
    """One chunk (seed 003's ``rag_chunks`` row with its content from the index)."""

    id: str
    document_id: str
    namespace: str
    chunk_index: int
    content: str
    start: int
    end: int
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class DocumentRepository:
    def __init__(self, db: Backend) -> None:
        from ..index.keyword import keyword_index_for

        self.db = db
        self.keyword = keyword_index_for(db)  # term statistics in the database's own full-text index

    # -- documents ---------------------------------------------------------------------------

    def get(self, document_id: str) -> Document | None:
        rows = self.db.query(f"SELECT {_DOCUMENT_COLUMNS} FROM rag_documents WHERE id = ?", (document_id,))
        return Document.from_row(rows[0]) if rows else None

    def find(self, namespace: str, blob_path: str) -> Document | None:
        rows = self.db.query(
            f"SELECT {_DOCUMENT_COLUMNS} FROM rag_documents WHERE namespace = ? AND blob_path = ?",
            (namespace, blob_path),
        )
        return Document.from_row(rows[0]) if rows else None

    def content(self, document_id: str) -> str | None:
        return self.db.scalar("SELECT content FROM rag_documents WHERE id = ?", (document_id,))

    def page(self, namespace: str | None, limit: int | None, offset: int = 0) -> list[Document]:
        """Documents of ``namespace`` (``None``: every namespace), most recently uploaded first."""
        where, params = ("WHERE namespace = ?", [namespace]) if namespace is not None else ("", [])
        rows = self.db.query(
            f"SELECT {_DOCUMENT_COLUMNS} FROM rag_documents {where} "
            "ORDER BY uploaded_at DESC, rowid DESC LIMIT ? OFFSET ?",
            (*params, -1 if limit is None else int(limit), int(offset)),
        )
        return [Document.from_row(r) for r in rows]

    def count(self, namespace: str | None) -> int:
        if namespace is None:
            return int(self.db.scalar("SELECT count(*) FROM rag_documents") or 0)
        return int(self.db.scalar("SELECT count(*) FROM rag_documents WHERE namespace = ?", (namespace,)) or 0)

    def insert(self, document: Document, content: str) -> None:
        self.db.execute(
            f"INSERT INTO rag_documents ({_DOCUMENT_COLUMNS}, content) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            self._values(document) + (content,),
        )

    def replace(self, document: Document, content: str) -> None:
        """New content for an existing document id (its chunks were deleted first)."""
        self.db.execute(
            "UPDATE rag_documents SET file_name = ?, content_type = ?, size_bytes = ?, total_chunks = ?, "
            "updated_at = ?, metadata = ?, content_hash = ?, chunker = ?, content = ? WHERE id = ?",
            (document.file_name, document.content_type, document.size_bytes, document.total_chunks,
             to_iso(document.updated_at), _json(document.metadata), document.content_hash, document.chunker,
             content, document.id),
        )

    def delete(self, document_id: str) -> None:
        self.db.execute("DELETE FROM rag_documents WHERE id = ?", (document_id,))  # rag_chunks cascade

    def erase_namespace(self, namespace: str) -> None:
        self.db.execute("DELETE FROM rag_chunks WHERE namespace = ?", (namespace,))
        self.db.execute("DELETE FROM rag_documents WHERE namespace = ?", (namespace,))

    @staticmethod
    def _values(d: Document) -> tuple[Any, ...]:
        return (d.id, d.namespace, d.file_name, d.content_type, d.size_bytes, d.total_chunks, d.blob_path,
                to_iso(d.uploaded_at), to_iso(d.updated_at), _json(d.metadata), d.content_hash, d.chunker)

    # -- chunks ------------------------------------------------------------------------------

    def chunk_ids(self, document_id: str) -> builtins.list[str]:
        return [r[0] for r in self.db.query(
            "SELECT id FROM rag_chunks WHERE document_id = ? ORDER BY chunk_index", (document_id,))]

    def insert_chunks(self, rows: Sequence[tuple[str, str, str, int, int, int, dict[str, Any]]]) -> None:
        """(id, document_id, namespace, chunk_index, start, end, metadata) rows."""
        self.db.executemany(
            "INSERT INTO rag_chunks (id, document_id, namespace, chunk_index, start_offset, end_offset, metadata) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(*row[:6], _json(row[6])) for row in rows],
        )

    def delete_chunks(self, document_id: str) -> None:
        self.db.execute("DELETE FROM rag_chunks WHERE document_id = ?", (document_id,))

    def chunks(self, document_id: str) -> builtins.list[DocumentChunk]:
        rows = self.db.query(
            "SELECT r.id, r.document_id, r.namespace, r.chunk_index, m.text, r.start_offset, r.end_offset, r.metadata "
            "FROM rag_chunks r JOIN memory_chunks m ON m.id = r.id WHERE r.document_id = ? ORDER BY r.chunk_index",
            (document_id,),
        )
        return [DocumentChunk(r[0], r[1], r[2], int(r[3]), r[4], int(r[5]), int(r[6]), json.loads(r[7] or "{}"))
                for r in rows]

    # -- keyword statistics for the knowledge-base threshold ------------------------------------

    def term_weights(self, terms: Sequence[str], candidates: Sequence[int]) -> builtins.list[tuple[float, set[int]]]:
        """For each query term: FTS5's BM25 idf over the whole index, and which candidate rows contain it.

        idf = ln((N - n + 0.5) / (n + 0.5)), at least 1e-6 as in FTS5, where N is the number of
        indexed rows and n those containing the term (counted only up to N/2, past which the
        floor applies). So a term in most rows weighs next to nothing beside a rare one, and a
        query made only of such terms weighs its terms equally. Terms no row contains weigh 0:
        nothing could match them.
        """
        total = int(self.db.scalar("SELECT count(*) FROM memory_chunks") or 0)
        out: list[tuple[float, set[int]]] = []
        cap = total // 2 + 1
        for term in terms:
            hits = self.keyword.document_count(term, cap)
            if hits == 0 or total == 0:
                out.append((0.0, set()))
                continue
            idf = max(_IDF_FLOOR, math.log((total - hits + 0.5) / (hits + 0.5)))
            out.append((idf, self.keyword.rows_containing(term, list(candidates))))
        return out


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)

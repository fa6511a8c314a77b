"""What search and the repositories ask of a keyword index and of a vector index, on either backend.

:func:`~.keyword.keyword_index_for` and :func:`~.vectors.vector_index_for` return these: FTS5 and
sqlite-vec on SQLite (:class:`~.keyword.SqliteKeywordIndex`, :class:`~.vectors.SqliteVectorIndex`),
a tsvector column and pgvector on PostgreSQL (:mod:`.keyword_pg`, :mod:`.vectors_pg`). Row ids are
``memory_chunks.chunk_rowid``; writes run inside the caller's transaction.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..clock import from_iso
from .keyword_query import KeywordQuery
from .scope import Scope

__all__ = ["KeywordIndex", "LoadDeferring", "RowState", "VectorIndex", "content_of", "epoch_of", "stamp_of"]


@dataclass(frozen=True)
class RowState:
    """What a vector index keeps about a row besides its vector (for filtering before top-k)."""

    namespace: str
    kind: str
    expires: float  # epoch seconds, inf when the row never expires
    current: bool  # not superseded
    stamp: str  # changes whenever the row's vector changes
    created: float  # epoch seconds of created_at


def epoch_of(iso: str | None) -> float:
    """Epoch seconds of a stored timestamp (infinity for none). Distinct microseconds stay distinct
    floats (a float64 keeps a quarter of a microsecond in this century): compared as the text is."""
    when = from_iso(iso)
    return math.inf if when is None else when.timestamp()


def stamp_of(embedded_at: str | None, content_hash: str | None) -> str:
    """A value that changes whenever a row's vector changes."""
    return f"{embedded_at or ''}|{content_hash or ''}"


def content_of(stamp: str) -> str:
    """The content hash in a :func:`stamp_of` value."""
    return stamp.rpartition("|")[2]


class KeywordIndex(Protocol):
    """Full-text search over ``memory_chunks`` (text, tags, source) and the archive, BM25-ranked."""

    def prepare(self, text: str, scope: Scope | None = None) -> KeywordQuery:
        """The query for ``text``; with a ``scope``, a common word is left out only if common within it."""

    def search(self, query: KeywordQuery, scope: Scope, limit: int) -> list[tuple[int, float]]:
        """(row id, BM25), best first, within ``scope``."""

    def search_archive(self, query: KeywordQuery, scope: Scope, limit: int, columns: list[str]) -> list[Any]:
        """Rows of ``memory_archive`` (``columns``, then BM25), best first, within ``scope``."""

    def optimize(self) -> None:
        """Merge the index after many deletes."""

    def optimize_archive(self) -> None: ...

    def document_count(self, term: str, cap: int) -> int:
        """How many rows contain ``term`` (counted up to ``cap``)."""

    def rows_containing(self, term: str, rowids: list[int]) -> set[int]:
        """Which of ``rowids`` contain ``term``."""


class VectorIndex(Protocol):
    """Vectors of ``memory_chunks`` rows and cosine KNN within a scope."""

    dims: int
    #: the vector is a column of the chunk row (its INSERT carries it), not a row of its own table
    inline: bool

    @property
    def name(self) -> str:
        """What ``store.stats()`` calls this index."""

    @property
    def uses_mirror(self) -> bool:
        """Whether searches run on an in-process copy of the vectors."""

    def put(self, rowid: int, vector: np.ndarray, state: RowState, *, replace: bool) -> None: ...

    def put_many(self, rows: list[tuple[int, np.ndarray, RowState]]) -> None: ...

    def delete(self, rowids: Iterable[int]) -> None: ...

    def reset(self) -> None:
        """Forget what is cached about the vectors (after they were rewritten)."""

    def close(self) -> None:
        """The store is closing: leave what the index keeps outside the database durable."""

    def ensure_ready(self) -> None:
        """Create what the index needs for the store's embedder (PostgreSQL's HNSW index)."""

    def purge_deleted(self) -> None:
        """Make sure no deleted vector's bytes stay behind (for erasing)."""

    def rebuild(self, dims: int) -> None:
        """Empty the index for vectors of ``dims`` dimensions (a re-embed)."""

    def write_all(self, rows: list[tuple[int, np.ndarray]]) -> None: ...

    def search(self, query: np.ndarray, k: int, scope: Scope, *, now: float) -> list[tuple[int, float]]:
        """(row id, cosine similarity), best first: the top ``k`` within ``scope``."""

    def search_in_background(self, query: np.ndarray, k: int, scope: Scope, *,
                             now: float) -> Future[list[tuple[int, float]]] | None:
        """:meth:`search` on a worker thread, or None when it would not be faster."""

    def same_content(self, content_hash: str, scope: Scope, *, now: float) -> tuple[bool, int | None]:
        """(whether the answer is known, the row in ``scope`` holding that content or None)."""

    def above(self, query: np.ndarray, threshold: float, scope: Scope, *, now: float,
              limit: int) -> list[tuple[int, float]]:
        """(row id, cosine similarity), best first: up to ``limit`` rows in ``scope`` whose similarity
        exceeds ``threshold`` (the near-duplicates of an ``add``)."""

    def similarities(self, query: np.ndarray, rowids: Sequence[int]) -> dict[int, float]: ...

    def vectors_of(self, rowids: Sequence[int]) -> dict[int, np.ndarray]: ...


@runtime_checkable
class LoadDeferring(Protocol):
    """A vector index that is built faster after a bulk load than kept current through it
    (PostgreSQL's HNSW index); ``add_many`` asks it, the other indexes need no such step."""

    def defer_for_load(self, rows: int) -> bool:
        """Before a load of ``rows`` (in its write transaction): stop keeping the index current; True if it did."""

    def build_after_load(self) -> None:
        """After that load (in a write transaction): build the index over every row."""

"""The keyword side of search on PostgreSQL: full-text search over ``search_text``.

``memory_chunks.search_text`` is a generated ``tsvector`` (GIN-indexed) of text (weight B),
tags (A) and source (C), built with the ``openkoi`` text search configuration (English
stemming, no stop words) after ``openkoi_fold`` (diacritics removed, ASCII punctuation
split). Queries go through seed 002's sanitiser (:func:`.sanitize.query_terms`), then each
word, folded the same way, becomes a quoted lexeme OR-joined into a ``to_tsquery``
expression. Only letters, digits and combining marks survive the sanitiser, so a quoted
word never contains a quote or a backslash and no input can raise a tsquery syntax error.

Ranking is BM25-shaped: each word's ``ts_rank_cd`` (cover density with the column weights
of ``search.*_weight`` and normalisation 1, i.e. divided by 1 + log of the length) times
the word's inverse document frequency, ln((N - n + 0.5) / (n + 0.5)) floored at 1e-6 as in
FTS5, summed over the words. So, as with SQLite's BM25, a word most memories contain
weighs next to nothing. Scores differ from SQLite's; the fusion only ever uses them
relative to the query's best match.

The document-frequency gate works as on SQLite: words found in more than
``max_df_ratio`` of the rows (and more than ``df_gate_min_rows``) are dropped from the
query. Frequencies are counted on the GIN index, only up to that limit.
"""

from __future__ import annotations

import math
import unicodedata
from typing import Any

from ..config import SearchConfig
from .keyword import KeywordQuery
from .sanitize import query_terms
from .scope import Scope

__all__ = ["PgKeywordIndex", "fold", "to_tsquery_text"]

TS_CONFIG = "openkoi"  # migration 0001's text search configuration
_IDF_FLOOR = 1e-6  # FTS5's floor for a word in more than half the rows


def fold(term: str) -> str:
    """What the migrations' ``openkoi_fold`` does to a sanitised word: diacritics removed."""
    decomposed = unicodedata.normalize("NFD", term)
    return "".join(ch for ch in decomposed if not 0x300 <= ord(ch) <= 0x36F)


def to_tsquery_text(terms: list[str] | tuple[str, ...]) -> str:
    """``'word' | 'word'``: quoted lexemes, OR-joined ('' when nothing is left)."""
    folded = [fold(t) for t in terms]
    return " | ".join(f"'{t}'" for t in folded if t)


class PgKeywordIndex:
    """Keyword search and its statistics for a PostgreSQL memory."""

    dialect = "postgresql"

    def __init__(self, db: Any, config: SearchConfig | None = None) -> None:
        self.db = db
        self.config = config or SearchConfig()

    def prepare(self, text: str) -> KeywordQuery:
        terms = query_terms(text)
        if not terms:
            return KeywordQuery((), (), "")
        rows = self._rows()
        limit = max(self.config.df_gate_min_rows, self.config.max_df_ratio * rows)
        cap = int(min(limit, rows / 2)) + 1 if rows > limit else rows // 2 + 1
        counts = [self.document_count(t, cap) if to_tsquery_text([t]) else 0 for t in terms]
        used = list(range(len(terms)))
        if rows > limit:  # the gate: leave out words too common to matter (their weight is tiny)
            used = [i for i in used if counts[i] <= limit]
            if not used:
                used = sorted(sorted(range(len(terms)), key=lambda i: counts[i])[:2])
        used = [i for i in used if to_tsquery_text([terms[i]])]
        idf = tuple(max(_IDF_FLOOR, math.log((rows - counts[i] + 0.5) / (counts[i] + 0.5))) for i in used)
        words = tuple(terms[i] for i in used)
        return KeywordQuery(tuple(terms), words, to_tsquery_text(words), idf)

    def _rows(self) -> int:
        """N for the idf: the planner's count on a big table, an exact one on a small table."""
        estimate = int(self.db.scalar(
            "SELECT reltuples::bigint FROM pg_class WHERE oid = to_regclass('memory_chunks')") or 0)
        if estimate >= 100_000:
            return estimate
        return int(self.db.scalar("SELECT count(*) FROM memory_chunks") or 0)

    def _weights(self) -> list[float]:
        cfg = self.config
        top = max(cfg.tags_weight, cfg.text_weight, cfg.source_weight) or 1.0
        # ts_rank_cd's weights run {D, C, B, A}: nothing is labelled D; C = source, B = text, A = tags
        return [0.0, cfg.source_weight / top, cfg.text_weight / top, cfg.tags_weight / top]

    def _rank(self, query: KeywordQuery, alias: str) -> tuple[str, list[Any]]:
        """Sum over the words of idf x ts_rank_cd of that word alone."""
        parts, params = [], []
        for word, idf in zip(query.used, query.idf, strict=True):
            parts.append(f"? * ts_rank_cd(CAST(? AS real[]), {alias}.search_text, to_tsquery('{TS_CONFIG}', ?), 1)")
            params += [idf, self._weights(), to_tsquery_text([word])]
        return "(" + " + ".join(parts) + ")", params

    def search(self, query: KeywordQuery, scope: Scope, limit: int) -> list[tuple[int, float]]:
        """(chunk_rowid, rank as a positive number), best first, within ``scope``."""
        if not query.fts:
            return []
        scope_sql, scope_params = scope.sql("c", "postgresql")
        rank, rank_params = self._rank(query, "c")
        rows = self.db.query(
            f"SELECT c.chunk_rowid, {rank} AS relevance FROM memory_chunks c "
            f"WHERE c.search_text @@ to_tsquery('{TS_CONFIG}', ?) AND {scope_sql} "
            "ORDER BY relevance DESC, c.chunk_rowid LIMIT ?",
            (*rank_params, query.fts, *scope_params, limit),
        )
        return [(int(rowid), float(score)) for rowid, score in rows if score > 0]

    def search_archive(self, query: KeywordQuery, scope: Scope, limit: int, columns: list[str]) -> list[Any]:
        """Rows of ``memory_archive`` (``columns``, then the rank), best first, within ``scope``."""
        if not query.fts:
            return []
        scope_sql, scope_params = scope.sql("c", "postgresql")
        rank, rank_params = self._rank(query, "c")
        return self.db.query(
            f"SELECT {', '.join('c.' + c for c in columns)}, {rank} AS relevance FROM memory_archive c "
            f"WHERE c.search_text @@ to_tsquery('{TS_CONFIG}', ?) AND {scope_sql} "
            "ORDER BY relevance DESC, c.archive_rowid LIMIT ?",
            (*rank_params, query.fts, *scope_params, limit),
        )

    def optimize(self) -> None:
        """Nothing to merge: GIN's pending list is flushed by (auto)vacuum."""

    def optimize_archive(self) -> None:
        """Nothing to merge (see :meth:`optimize`)."""

    # -- statistics for the knowledge base's threshold ---------------------------------------

    def document_count(self, term: str, cap: int) -> int:
        """How many rows contain ``term`` (counted up to ``cap``)."""
        text = to_tsquery_text([term])
        if not text:
            return 0
        return int(self.db.scalar(
            "SELECT count(*) FROM (SELECT 1 FROM memory_chunks WHERE search_text @@ "
            f"to_tsquery('{TS_CONFIG}', ?) LIMIT ?) s", (text, cap),
        ) or 0)

    def rows_containing(self, term: str, rowids: list[int]) -> set[int]:
        text = to_tsquery_text([term])
        if not text or not rowids:
            return set()
        return {int(r[0]) for r in self.db.query(
            f"SELECT chunk_rowid FROM memory_chunks WHERE search_text @@ to_tsquery('{TS_CONFIG}', ?) "
            "AND chunk_rowid = ANY(CAST(? AS bigint[]))", (text, list(rowids)),
        )}

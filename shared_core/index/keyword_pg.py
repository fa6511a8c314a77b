"""The keyword side of search on PostgreSQL: full-text search over ``search_text``.

``memory_chunks.search_text`` is a generated ``tsvector`` (GIN-indexed) of text (weight B),
tags (A) and source (C), built with the ``openkoi`` text search configuration (English
stemming, no stop words) after ``openkoi_fold`` (diacritics removed, ASCII punctuation
split). Queries go through seed 002's sanitiser (:func:`.sanitize.query_terms`), then each
word, folded the same way, becomes a quoted lexeme OR-joined into a ``to_tsquery``
expression. Only letters, digits and combining marks survive the sanitiser, so a quoted
word never contains a quote or a backslash and no input can raise a tsquery syntax error.

Ranking is FTS5's BM25, computed from PostgreSQL's own statistics: for each query word,
idf x tf x (k1 + 1) / (tf + k1 x (1 - b + b x dl / avgdl)), with k1 = 1.2 and b = 0.75
(FTS5's constants), idf = ln((N - n + 0.5) / (n + 0.5)) floored at 1e-6, tf the word's
occurrences weighted by column (``search.*_weight``: ``ts_rank_cd`` of that word alone,
without normalisation, is exactly this weighted count), dl the row's token count
(``search_length``) and avgdl its mean over the memory. Scores come out close to SQLite's,
not equal (the tokenisers and stemmers differ a little); the fusion only ever uses them
relative to the query's best match.

The document-frequency gate works as on SQLite: words found in more than
``max_df_ratio`` of the rows (and more than ``df_gate_min_rows``) are dropped from the
query. Frequencies are counted on the GIN index, only up to that limit.
"""

from __future__ import annotations

import math
import time
import unicodedata
from typing import Any

from ..config import SearchConfig
from .keyword import KeywordQuery
from .sanitize import query_terms
from .scope import Scope

__all__ = ["PgKeywordIndex", "fold", "to_tsquery_text"]

TS_CONFIG = "openkoi"  # migration 0001's text search configuration
_IDF_FLOOR = 1e-6  # FTS5's floor for a word in more than half the rows
_K1, _B = 1.2, 0.75  # FTS5's BM25 constants


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
        self._n = 0
        self._avgdl: tuple[float, int, float] | None = None

    def prepare(self, text: str) -> KeywordQuery:
        terms = query_terms(text)
        if not terms:
            return KeywordQuery((), (), "")
        rows = self._n = self._rows()
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

    def _rank(self, query: KeywordQuery, alias: str) -> tuple[str, str, list[Any], list[Any]]:
        """BM25 over the words: (score expression, LATERAL subquery of the words' tf, their parameters)."""
        weights = self._weights()
        top = max(self.config.tags_weight, self.config.text_weight, self.config.source_weight) or 1.0
        norm = f"(1 - {_B} + {_B} * {alias}.search_length / ?)"
        terms, scores, tf_params, score_params = [], [], [], []
        for i, (word, idf) in enumerate(zip(query.used, query.idf, strict=True)):
            terms.append(f"? * ts_rank_cd(CAST(? AS real[]), {alias}.search_text, to_tsquery('{TS_CONFIG}', ?), 0) AS t{i}")
            tf_params += [top, weights, to_tsquery_text([word])]
            scores.append(f"? * (r.t{i} * {_K1 + 1}) / (r.t{i} + {_K1} * {norm})")
            score_params += [idf, self._average_length()]
        return (" + ".join(scores) or "0"), f"LATERAL (SELECT {', '.join(terms) or '0 AS t'}) r", score_params, tf_params

    def search(self, query: KeywordQuery, scope: Scope, limit: int) -> list[tuple[int, float]]:
        """(chunk_rowid, BM25 as a positive number), best first, within ``scope``."""
        if not query.fts:
            return []
        scope_sql, scope_params = scope.sql("c", "postgresql")
        score, lateral, score_params, tf_params = self._rank(query, "c")
        rows = self.db.query(
            f"SELECT c.chunk_rowid, {score} AS relevance FROM memory_chunks c CROSS JOIN {lateral} "
            f"WHERE c.search_text @@ to_tsquery('{TS_CONFIG}', ?) AND {scope_sql} "
            "ORDER BY relevance DESC, c.chunk_rowid LIMIT ?",
            (*score_params, *tf_params, query.fts, *scope_params, limit),
        )
        return [(int(rowid), float(score)) for rowid, score in rows if score > 0]

    def search_archive(self, query: KeywordQuery, scope: Scope, limit: int, columns: list[str]) -> list[Any]:
        """Rows of ``memory_archive`` (``columns``, then BM25), best first, within ``scope``."""
        if not query.fts:
            return []
        scope_sql, scope_params = scope.sql("c", "postgresql")
        score, lateral, score_params, tf_params = self._rank(query, "c")
        return self.db.query(
            f"SELECT {', '.join('c.' + c for c in columns)}, {score} AS relevance FROM memory_archive c "
            f"CROSS JOIN {lateral} WHERE c.search_text @@ to_tsquery('{TS_CONFIG}', ?) AND {scope_sql} "
            "ORDER BY relevance DESC, c.archive_rowid LIMIT ?",
            (*score_params, *tf_params, query.fts, *scope_params, limit),
        )

    def _average_length(self) -> float:
        """avgdl: the mean token count of a memory (re-read once a minute or when N moved by a tenth)."""
        rows = self._n
        cached = self._avgdl
        if cached is None or time.monotonic() - cached[0] > 60 or abs(cached[1] - rows) > 0.1 * max(cached[1], 10):
            value = float(self.db.scalar("SELECT avg(search_length) FROM memory_chunks") or 0.0)
            self._avgdl = cached = (time.monotonic(), rows, value or 1.0)
        return cached[2]

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

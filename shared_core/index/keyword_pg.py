"""The keyword side of search on PostgreSQL: full-text search over ``search_text``.

``memory_chunks.search_text`` is a generated ``tsvector`` (GIN-indexed) of text (weight B),
tags (A) and source (C): the search form of each (migration 45's ``openkoi_search_form``, the
SQL twin of :func:`.textform.search_form`: lower case, no diacritics, punctuation split, CJK
runs as pairs of characters) through the ``openkoi`` text search configuration (English
stemming, no stop words). Queries go through seed 002's sanitiser into the same form
(:func:`.sanitize.search_terms`); then each token goes through PostgreSQL's own parser and
stemmer as ``phraseto_tsquery`` (plain text in, so no input can raise a syntax error; a token
the parser splits, such as ``x2y``, becomes a phrase, as a quoted FTS5 term does), and the
tokens' tsqueries are OR-joined.

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
query, but only when they are that common within the searched scope too
(:func:`.keyword_query.gate_in_scope`). A word's document frequency is counted on the GIN index; in
a table of 10,000 rows or more it comes from ANALYZE's statistics instead when it is one of the
column's most common lexemes (counting it would read a long posting list; a rare word's list is
short).

Which rows are scored: all that match, where at most ``scored_rows`` can (a small memory, a
small namespace, rare words); beyond that the top-k plan of :mod:`.keyword_plan` picks them on
the GIN index (the rows of the rarest words, then of pairs of the next ones), so that a search
of a million memories reads a few thousand rows, not every one holding a query word.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from ..config import SearchConfig
from ..db.postgres import PostgresDatabase
from .keyword_plan import either, steps
from .keyword_query import KeywordQuery, gate_in_scope, idf
from .sanitize import keyword_terms
from .scope import Scope
from .textform import phrase_tokens

__all__ = ["PgKeywordIndex"]

TS_CONFIG = "openkoi"  # migration 0001's text search configuration
_K1, _B = 1.2, 0.75  # FTS5's BM25 constants
_STATISTICS_FROM_ROWS = 10_000  # below this, N and document frequencies are counted exactly
_ESTIMATE_S = 10  # a big table's row count and its words' document frequencies are re-read after this long
_SAMPLED_ROWS = 20_000  # a mean or a count over more rows than this is taken from a sample of about as many


def _sample_percent(rows: int) -> float:
    """The share of a table of ``rows`` rows (in %) that holds about ``_SAMPLED_ROWS`` of them."""
    return min(100.0, 100.0 * _SAMPLED_ROWS / max(rows, 1))


def _sample(rows: int) -> str:
    """A TABLESAMPLE clause reading about ``_SAMPLED_ROWS`` of a table's ``rows`` rows (nothing for a small
    table): whole pages picked at random, the same ones each time while the table stays as it is. At a
    million rows an exact mean or count read every row: 0.8-1.2 s, once a minute in every process."""
    if rows < _STATISTICS_FROM_ROWS:
        return ""
    return f" TABLESAMPLE SYSTEM ({_sample_percent(rows):.6f}) REPEATABLE (0)"


class PgKeywordIndex:
    """Keyword search and its statistics for a PostgreSQL memory."""

    #: the rows a search scores at most in the first step of its plan, half as many in the second (:meth:`search`)
    scored_rows = 2000

    def __init__(self, db: PostgresDatabase, config: SearchConfig | None = None) -> None:
        self.db = db
        self.config = config or SearchConfig()
        self._n = 0
        self._avgdl: tuple[float, int, float] | None = None
        self._common: tuple[float, dict[str, float]] | None = None
        self._estimate: tuple[float, int] | None = None  # (when, a big table's reltuples)
        self._counted: tuple[float, dict[str, int]] = (0.0, {})  # (since, a big table's words' document frequencies)
        self._scope_cache: tuple[float | None, dict[tuple[Any, str, int], int]] = (None, {})

    def prepare(self, text: str, scope: Scope | None = None) -> KeywordQuery:
        """The query for ``text``; with a ``scope``, a word is left out only if it is common within it."""
        terms = keyword_terms(text, self.config.query_stop_words)
        if not terms:
            return KeywordQuery((), (), "")
        # each token as PostgreSQL's parser and stemmer see it: a (phrase) tsquery and its lexemes
        analysed = self.db.query(
            f"SELECT phraseto_tsquery('{TS_CONFIG}', w)::text, tsvector_to_array(to_tsvector('{TS_CONFIG}', w)) "
            "FROM unnest(CAST(? AS text[])) WITH ORDINALITY AS u(w, i) ORDER BY i",
            (terms,),
        )
        queries = [q for q, _ in analysed]
        rows = self._n = self._rows()
        limit = max(self.config.df_gate_min_rows, self.config.max_df_ratio * rows)
        counts = [self._document_frequency(q, lexemes or [], rows) if q else 0 for q, lexemes in analysed]
        used = [i for i in range(len(terms)) if queries[i]]
        if rows > limit:  # the gate: leave out words too common to matter (their weight is tiny)
            kept = [i for i in used if counts[i] <= limit]
            gated = kept or sorted(sorted(used, key=lambda i: counts[i])[:2])
            if scope is not None and len(gated) < len(used):  # ... unless they are rare where we search
                again = gate_in_scope([terms[i] for i in used], [terms[i] for i in gated], self.config,
                                      *self._scope_counters(scope, dict(zip(terms, queries, strict=True)),
                                                            dict(zip(terms, counts, strict=True))))
                gated = [i for i in used if terms[i] in again]
            used = gated
        idfs = tuple(idf(rows, counts[i]) for i in used)
        full = sum(weight for i, weight in zip(used, idfs, strict=True) if counts[i] > 0)  # as on SQLite
        parts = tuple(queries[i] for i in used)
        combined = " | ".join(f"({q})" for q in parts)
        return KeywordQuery(tuple(terms), tuple(terms[i] for i in used), combined, full_match=full, rows=rows,
                            idf=idfs, parts=parts, df=tuple(counts[i] for i in used))

    def _scope_counters(self, scope: Scope, tsqueries: dict[str, str], counts: dict[str, int]
                        ) -> tuple[Callable[[int | None], int], Callable[[str, int], int]]:
        """:func:`.keyword_query.gate_in_scope`'s two counts for ``scope`` (a big scope's remembered for a
        minute). A word held by more rows than lie outside the scope plus ``cap`` is held by at least ``cap``
        of its rows: it is not counted (a scope of most of the table asks this of every common word)."""
        scope_sql, params = scope.sql("c", "postgresql")
        key = (scope_sql, tuple(p for p in params if p is not scope.live_at))
        cached = self._scope_cache
        if cached[0] is None or time.monotonic() - cached[0] > 60 or len(cached[1]) > 10_000:
            self._scope_cache = cached = (time.monotonic(), {})
        memo = cached[1]

        def rows(cap: int | None) -> int:
            if cap is not None and (key, "", 0) in memo:  # counted in the last minute
                return min(cap, memo[(key, "", 0)])
            if cap is not None:
                return int(self.db.scalar(
                    f"SELECT count(*) FROM (SELECT FROM memory_chunks c WHERE {scope_sql} LIMIT ?) s", (*params, cap)
                ) or 0)
            if (key, "", 0) not in memo:
                held = int(self.db.scalar(f"SELECT count(*) FROM (SELECT FROM memory_chunks c WHERE {scope_sql} "
                                          "LIMIT ?) s", (*params, _SAMPLED_ROWS + 1)) or 0)
                if held > _SAMPLED_ROWS:  # a big scope: estimated from a sample of the table's pages
                    sampled = int(self.db.scalar(
                        f"SELECT count(*) FROM memory_chunks c{_sample(self._n)} WHERE {scope_sql}", params) or 0)
                    held = max(held, round(sampled * 100.0 / _sample_percent(self._n)))
                memo[(key, "", 0)] = held
            return memo[(key, "", 0)]

        def containing(term: str, cap: int) -> int:
            if (key, "", 0) in memo and counts.get(term, 0) - (self._n - memo[(key, "", 0)]) >= cap:
                return cap
            if (key, term, cap) not in memo:
                memo[(key, term, cap)] = int(self.db.scalar(
                    "SELECT count(*) FROM (SELECT FROM memory_chunks c WHERE c.search_text @@ CAST(? AS tsquery) "
                    f"AND {scope_sql} LIMIT ?) s", (tsqueries[term], *params, cap)) or 0)
            return memo[(key, term, cap)]

        return rows, containing

    def _rows(self) -> int:
        """N for the idf: the planner's count on a big table (re-read every few seconds), an exact one on a small table."""
        cached = self._estimate
        if cached is not None and time.monotonic() - cached[0] < _ESTIMATE_S:
            return cached[1]
        estimate = int(self.db.scalar(
            "SELECT reltuples::bigint FROM pg_class WHERE oid = to_regclass('memory_chunks')") or 0)
        if estimate >= _STATISTICS_FROM_ROWS:
            self._estimate = (time.monotonic(), estimate)
            return estimate
        self._estimate = None
        return int(self.db.scalar("SELECT count(*) FROM memory_chunks") or 0)

    def _document_frequency(self, tsquery: str, lexemes: list[str], rows: int) -> int:
        """How many rows contain the word: in a big table from ANALYZE's most common lexemes when
        it is one of them (counting those would read a long posting list), else counted on the GIN
        index (and remembered for a minute, as the statistics are). A small table is always counted: its
        idf then does not depend on whether autovacuum has analysed it yet (ANALYZE's element
        frequencies are approximate)."""
        if rows < _STATISTICS_FROM_ROWS:
            return int(self.db.scalar(
                "SELECT count(*) FROM memory_chunks WHERE search_text @@ CAST(? AS tsquery)", (tsquery,)) or 0)
        common = self._common_lexemes()
        if lexemes and all(lexeme in common for lexeme in lexemes):
            return int(round(min(common[lexeme] for lexeme in lexemes) * rows))
        since, counted = self._counted
        if time.monotonic() - since > _ESTIMATE_S * 6 or len(counted) > 10_000:  # a minute, as the statistics
            self._counted = (time.monotonic(), {})
            counted = self._counted[1]
        if tsquery not in counted:
            cap = rows // 2 + 1 if not common else rows + 1  # with statistics, a word not among them is rare
            # SELECT FROM, no column: a row on an all-visible page is counted from the GIN index alone where
            # the server allows it ("SELECT 1" read its table page: at 1M, 166 ms against 9 for a word in 15k
            # rows on PostgreSQL 16.2; 16.14 and 18.4 read the pages either way)
            counted[tsquery] = int(self.db.scalar(
                "SELECT count(*) FROM (SELECT FROM memory_chunks WHERE search_text @@ CAST(? AS tsquery) LIMIT ?) s",
                (tsquery, cap),
            ) or 0)
        return counted[tsquery]

    def _common_lexemes(self) -> dict[str, float]:
        """The most common lexemes of search_text and the share of rows holding each (re-read once a minute)."""
        cached = self._common
        if cached is None or time.monotonic() - cached[0] > 60:
            row = self.db.query(
                "SELECT most_common_elems::text::text[], most_common_elem_freqs FROM pg_stats "
                "WHERE schemaname = ? AND tablename = 'memory_chunks' AND attname = 'search_text'",
                (self.db.schema,),
            )
            found: dict[str, float] = {}
            if row and row[0][0]:
                found = dict(zip(row[0][0], row[0][1], strict=False))
            self._common = cached = (time.monotonic(), found)
        return cached[1]

    def _weights(self) -> list[float]:
        cfg = self.config
        top = max(cfg.tags_weight, cfg.text_weight, cfg.source_weight) or 1.0
        # ts_rank_cd's weights run {D, C, B, A}: nothing is labelled D; C = source, B = text, A = tags
        return [0.0, cfg.source_weight / top, cfg.text_weight / top, cfg.tags_weight / top]

    def _rank(self, query: KeywordQuery, alias: str) -> tuple[str, str, list[Any], list[Any]]:
        """BM25 over the words: (score expression, LATERAL subquery of the words' tf, their parameters).
        A word's tf is ranked only in rows that hold it (``@@`` is a lookup; ``ts_rank_cd`` reads the row)."""
        weights = self._weights()
        top = max(self.config.tags_weight, self.config.text_weight, self.config.source_weight) or 1.0
        norm = f"(CAST({1 - _B} AS float8) + CAST({_B} AS float8) * {alias}.search_length / CAST(? AS float8))"
        terms, scores, tf_params, score_params = [], [], [], []
        for i, (part, term_idf) in enumerate(zip(query.parts, query.idf, strict=True)):
            terms.append(f"CASE WHEN {alias}.search_text @@ CAST(? AS tsquery) THEN CAST(? AS float8) * "
                         f"ts_rank_cd(CAST(? AS real[]), {alias}.search_text, CAST(? AS tsquery), 0) ELSE 0 END AS t{i}")
            tf_params += [part, top, weights, part]
            scores.append(f"CAST(? AS float8) * (r.t{i} * CAST({_K1 + 1} AS float8)) / (r.t{i} + CAST({_K1} AS float8) * {norm})")
            score_params += [term_idf, self._average_length()]
        # OFFSET 0 keeps the planner from inlining the subquery, which would compute each tf twice
        lateral = f"LATERAL (SELECT {', '.join(terms) or '0 AS t'} OFFSET 0) r"
        return (" + ".join(scores) or "0"), lateral, score_params, tf_params

    def search(self, query: KeywordQuery, scope: Scope, limit: int) -> list[tuple[int, float]]:
        """(chunk_rowid, BM25 as a positive number), best first, within ``scope``.

        Where at most :attr:`scored_rows` rows can match (by the words' document frequencies, or the
        planner's estimate within the scope), every one is scored; beyond that, the rows the top-k plan
        of :mod:`.keyword_plan` picks on the GIN index (about ``scored_rows`` of them)."""
        if not query.fts or limit <= 0:
            return []
        scope_sql, scope_params = scope.sql("c", "postgresql")
        cap = max(self.scored_rows, limit)
        if len(query.df) != len(query.parts) or sum(query.df) <= cap:  # no more rows than that hold the words
            return self._positive(self._scored(query, [(query.fts, None)], scope_sql, scope_params, limit))
        matching, in_scope = self._expected(query.fts, scope_sql, scope_params)
        if in_scope <= 2 * cap:  # a small scope is read whole, through its own index: GIN would walk every posting
            found = self._scored(query, [(query.fts, None)], scope_sql, scope_params, limit, scope_first=True)
        elif matching <= cap:
            found = self._scored(query, [(query.fts, None)], scope_sql, scope_params, limit)
        else:
            plan, covered = steps(query.parts, query.df, cap)
            found = self._scored(query, [(match, max(rows, limit)) for match, rows in plan], scope_sql, scope_params,
                                 limit)
            if len(found) < limit:  # few rows hold those words here: the others' rows fill the list
                rest = f"({either(query.parts)}) & !({covered})" if covered else query.fts
                found += self._scored(query, [(rest, cap)], scope_sql, scope_params, limit - len(found))
                found.sort(key=lambda row: (-row[1], row[0]))
        return self._positive(found)

    @staticmethod
    def _positive(found: list[tuple[int, float]]) -> list[tuple[int, float]]:
        return [(rowid, score) for rowid, score in found if score > 0]

    def _scored(self, query: KeywordQuery, picks: list[tuple[str, int | None]], scope_sql: str,
                scope_params: list[Any], limit: int, *, scope_first: bool = False) -> list[tuple[int, float]]:
        """The best ``limit`` rows of those in scope matching any of ``picks``' tsqueries (each one's rows
        capped at its number, None: all), by BM25: (chunk_rowid, score), best first. ``scope_first``: one
        tsquery, checked on each row of the scope (OFFSET 0 keeps it out of the scope's scan)."""
        score, lateral, score_params, tf_params = self._rank(query, "c")
        columns = "SELECT c.chunk_rowid, c.search_text, c.search_length FROM memory_chunks c"
        parts, params = [], []
        for match, cap in picks:
            if scope_first:
                parts.append(f"(SELECT * FROM ({columns} WHERE {scope_sql} OFFSET 0) c "
                             "WHERE c.search_text @@ CAST(? AS tsquery))")
                params += [*scope_params, match]
                continue
            parts.append(f"({columns} WHERE c.search_text @@ CAST(? AS tsquery) AND {scope_sql}{' LIMIT ?' if cap else ''})")
            params += [match, *scope_params, *([cap] if cap else [])]
        rows = self.db.query(
            f"SELECT c.chunk_rowid, {score} AS relevance FROM ({' UNION ALL '.join(parts)}) c CROSS JOIN {lateral} "
            "ORDER BY relevance DESC, c.chunk_rowid LIMIT ?",
            (*score_params, *params, *tf_params, limit),
        )
        return [(int(rowid), float(relevance)) for rowid, relevance in rows]

    def _expected(self, match: str, scope_sql: str, scope_params: list[Any]) -> tuple[float, float]:
        """The planner's estimates of the rows in scope matching ``match``, and of the scope's rows
        (one EXPLAIN: no row is read)."""
        plan = self.db.query(
            f"EXPLAIN (FORMAT JSON) SELECT 1 FROM memory_chunks c WHERE c.search_text @@ CAST(? AS tsquery) AND {scope_sql} "
            f"UNION ALL SELECT 1 FROM memory_chunks c WHERE {scope_sql}",
            (match, *scope_params, *scope_params),
        )
        document = plan[0][0]
        if isinstance(document, str):
            document = json.loads(document)
        top = document[0]["Plan"]
        members = [float(p["Plan Rows"]) for p in top.get("Plans", [])]
        if len(members) != 2:  # the planner folded a branch away: take the whole for either (the safe side)
            return float(top["Plan Rows"]), float(top["Plan Rows"])
        return members[0], members[1]

    def search_archive(self, query: KeywordQuery, scope: Scope, limit: int, columns: list[str]) -> list[Any]:
        """Rows of ``memory_archive`` (``columns``, then BM25), best first, within ``scope``."""
        if not query.fts:
            return []
        scope_sql, scope_params = scope.sql("c", "postgresql")
        score, lateral, score_params, tf_params = self._rank(query, "c")
        return self.db.query(
            f"SELECT {', '.join('c.' + c for c in columns)}, {score} AS relevance FROM memory_archive c "
            f"CROSS JOIN {lateral} WHERE c.search_text @@ CAST(? AS tsquery) AND {scope_sql} "
            "ORDER BY relevance DESC, c.archive_rowid LIMIT ?",
            (*score_params, *tf_params, query.fts, *scope_params, limit),
        )

    def _average_length(self) -> float:
        """avgdl: the mean token count of a memory (re-read once a minute or when N moved by a tenth)."""
        rows = self._n
        cached = self._avgdl
        if cached is None or time.monotonic() - cached[0] > 60 or abs(cached[1] - rows) > 0.1 * max(cached[1], 10):
            value = float(self.db.scalar(f"SELECT avg(search_length) FROM memory_chunks{_sample(rows)}") or 0.0)
            if not value and rows >= _STATISTICS_FROM_ROWS:  # a sample of empty pages
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
        return int(self.db.scalar(
            "SELECT count(*) FROM (SELECT FROM memory_chunks WHERE search_text @@ "
            f"phraseto_tsquery('{TS_CONFIG}', ?) LIMIT ?) s", (" ".join(phrase_tokens(term)), cap),
        ) or 0)

    def rows_containing(self, term: str, rowids: list[int]) -> set[int]:
        if not rowids:
            return set()
        return {int(r[0]) for r in self.db.query(
            f"SELECT chunk_rowid FROM memory_chunks WHERE search_text @@ phraseto_tsquery('{TS_CONFIG}', ?) "
            "AND chunk_rowid = ANY(CAST(? AS bigint[]))", (" ".join(phrase_tokens(term)), list(rowids)),
        )}

"""The keyword side of search: FTS5 BM25 over text, tags and source (seed 002).

FTS5 indexes the search form of each column (:mod:`.textform`: lower case, no diacritics,
CJK runs as pairs of characters), read through the view ``memory_search_form`` (migration 45).
Queries go through the seed's sanitiser, then into the same form (an OR of quoted tokens).

On a large index an OR query with a very common word ("what", "did") makes FTS5 score tens
of thousands of rows, so words found in more than ``max_df_ratio`` of the rows (and more than
``df_gate_min_rows`` rows) are left out of the query: their BM25 weight is small, and
dropping them keeps a 100k-row search fast. Document frequencies come from FTS5's own
vocabulary; query words are stemmed by FTS5 itself (a temporary table with the same
tokenizer), so the lookup always matches what the index stored.

**The gate counts within the searched scope.** A word common in the whole file may be rare
in the namespace searched (a user's "server" among a team's thousand server logs), and
dropping it would miss the one memory that has it. So a word the file-wide counts would drop
is dropped only if it is also common among the rows the search may return
(:func:`gate_in_scope`): never in a scope of ``df_gate_min_rows`` rows or fewer (one cheap,
capped count says so), and in a bigger scope only when more than ``max_df_ratio`` of the
scope's rows hold it (counted once, then remembered like the file-wide counts).

**A capped plan for many matches.** In a million rows the words the gate keeps can still be held
by a hundred thousand rows, and ``bm25()`` over all of them (a row-size lookup each) took 80 ms.
When the used words are held by more than :data:`PLAN_MATCHES` rows together, the ranking reads
only rows picked as :mod:`.keyword_plan` picks them for PostgreSQL: those holding the rarest words (together
held by at most :data:`PLAN_ROWS` rows), or two of the next :data:`PLAN_NEAR` rarest.
The query stays the whole OR, so every row ranked keeps the score the whole query gives it (idf
included); the plan's rows come from a subquery (:func:`planned_match`) with a cursor of its own,
which computes no ``bm25()``. Only when these rows hold fewer than ``limit`` in scope are all
matches ranked.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ..config import SearchConfig
from ..db import Backend, Database
from ..db.postgres import PostgresDatabase
from .keyword_plan import rarest
from .keyword_query import KeywordQuery, gate_in_scope, idf
from .protocols import KeywordIndex
from .sanitize import keyword_terms, to_fts_query
from .scope import Scope
from .textform import phrase_tokens

__all__ = ["PLAN_MATCHES", "PLAN_NEAR", "PLAN_ROWS", "SqliteKeywordIndex", "keyword_index_for", "planned_match"]

PLAN_MATCHES = 20_000  # used words held by more rows than this (together): the capped plan
PLAN_ROWS = 2_000  # the rarest words it reads every row of hold at most this many rows together
# ... and rows holding two of the next this many words: on LoCoMo questions over a million memories, 4
# words (PostgreSQL's keyword_plan.NEAR) kept 92 % of the exact top 10 and 6 words 99.6 %, in 1.4x the time
PLAN_NEAR = 6
_PROBE_COST = 8  # probing one row of a scope for a word costs about this many row lookups by rowid

# must match migration 45's memory_fts (its quotes doubled there, inside the SQL string)
TOKENIZER = "porter unicode61 remove_diacritics 0 categories 'L* N* Co M*'"
_TOKENIZER_SQL = TOKENIZER.replace("'", "''")


def keyword_index_for(db: Backend, config: SearchConfig | None = None) -> KeywordIndex:
    """The keyword index for ``db``'s backend: :class:`SqliteKeywordIndex` or ``PgKeywordIndex``."""
    if isinstance(db, Database):
        return SqliteKeywordIndex(db, config or SearchConfig())
    if isinstance(db, PostgresDatabase):
        from .keyword_pg import PgKeywordIndex

        return PgKeywordIndex(db, config)
    raise TypeError(f"no keyword index for a {type(db).__name__} backend")


class SqliteKeywordIndex:
    """FTS5 keyword search and its statistics for a SQLite memory."""

    def __init__(self, db: Database, config: SearchConfig) -> None:
        self.db = db
        self.config = config
        self._oracle_ready = False
        self._narrow: dict[tuple[Any, ...], float] = {}  # scopes ranked after the scope check (see search)
        self._stem_cache: dict[str, list[str]] = {}
        self._df_cache: dict[str, int] = {}  # stem -> rows containing it, while the index has about _df_rows rows
        # (scope, "", 0) -> rows in a big scope; (scope, term, cap) -> its rows holding the term (same lifetime)
        self._scope_cache: dict[tuple[Any, str, int], int] = {}
        self._df_rows = 0
        self.plan_matches, self.plan_rows = PLAN_MATCHES, PLAN_ROWS

    def prepare(self, text: str, scope: Scope | None = None) -> KeywordQuery:
        """The query for ``text``; with a ``scope``, a word is left out only if it is common within it."""
        terms = keyword_terms(text, self.config.query_stop_words)
        if not terms:
            return KeywordQuery((), (), "")
        rows = int(self.db.scalar("SELECT max(chunk_rowid) FROM memory_chunks") or 0)
        freq = self._document_frequencies(terms, rows)
        used = self._gate(terms, freq, rows)
        if scope is not None and len(used) < len(terms):
            used = gate_in_scope(terms, used, self.config, *self._scope_counters(
                scope, dict(zip(terms, freq, strict=True)), rows))
        df = tuple(freq[terms.index(t)] for t in used)
        full = sum(idf(rows, n) for n in df if n > 0)
        return KeywordQuery(tuple(terms), tuple(used), to_fts_query(used), full, rows, df=df)

    def _scope_counters(self, scope: Scope, file_df: dict[str, int], file_rows: int
                        ) -> tuple[Callable[[int | None], int], Callable[[str, int], int]]:
        """:func:`gate_in_scope`'s two counts for ``scope``. A capped count of a small scope is cheap and
        always made; a big scope's counts are remembered with the file-wide ones (until 1 % growth).

        A word's rows in the scope follow from its rows in the file (``file_df``) where the scope
        leaves few rows of the file (at most ``file_rows``) out: none left out, they are the same;
        fewer left out than the word has rows beyond the cap, the cap is reached. Otherwise they are
        counted from the cheaper side: its posting list, each row looked up, or the scope's rows,
        each probed for the word (a probe costs about eight lookups). Left to itself, SQLite probed
        every row of a 100k-row namespace for a word held by 3,000 (1.5 s a count); a common word's
        count in a namespace of a whole million took 75 ms."""
        scope_sql, params = scope.sql("c")
        key = (scope_sql, tuple(p for p in params if p is not scope.live_at))

        def rows(cap: int | None) -> int:
            if cap is not None:
                return int(self.db.scalar(
                    f"SELECT count(*) FROM (SELECT 1 FROM memory_chunks c WHERE {scope_sql} LIMIT ?)", (*params, cap)
                ) or 0)
            if (key, "", 0) not in self._scope_cache:
                self._scope_cache[(key, "", 0)] = int(self.db.scalar(*scope.count_query()) or 0)
            return self._scope_cache[(key, "", 0)]

        def containing(term: str, cap: int) -> int:
            held, outside = file_df.get(term, 0), file_rows - rows(None)
            if outside <= 0 or held - outside >= cap:
                return min(held, cap)
            if (key, term, cap) not in self._scope_cache:
                tables = "memory_fts CROSS JOIN memory_chunks c" if held <= _PROBE_COST * rows(None) \
                    else "memory_chunks c CROSS JOIN memory_fts"  # CROSS JOIN: SQLite keeps this order
                self._scope_cache[(key, term, cap)] = int(self.db.scalar(
                    f"SELECT count(*) FROM (SELECT 1 FROM {tables} ON c.chunk_rowid = memory_fts.rowid "
                    f"WHERE memory_fts MATCH ? AND {scope_sql} LIMIT ?)",
                    (to_fts_query([term]), *params, cap)) or 0)
            return self._scope_cache[(key, term, cap)]

        return rows, containing

    def search(self, query: KeywordQuery, scope: Scope, limit: int) -> list[tuple[int, float]]:
        """(chunk_rowid, BM25 as a positive number), best first, within ``scope``."""
        if not query.fts:
            return []
        scope_sql, scope_params = scope.sql("c")
        cfg = self.config
        weights = (cfg.text_weight, cfg.tags_weight, cfg.source_weight)
        # Rank first, then check the scope on the best few: looking up every match's row for the
        # scope costs more than ranking them all (10 ms of 18 for 8k matches in 100k rows). When
        # `limit` of the best `pool` are in scope they are the scope's best `limit`. A narrow scope
        # (a small namespace in a big file) is cheaper the other way round, checked on every match
        # before ranking: the first search that finds so remembers it for a minute.
        planned = (planned_match(query.used, query.df, self.plan_rows)
                   if len(query.df) == len(query.used) and sum(query.df) > self.plan_matches else "")
        if planned:
            rows = self._ranked_in_scope(query.fts, weights, max(4 * limit, 200), scope_sql, scope_params, limit,
                                         among=planned)
            if len(rows) == limit:
                return rows
        key = (scope_sql, tuple(p for p in scope_params if p is not scope.live_at))  # "now" changes every time
        narrow_since = self._narrow.get(key)
        if narrow_since is None or time.monotonic() - narrow_since > 60:
            pool = max(4 * limit, 200)
            rows = self._ranked_in_scope(query.fts, weights, pool, scope_sql, scope_params, limit)
            complete = len(rows) == limit or self.db.scalar(
                "SELECT count(*) FROM (SELECT 1 FROM memory_fts WHERE memory_fts MATCH ? LIMIT ?)", (query.fts, pool + 1)
            ) <= pool
            self._narrow.pop(key, None)
            if complete:
                return rows
            self._narrow[key] = time.monotonic()
            if len(self._narrow) > 256:
                self._narrow.pop(next(iter(self._narrow)))
        rows = self.db.query(
            "SELECT memory_fts.rowid, -bm25(memory_fts, ?, ?, ?) AS relevance "
            "FROM memory_fts JOIN memory_chunks c ON c.chunk_rowid = memory_fts.rowid "
            f"WHERE memory_fts MATCH ? AND {scope_sql} ORDER BY relevance DESC LIMIT ?",
            (*weights, query.fts, *scope_params, limit),
        )
        return [(int(rowid), float(score)) for rowid, score in rows]

    def _ranked_in_scope(self, match: str, weights: tuple[float, ...], pool: int, scope_sql: str,
                         scope_params: list[Any], limit: int, *, among: str = "") -> list[tuple[int, float]]:
        """The best ``limit`` in scope of the best ``pool`` rows matching ``match`` (and ``among``, if given:
        rows are kept or not by it, ranked by ``match`` alone)."""
        # ``+rowid``: a filter on the rows FTS5 gives. A constraint on rowid would reach FTS5, which then
        # runs the query again for each of the rows, counting every word's rows for bm25() each time
        among_sql = " AND +rowid IN (SELECT rowid FROM memory_fts WHERE memory_fts MATCH ?)" if among else ""
        rows = self.db.query(
            "SELECT m.rowid, m.relevance FROM (SELECT rowid, -bm25(memory_fts, ?, ?, ?) AS relevance "
            f"FROM memory_fts WHERE memory_fts MATCH ?{among_sql} ORDER BY relevance DESC LIMIT ?) m "
            f"JOIN memory_chunks c ON c.chunk_rowid = m.rowid WHERE {scope_sql} ORDER BY m.relevance DESC LIMIT ?",
            (*weights, match, *((among,) if among else ()), pool, *scope_params, limit),
        )
        return [(int(rowid), float(score)) for rowid, score in rows]

    def search_archive(self, query: KeywordQuery, scope: Scope, limit: int, columns: list[str]) -> list[Any]:
        """Rows of ``memory_archive`` (``columns``, then BM25 as a positive number), best first."""
        if not query.fts:
            return []
        sql, params = scope.sql("c")
        return self.db.query(
            f"SELECT {', '.join('c.' + c for c in columns)}, -bm25(memory_archive_fts) AS relevance "
            "FROM memory_archive_fts JOIN memory_archive c ON c.archive_rowid = memory_archive_fts.rowid "
            f"WHERE memory_archive_fts MATCH ? AND {sql} ORDER BY relevance DESC LIMIT ?",
            (query.fts, *params, limit),
        )

    def optimize(self) -> None:
        """Merge the FTS5 index (deleted rows leave tombstones until then)."""
        self.db.execute("INSERT INTO memory_fts(memory_fts) VALUES ('optimize')")

    def optimize_archive(self) -> None:
        self.db.execute("INSERT INTO memory_archive_fts(memory_archive_fts) VALUES ('optimize')")

    # -- statistics for the knowledge base's threshold ---------------------------------------

    def document_count(self, term: str, cap: int) -> int:
        """How many rows contain ``term`` (counted up to ``cap``)."""
        phrase = _phrase(term)
        if not phrase:
            return 0
        return int(self.db.scalar(
            "SELECT count(*) FROM (SELECT 1 FROM memory_fts WHERE memory_fts MATCH ? LIMIT ?)", (phrase, cap)
        ) or 0)

    def rows_containing(self, term: str, rowids: list[int]) -> set[int]:
        phrase = _phrase(term)
        if not rowids or not phrase:
            return set()
        marks = ", ".join("?" for _ in rowids)
        return {int(r[0]) for r in self.db.query(
            f"SELECT rowid FROM memory_fts WHERE memory_fts MATCH ? AND rowid IN ({marks})", (phrase, *rowids)
        )}

    # -- document-frequency gate -------------------------------------------------------------

    def _document_frequencies(self, terms: list[str], rows: int) -> list[int]:
        """How many rows contain each term (its rarest stem), from FTS5's own vocabulary.

        In a big index the counts are remembered until it grows by 1 %: they only steer the gate
        and the strength scale, and looking them up costs 2 ms a search at 100k rows.
        """
        if rows < self.config.df_gate_min_rows or rows > self._df_rows * 1.01:
            self._df_cache.clear()
            self._scope_cache.clear()
            self._df_rows = rows
        if len(self._scope_cache) > 10_000:
            self._scope_cache.clear()
        stems = self._stems(terms)
        all_stems = sorted({s for group in stems for s in group})
        missing = [s for s in all_stems if s not in self._df_cache]
        if missing:
            marks = ", ".join("?" for _ in missing)
            found = dict(self.db.query(f"SELECT term, doc FROM memory_fts_vocab WHERE term IN ({marks})", missing))
            if rows >= self.config.df_gate_min_rows:
                if len(self._df_cache) > 50_000:
                    self._df_cache.clear()
                self._df_cache.update({s: int(found.get(s, 0)) for s in missing})
            df = {**self._df_cache, **found}
        else:
            df = self._df_cache
        return [min((df.get(s, 0) for s in group), default=0) for group in stems]

    def _gate(self, terms: list[str], freq: list[int], rows: int) -> list[str]:
        limit = max(self.config.df_gate_min_rows, self.config.max_df_ratio * rows)
        if rows <= limit:  # nothing can be common enough to drop
            return terms
        kept = [t for t, f in zip(terms, freq, strict=True) if f <= limit]
        if kept:
            return kept
        rarest = sorted(range(len(terms)), key=lambda i: freq[i])[:2]
        return [terms[i] for i in sorted(rarest)]

    def _stems(self, terms: list[str]) -> list[list[str]]:
        """Each term as FTS5's tokenizer stores it (usually one stem per term); remembered per term."""
        unknown = [t for t in dict.fromkeys(terms) if t not in self._stem_cache]
        if unknown:
            if len(self._stem_cache) > 50_000:
                self._stem_cache.clear()
            self._stem_cache.update(zip(unknown, self._tokenize(unknown), strict=True))
        return [list(self._stem_cache[t]) for t in terms]

    def _tokenize(self, terms: list[str]) -> list[list[str]]:
        conn = self.db.conn
        with self.db.translate_errors(), self.db.scratch():
            if not self._oracle_ready:
                conn.execute(
                    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.openkoi_tokenize "
                    f"USING fts5(t, tokenize='{_TOKENIZER_SQL}')"
                )
                conn.execute(
                    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.openkoi_tokenize_terms "
                    "USING fts5vocab(temp, openkoi_tokenize, 'instance')"
                )
                self._oracle_ready = True
            conn.execute("DELETE FROM temp.openkoi_tokenize")
            conn.executemany(
                "INSERT INTO temp.openkoi_tokenize (rowid, t) VALUES (?, ?)",
                [(i + 1, term) for i, term in enumerate(terms)],
            )
            found: list[Any] = conn.execute(
                "SELECT doc, term FROM temp.openkoi_tokenize_terms ORDER BY doc, offset"
            ).fetchall()
            conn.execute("DELETE FROM temp.openkoi_tokenize")
        groups: list[list[str]] = [[] for _ in terms]
        for doc, term in found:
            groups[int(doc) - 1].append(term)
        return groups


def planned_match(used: tuple[str, ...], df: tuple[int, ...], cap: int, near_words: int = PLAN_NEAR) -> str:
    """The FTS5 query for the rows of the capped plan for the words ``used``, held by ``df`` rows
    each: those holding one of the rarest words (held by at most ``cap`` rows together) or two of
    the next ``near_words`` rarest ('' for one word, or when every word is among the rarest: then
    the plan is the whole OR).

    It only picks rows; the whole OR ranks them. Cutting the other rows off the whole OR with a
    ``NOT`` in the ranking query itself took a third longer on LoCoMo questions over a million
    rows: ``bm25()`` counts the rows of every phrase of the query it scores, the ``NOT``'s too.
    "Two of these words" is built from halves (16 phrases for six words against 30 for every
    pair), as each phrase's rows are read once per appearance."""
    if len(used) < 2:
        return ""
    first, rest = rarest(df, cap)
    if df[first[0]] > cap:  # even the rarest word is common: only rows holding two of the rarest
        first, rest = [], first + rest
    if not rest:
        return ""
    near = [to_fts_query([used[i]]) for i in rest[:near_words]]
    wanted = [to_fts_query([used[i] for i in first])] if first else []
    if len(near) > 1:
        wanted.append(_two_of(near))
    return " OR ".join(f"({w})" for w in wanted)


def _two_of(phrases: list[str]) -> str:
    """An FTS5 query for rows holding at least two of ``phrases`` (two or more)."""
    if len(phrases) == 2:
        return f"{phrases[0]} AND {phrases[1]}"
    half = len(phrases) // 2
    left, right = phrases[:half], phrases[half:]
    parts = [f"({' OR '.join(left)}) AND ({' OR '.join(right)})"]  # AND binds before OR in FTS5
    parts += [f"({_two_of(side)})" for side in (left, right) if len(side) > 1]
    return " OR ".join(parts)


def _phrase(term: str) -> str:
    """``term`` as one FTS5 phrase of its search-form tokens ('' when it has none)."""
    tokens = phrase_tokens(term)
    return f'"{" ".join(tokens)}"' if tokens else ""

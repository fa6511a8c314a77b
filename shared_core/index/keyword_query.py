"""The query both keyword indexes prepare, and the statistics they share: BM25's idf and the
document-frequency gate within a scope (see :mod:`.keyword` for FTS5, :mod:`.keyword_pg` for PostgreSQL)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from ..config import SearchConfig

__all__ = ["KeywordQuery", "gate_in_scope", "idf"]


@dataclass(frozen=True)
class KeywordQuery:
    """A sanitised query: the words asked for, those used, the match expression, and ``full_match``.

    ``fts`` is in the database's own syntax: an FTS5 expression on SQLite, a ``to_tsquery``
    text on PostgreSQL (:mod:`.keyword_pg`). ``full_match`` is the BM25 a row would get for
    containing every used term once at average length: the sum of the terms' idf,
    ``ln((N - n + 0.5) / (n + 0.5))`` as FTS5 computes it. Dividing by it puts BM25 on an
    absolute scale: a row that matched only "the" scores near 0 even when it is the best the
    query found.
    """

    terms: tuple[str, ...]
    used: tuple[str, ...]
    fts: str
    full_match: float = 0.0
    rows: int = 0  # N, the number of indexed rows the idf values were computed with
    idf: tuple[float, ...] = ()  # PostgreSQL: each used term's inverse document frequency (FTS5 has its own)
    parts: tuple[str, ...] = ()  # PostgreSQL: each used term as a tsquery
    df: tuple[int, ...] = ()  # each used term's document frequency (rows holding it; its idf's n): the top-k plans

    @property
    def strength_scale(self) -> float:
        """What ``keyword_strength`` divides BM25 by: the full match, but at least half the idf of a
        term found in one row (``ln(1 + N) / 2``), so a query of only ubiquitous words (whose idf
        FTS5 clamps to 1e-6) cannot look like a strong match."""
        return max(self.full_match, math.log1p(self.rows) / 2)


def gate_in_scope(terms: list[str], used: list[str], config: SearchConfig, scope_rows: Callable[[int | None], int],
                  containing: Callable[[str, int], int]) -> list[str]:
    """The words to query in a scope, given those the file-wide gate kept (``used``, never empty):
    each left-out word comes back unless it is common within the scope too; the kept ones stay.

    ``scope_rows(cap)``: the scope's rows, counted up to ``cap`` (``None``: all of them);
    ``containing(term, cap)``: the scope's rows holding ``term``, up to ``cap``. A scope of
    ``df_gate_min_rows`` rows or fewer keeps every word after one capped count; a bigger one drops
    a word held by more than ``max_df_ratio`` of its rows (and more than ``df_gate_min_rows``).
    """
    floor = config.df_gate_min_rows
    if scope_rows(floor + 1) <= floor:  # nothing can be common enough to drop
        return terms
    limit = max(floor, config.max_df_ratio * scope_rows(None))
    cap = int(limit) + 1
    return [t for t in terms if t in used or containing(t, cap) <= limit]


def idf(rows: int, containing: int) -> float:
    """FTS5's BM25 idf: ``ln((N - n + 0.5) / (n + 0.5))``, at least 1e-6 as FTS5 clamps it.

    n is taken as at most N: PostgreSQL counts them in separate statements (N from the planner's
    statistics on a big table), so rows another process added in between, or statistics behind the
    table, could make n the larger and the logarithm's argument negative."""
    containing = min(containing, rows)
    return max(1e-6, math.log((rows - containing + 0.5) / (containing + 0.5)))

"""One search, checked and typed: what ``store.search(...)``'s keyword arguments mean.

``MemoryStore.search`` keeps its keyword arguments for users; inside, they become one
:class:`SearchQuery` that :class:`~shared_core.search.Searcher` runs. Every check of a search's
arguments happens here, before any lock is taken or any row is read.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import numpy as np

from .clock import to_iso
from .embed import as_vector
from .index.scope import Scope
from .ranking import FUSIONS
from .time_phrases import TimeWindow, find_time, without_phrase
from .validation import check_finite, check_limit, check_query

__all__ = ["SearchQuery", "TIME_MODES"]

#: what a time phrase in the query does: nothing, raise the memories of its window, or keep only them
TIME_MODES = ("off", "boost", "narrow")


@dataclass(frozen=True)
class SearchQuery:
    """A search: the text and/or vector, the rows it may see, and how hits are ranked.

    ``keyword_text`` is what the keyword side looks for (the text without its time phrase);
    ``time`` is the window a time phrase of the text named (``time_mode`` says what it does).
    """

    text: str | None
    scope: Scope
    limit: int
    vector: Any = None
    offset: int = 0
    fusion: str = "keyword_first"
    vector_weight: float | None = None
    min_score: float | None = None
    include_archive: bool = False
    mmr_lambda: float | None = None
    fetch_k: int | None = None
    rank: bool = True
    time: TimeWindow | None = None
    time_mode: str = "off"
    asked_at: datetime | None = None

    @classmethod
    def build(
        cls,
        text: str | None,
        scope: Scope,
        *,
        limit: int,
        default_fusion: str,
        vector: Any = None,
        offset: int = 0,
        fusion: str | None = None,
        vector_weight: float | None = None,
        min_score: float | None = None,
        include_archive: bool = False,
        mmr_lambda: float | None = None,
        fetch_k: int | None = None,
        rank: bool = True,
        time_mode: str = "off",
        asked_at: datetime | None = None,
    ) -> SearchQuery:
        """Check every argument and resolve the defaults; raise ``ValueError`` saying what to pass."""
        method = fusion or default_fusion
        if method not in FUSIONS:
            raise ValueError(f"unknown fusion {method!r}; use one of {', '.join(FUSIONS)}")
        if text is not None:
            check_query(text)
        has_text = bool(text and text.strip())
        if not has_text and vector is None:
            raise ValueError("search needs a query text or a vector; to list memories without one, use store.list()")
        if method == "keyword" and not has_text:
            raise ValueError("a keyword search needs a query text")
        check_limit(limit, minimum=0)
        check_limit(offset, "offset", minimum=0)
        for name, number, bound in (("vector_weight", vector_weight, None), ("min_score", min_score, None),
                                    ("mmr_lambda", mmr_lambda, 1.0)):
            if number is not None:
                check_finite(number, name, bound=bound)
        if fetch_k is not None:
            check_limit(fetch_k, "fetch_k")
            if mmr_lambda is not None and fetch_k < limit + offset:
                raise ValueError(f"fetch_k ({fetch_k}) must be at least limit + offset ({limit + offset})")
        if vector is not None and method in ("keyword_first", "weighted", "rrf") and not has_text:
            method = "vector"
        if time_mode not in TIME_MODES:
            raise ValueError(f"unknown time mode {time_mode!r}; use one of {', '.join(TIME_MODES)}")
        window = None
        if time_mode != "off" and has_text and asked_at is not None:
            window = find_time(text or "", asked_at)
        return cls(text=text, scope=scope, limit=limit, vector=vector, offset=offset, fusion=method,
                   vector_weight=vector_weight, min_score=min_score, include_archive=include_archive,
                   mmr_lambda=mmr_lambda, fetch_k=fetch_k, rank=rank, time=window, time_mode=time_mode, asked_at=asked_at)

    @property
    def has_text(self) -> bool:
        return bool(self.text and self.text.strip())

    @property
    def wanted(self) -> int:
        """How many ranked candidates the search keeps before ``offset``/``limit`` (more for MMR)."""
        wanted = self.limit + self.offset
        if self.mmr_lambda is not None and wanted:
            return self.fetch_k or max(20, 4 * wanted)
        return wanted

    @property
    def keyword_text(self) -> str:
        """The text for the keyword side: without its time phrase, unless nothing else is left."""
        text = self.text or ""
        if self.time is None or self.time.anchor is not None:
            return text
        rest = without_phrase(text, self.time)
        return rest if any(ch.isalnum() for ch in rest) else text

    def keyword_only(self) -> SearchQuery:
        """The same search on the keyword side alone (a store whose embedder cannot embed text)."""
        if self.fusion == "vector":
            raise ValueError("this store's embedder cannot embed text; pass vector=...")
        return replace(self, fusion="keyword")

    def within(self, window: TimeWindow) -> Scope:
        """The scope narrowed to memories created inside ``window``."""
        return self.scope.created_within(to_iso(window.start), to_iso(window.end))

    def query_vector(self, dims: int) -> np.ndarray | None:
        return None if self.vector is None else as_vector(self.vector, dims)


"""Hybrid search: BM25 and vector candidates within a scope, fused, then ranked by seed 002.

final score = relevance x exp(0.2 x score) x 1 / (1 + 0.01 x days since last hit)

where relevance comes from the fusion of normalised BM25 and the vector similarity's
excess over the embedder's noise floor (see ``ranking.fuse``), and the days count from
``last_hit_at``, falling back to ``created_at``. Every hit carries the parts.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from concurrent.futures import wait
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from typing import Any

import numpy as np

from .clock import Clock, days_between
from .config import Config
from .embed import Embedder, as_vector, profile_of
from .index.keyword_query import KeywordQuery
from .index.protocols import KeywordIndex, VectorIndex
from .index.scope import Scope
from .memories import Memory
from .memories.repository import MemoryRepository
from .ranking import (
    FusedScore,
    feedback_weight,
    fuse,
    maximal_marginal_relevance,
    recency_weight,
    with_context,
)
from .search_query import SearchQuery
from .time_phrases import TimeWindow

#: a row of :meth:`.MemoryRepository.ranking_columns`: rowid, feedback score, last_hit_at, created_at
RankingColumns = tuple[int, float, datetime | None, datetime | None]

__all__ = ["Hit", "ScoreParts", "SearchResults", "Searcher"]


@dataclass(frozen=True)
class ScoreParts:
    """Why a hit scored what it did. ``bm25``/``similarity`` are ``None`` when that side did not look."""

    bm25: float | None  # FTS5 BM25 (positive; higher is better), 0 when the keywords did not match
    keyword: float  # BM25 relative to this query's best match, 0..1
    similarity: float | None  # cosine similarity to the query vector
    vector: float  # similarity above the embedder's noise floor, 0..1
    relevance: float  # the fused relevance
    feedback: float  # exp(score x 0.2)
    recency: float  # 1 / (1 + days x 0.01)
    days_since_hit: float
    fusion: str  # the fusion method; "archive" for archive hits, "link" for Hebbian expansion hits
    linked_from: str | None = None  # expansion hits: the hit whose link brought this one in
    link_strength: float | None = None  # expansion hits: that link's strength
    # BM25 against a full match (a row with every query term once: the sum of their idf, at least
    # ln(1 + N) / 2): an absolute scale, unlike ``keyword``; near 0 when only common words
    # matched, about 1 for a row with all the query's terms. For relevance gates.
    keyword_strength: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Hit:
    """One search result: the memory, its final score and the parts of that score."""

    memory: Memory
    score: float
    parts: ScoreParts

    @property
    def id(self) -> str:
        return self.memory.id

    @property
    def text(self) -> str:
        return self.memory.text

    @property
    def metadata(self) -> dict[str, Any]:
        return self.memory.metadata

    def explain(self) -> str:
        p = self.parts
        if p.fusion == "link":
            return (
                f"{self.score:.4f} = relevance {p.relevance:.4f} [linked from {p.linked_from}, strength "
                f"{p.link_strength:g}] x feedback {p.feedback:.3f} (score {self.memory.score:+g})"
                f" x recency {p.recency:.3f} ({p.days_since_hit:.1f} days)"
            )
        bm25 = "not searched" if p.bm25 is None else f"{p.bm25:.3f} (x{p.keyword:.2f} of the best)"
        sim = "not searched" if p.similarity is None else f"{p.similarity:.3f} ({p.vector:.2f} above the floor)"
        return (
            f"{self.score:.4f} = relevance {p.relevance:.4f} [{p.fusion}: bm25 {bm25}, similarity {sim}]"
            f" x feedback {p.feedback:.3f} (score {self.memory.score:+g})"
            f" x recency {p.recency:.3f} ({p.days_since_hit:.1f} days)"
        )

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "text": self.text, "score": self.score, "parts": self.parts.to_dict(),
                "memory": self.memory.to_dict()}

    def _repr_html_(self) -> str:
        return (f"<table><caption>hit <code>{html.escape(self.id)}</code>: {html.escape(self.text)}</caption>"
                f"<tbody><tr><td style='text-align:left'><code>{html.escape(self.explain())}</code></td></tr>"
                f"</tbody></table>")


class SearchResults(list):
    """A list of :class:`Hit`, best first, that renders as a table in Jupyter."""

    def __init__(self, hits: Sequence[Hit] = (), *, query: str | None = None) -> None:
        super().__init__(hits)
        self.query = query

    @property
    def ids(self) -> list[str]:
        return [hit.id for hit in self]

    def to_dicts(self) -> list[dict[str, Any]]:
        return [hit.to_dict() for hit in self]

    def matching(self, threshold: float, *, min_keyword: float = 0.0) -> SearchResults:
        """The hits whose keywords matched the query or whose vector similarity reaches ``threshold``.

        Seed 003's relevance gate (its message search): a hit that only came back as a weak
        vector neighbour is dropped. ``profile_of(embedder).kb_threshold`` is the usual
        threshold (0.7 for sentence models, 0.35 for the hashing embedder). ``min_keyword``:
        a keyword match counts only when its BM25 is at least this share of the best one
        (``ScoreParts.keyword``), so that matching only words most memories contain ("is",
        "the": FTS5 gives them almost no weight) does not count as matching.
        """
        kept = [h for h in self
                if ((h.parts.bm25 or 0.0) > 0.0 and h.parts.keyword >= min_keyword)
                or (h.parts.similarity or -1.0) >= threshold]
        return SearchResults(kept, query=self.query)

    def _repr_html_(self) -> str:
        head = "".join(
            f"<th>{h}</th>" for h in ("#", "id", "score", "text", "kind", "tags", "bm25", "similarity", "feedback", "recency")
        )
        rows = []
        for i, hit in enumerate(self, 1):
            p = hit.parts
            text = hit.text if len(hit.text) <= 160 else hit.text[:157] + "..."
            rows.append(
                "<tr>"
                f"<td>{i}</td><td><code>{html.escape(hit.id)}</code></td><td>{hit.score:.4f}</td>"
                f"<td style='text-align:left'>{html.escape(text)}</td><td>{html.escape(hit.memory.kind)}</td>"
                f"<td>{html.escape(', '.join(hit.memory.tags))}</td>"
                f"<td>{'' if p.bm25 is None else f'{p.bm25:.3f}'}</td>"
                f"<td>{'' if p.similarity is None else f'{p.similarity:.3f}'}</td>"
                f"<td>{p.feedback:.3f}</td><td>{p.recency:.3f}</td></tr>"
            )
        caption = f"<caption>{len(self)} hits for {html.escape(repr(self.query))}</caption>" if self.query else ""
        return f"<table>{caption}<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"

    def __repr__(self) -> str:
        return f"SearchResults({len(self)} hits)"


class Searcher:
    """Runs one search over the index; the store calls it under its lock."""

    def __init__(
        self,
        config: Config,
        keyword: KeywordIndex,
        vectors: VectorIndex,
        memories: MemoryRepository,
        embedder: Embedder,
        clock: Clock,
        archive: Any = None,
    ) -> None:
        self.archive = archive
        self.config = config
        self.keyword = keyword
        self.vectors = vectors
        self.memories = memories
        self.embedder = embedder
        self.clock = clock

    def embed_query(self, text: str) -> np.ndarray:
        embed_query = getattr(self.embedder, "embed_query", None)
        raw = embed_query(text) if callable(embed_query) else self.embedder.embed([text])[0]
        return as_vector(raw, self.embedder.dims, what="query embedding")

    def run(self, q: SearchQuery) -> tuple[list[Hit], np.ndarray | None]:
        """The hits of ``q`` (after ``offset``, at most ``limit``) and the query vector it used."""
        cfg = self.config.search
        wanted = q.wanted
        if wanted == 0:
            return [], None
        if q.vector is None and not getattr(self.embedder, "embeds_text", True):
            try:
                q = q.keyword_only()
            except ValueError:
                raise ValueError(f"this store's embedder ({self.embedder.name}) cannot embed text; "
                                 "pass vector=...") from None
        method = q.fusion
        pool = max(cfg.candidates, 5 * wanted)
        profile = profile_of(self.embedder)
        floor = cfg.similarity_floor if cfg.similarity_floor >= 0 else profile.similarity_floor
        weight = q.vector_weight if q.vector_weight is not None else (
            cfg.vector_weight if cfg.vector_weight >= 0 else profile.vector_weight
        )
        window = self._place(q.time, q) if q.time is not None else None
        scope, boosted = q.scope, None
        if window is not None:
            if q.time_mode == "narrow":
                scope = q.within(window)
            else:
                boosted = q.within(window)

        searched_keywords = q.has_text and method != "vector"
        query_vector: np.ndarray | None = None
        if method != "keyword":
            query_vector = q.query_vector(self.embedder.dims)
            if query_vector is None:
                query_vector = self.embed_query(q.text or "")
        bm25, similarity, keyword_query, nearest = self._candidates(q, scope, query_vector, searched_keywords, pool)
        sides = ([set(bm25)] if searched_keywords else []) + ([nearest] if query_vector is not None else [])
        columns: dict[int, RankingColumns] = {}  # ranking_columns, read once
        if boosted is not None and window is not None and self._window_missed(boosted, window, sides, pool, wanted,
                                                                               columns):
            # the window's own best candidates, which the whole scope's pool missed
            # with the whole scope's keyword query: its BM25 values are the same query's, comparable with
            # the first side's, and the window's own word gate would count its rows again (a window of a
            # third of a million memories: 0.1-0.15 s a count)
            more_bm25, more_similarity, _, _ = self._candidates(q, boosted, query_vector, searched_keywords, pool,
                                                                keyword_query)
            bm25.update(more_bm25)
            similarity.update(more_similarity)

        full_match = keyword_query.strength_scale if keyword_query is not None and cfg.keyword_scale == "full_match" else 0.0
        fused = fuse(method, bm25, similarity, vector_weight=weight, similarity_floor=floor, rrf_k=cfg.rrf_k,
                     full_match=full_match)
        fused = {rowid: f for rowid, f in fused.items() if f.relevance > 0}
        if cfg.context_weight > 0 and q.rank and method in ("keyword_first", "weighted", "rrf") and fused:
            fused = self._in_context(fused, cfg.context_weight)
        now = self.clock.now()
        # rank on the three columns ranking needs, then read whole rows for the best `wanted`
        # only: a Memory for each of ~90 candidates (JSON, eight timestamps) took 0.7-1.5 ms of
        # a 100k search
        ranked = []
        columns.update((row[0], row) for row in self.memories.ranking_columns([r for r in fused if r not in columns]))
        for rowid, feedback_score, last_hit_at, created_at in (columns[r] for r in fused if r in columns):
            days = days_between(last_hit_at or created_at, now)
            fw, rw = self._weights(feedback_score, days, q.rank)
            when = 1.0 + cfg.time_boost if boosted is not None and window is not None and created_at is not None \
                and window.contains(created_at) else 1.0
            ranked.append((fused[rowid].relevance * fw * rw * when, _ts(created_at), rowid, fw, rw, days))
        ranked.sort(key=lambda r: (-r[0], -r[1], r[2]))
        if q.min_score is not None:
            ranked = [r for r in ranked if r[0] >= q.min_score]
        rows = self.memories.by_rowids([r[2] for r in ranked[:wanted]])
        hits: list[Hit] = []
        for final, _, rowid, fw, rw, days in ranked[:wanted]:
            memory = rows.get(rowid)
            if memory is None:  # deleted by another process in between
                continue
            f = fused[rowid]
            parts = ScoreParts(
                bm25=bm25.get(rowid, 0.0) if searched_keywords else None,
                keyword=f.keyword,
                similarity=similarity.get(rowid) if query_vector is not None else None,
                vector=f.vector,
                relevance=f.relevance,
                feedback=fw,
                recency=rw,
                days_since_hit=days,
                fusion=method,
                keyword_strength=_strength(bm25.get(rowid, 0.0), keyword_query),
            )
            hits.append(Hit(memory, final, parts))
        if q.include_archive and keyword_query is not None:
            hits.extend(self.archive_hits(keyword_query, scope, pool, bm25, now, method, rank=q.rank))
        hits.sort(key=lambda h: (-h.score, -_ts(h.memory.created_at), h.memory.rowid))
        if q.min_score is not None:
            hits = [h for h in hits if h.score >= q.min_score]
        if q.mmr_lambda is not None:
            hits = self._diversify(hits[:wanted], q.text, query_vector, q.limit + q.offset, q.mmr_lambda)
        return hits[q.offset : q.offset + q.limit], query_vector

    def _candidates(self, q: SearchQuery, scope: Scope, query_vector: np.ndarray | None, searched_keywords: bool,
                    pool: int, keyword_query: KeywordQuery | None = None
                    ) -> tuple[dict[int, float], dict[int, float], KeywordQuery | None, set[int]]:
        """BM25 and similarity of each side's best ``pool`` rows in ``scope`` (the vector scan runs
        beside the keyword ranking where that pays), the keyword query (``keyword_query``, or prepared
        for ``scope``), and the rows the vector side found itself (``similarity`` also holds the
        keyword side's rows)."""
        scan = None
        now_ts = self.clock.now().timestamp()
        if query_vector is not None and searched_keywords:
            scan = self.vectors.search_in_background(query_vector, pool, scope, now=now_ts)
        bm25: dict[int, float] = {}
        if searched_keywords:
            try:
                if keyword_query is None:
                    keyword_query = self.keyword.prepare(q.keyword_text, scope)
                bm25 = dict(self.keyword.search(keyword_query, scope, pool))
            except BaseException:
                if scan is not None:
                    wait([scan])  # the scan reads the mirror: it ends before the store's lock is let go
                raise
        similarity: dict[int, float] = {}
        nearest: set[int] = set()
        if query_vector is not None:
            found = scan.result() if scan is not None else self.vectors.search(query_vector, pool, scope, now=now_ts)
            similarity = dict(found)
            nearest = set(similarity)
            missing = [rowid for rowid in bm25 if rowid not in similarity]
            similarity.update(self.vectors.similarities(query_vector, missing))
        return bm25, similarity, keyword_query, nearest

    def _window_missed(self, boosted: Scope, window: TimeWindow, sides: list[set[int]], pool: int, wanted: int,
                       columns: dict[int, RankingColumns]) -> bool:
        """Whether the window (``boosted``) holds memories the candidates may have missed, so that it
        needs a search of its own. Not when it holds none, nor when every side already holds its best:
        the side found fewer than ``pool`` rows (all it had), or at least ``wanted`` of them lie in the
        window (a side's best rows of the scope that lie in the window are the window's own best). At a
        million rows the second search of a window of most of them ("recently") took a second or more.
        The candidates' ranking columns it reads go into ``columns``, for the ranking after it."""
        if not self.memories.count(boosted, cap=1):
            return False
        columns.update((row[0], row) for row in self.memories.ranking_columns(list(set().union(*sides))))
        inside_window = {rowid for rowid, _, _, when in columns.values() if when is not None and window.contains(when)}
        return any(len(side) >= pool and len(side & inside_window) < wanted for side in sides)

    def _in_context(self, fused: dict[int, FusedScore], weight: float) -> dict[int, FusedScore]:
        """Each candidate's relevance plus ``weight`` x its best session neighbour's (conversation context)."""
        neighbours = self.memories.session_neighbours(list(fused))
        if not neighbours:
            return fused
        lifted = with_context({rowid: f.relevance for rowid, f in fused.items()}, neighbours, weight)
        return {rowid: replace(f, relevance=lifted[rowid]) for rowid, f in fused.items()}

    def _place(self, window: TimeWindow, q: SearchQuery) -> TimeWindow | None:
        """The window itself, or for "before the trip" the window around the best memory of the trip."""
        if window.anchor is None:
            return window
        anchor = SearchQuery.build(window.anchor, q.scope, limit=1, default_fusion="keyword_first",
                                   fusion="keyword" if not getattr(self.embedder, "embeds_text", True) else None)
        hits, _ = self.run(anchor)
        when = hits[0].memory.created_at if hits else None
        return window.around(when, q.asked_at) if when is not None else None

    def _weights(self, feedback_score: float, days: float, rank: bool) -> tuple[float, float]:
        """Seed 002's feedback and recency weights; both 1 when the caller wants plain relevance."""
        if not rank:
            return 1.0, 1.0
        return (feedback_weight(feedback_score, self.config.ranking.score_weight),
                recency_weight(days, self.config.ranking.recency_rate, self.config.ranking.recency_floor))

    def archive_hits(self, keyword_query: Any, scope: Scope, pool: int, live_bm25: dict[int, float],
                      now: datetime, method: str, *, rank: bool = True) -> list[Hit]:
        """Keyword matches from the archive, scaled against the same best BM25 as live hits."""
        if self.archive is None:
            return []
        found = self.archive.search(keyword_query, scope, pool)
        best = max([*live_bm25.values(), *(score for _, score in found)], default=0.0)
        hits = []
        for memory, score in found:
            relevance = score / best if best > 0 else 0.0
            if relevance <= 0:
                continue
            days = days_between(memory.last_hit_at or memory.created_at, now)
            fw, rw = self._weights(memory.score, days, rank)
            parts = ScoreParts(bm25=score, keyword=relevance, similarity=None, vector=0.0, relevance=relevance,
                               feedback=fw, recency=rw, days_since_hit=days, fusion="archive",
                               keyword_strength=_strength(score, keyword_query))
            hits.append(Hit(memory, relevance * fw * rw, parts))
        return hits

    def _diversify(self, hits: list[Hit], query: str | None, query_vector: np.ndarray | None, k: int,
                   lambda_mult: float) -> list[Hit]:
        """Reorder the best candidates by maximal marginal relevance (archive hits have no vector)."""
        live = [h for h in hits if h.memory.archived_at is None]
        if not live:
            return hits[:k]
        if query_vector is None:
            if not getattr(self.embedder, "embeds_text", True):
                raise ValueError("MMR needs a query vector: pass vector=... (this store cannot embed text)")
            query_vector = self.embed_query(query or "")
        vectors = self.vectors.vectors_of([h.memory.rowid for h in live])
        live = [h for h in live if h.memory.rowid in vectors]
        matrix = np.stack([vectors[h.memory.rowid] for h in live]) if live else np.zeros((0, self.embedder.dims))
        order = maximal_marginal_relevance(query_vector, matrix, k, lambda_mult)
        return [live[i] for i in order]


def _ts(when: datetime | None) -> float:
    return when.timestamp() if when else 0.0


def _strength(bm25: float, query: Any) -> float:
    """BM25 over the query's strength scale (0 when nothing matched or the query has no terms)."""
    scale = query.strength_scale if query is not None else 0.0
    return bm25 / scale if bm25 > 0 and scale > 0 else 0.0

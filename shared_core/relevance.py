"""Relevance as the framework doors report it: gated recall and scores on a 0..1 scale.

* :func:`content_query` drops a query's stop words, so that a keyword search does not match a
  memory on "is" and "the" alone (FTS5 weighs such words by how rare they are, which in a
  small namespace is not rare at all).
* :func:`relevant` is the recall gate a memory block uses: the search runs on the query's
  content words, and a memory counts when those words matched or its vector is close enough
  (seed 003's threshold); :func:`mark_recalled` counts what was actually used as accessed.
* :func:`unit_scores` puts a search's scores on a 0..1 scale without changing their order.
"""

from __future__ import annotations

import string
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from .embed import profile_of
from .search import Hit, SearchResults
from .summarize import STOPWORDS

if TYPE_CHECKING:
    from .store import MemoryStore

__all__ = ["content_query", "relevance_scale", "unit_scores", "relevant", "mark_recalled"]

_STRIP = string.punctuation + "“”‘’«»¿¡…"


def content_query(text: str) -> str:
    """``text`` without its stop words (``summarize.STOPWORDS``); ``""`` when nothing else is left.

    >>> content_query("What is the IP of the staging server?")
    'IP staging server?'
    """
    kept = []
    for piece in text.split():
        word = piece.casefold().replace("’", "'").strip(_STRIP)
        if word and word not in STOPWORDS:
            kept.append(piece)
    return " ".join(kept)


def relevance_scale(store: MemoryStore, fusion: str | None = None) -> float:
    """The largest relevance ``store.search`` gives with ``fusion`` (``None``: the configured one).

    ``keyword_first`` adds the vector side to a full keyword match (1 + the vector weight);
    ``rrf`` gives at most 2 / (k + 1); the other fusions stay within 0..1.
    """
    cfg = store.config.search
    method = fusion or cfg.fusion
    if method == "keyword_first":
        weight = cfg.vector_weight if cfg.vector_weight >= 0 else profile_of(store.embedder).vector_weight
        return 1.0 + weight
    if method == "rrf":
        return 2.0 / (cfg.rrf_k + 1)
    return 1.0


def unit_scores(store: MemoryStore, hits: Sequence[Hit]) -> list[float]:
    """The hits' scores divided by the largest relevance their search's fusion gives.

    One divisor for all hits, so the order stays; an unranked search (``rank=False``) then
    scores within 0..1 (1: a full keyword match whose vector is identical); a ranked one may
    exceed 1 where feedback lifted a memory.
    """
    method = next((h.parts.fusion for h in hits if h.parts.fusion not in ("archive", "link")), None)
    scale = relevance_scale(store, method)
    return [hit.score / scale for hit in hits]


def relevant(
    store: MemoryStore,
    query: str,
    *,
    namespace: str | Sequence[str],
    kind: str | Sequence[str] | None,
    limit: int,
    min_similarity: float | None = None,
    min_keyword: float = 0.0,
) -> SearchResults:
    """The memories relevant to ``query``, best first, at most ``limit``.

    The search runs on the query's content words (:func:`content_query`), so a memory that
    shares only stop words with it is never a keyword match; a memory counts when its keywords
    matched (at least ``min_keyword`` of the best match's BM25) or its vector similarity
    reaches ``min_similarity`` (default: the embedder's ``kb_threshold``). Access is not
    counted: call :func:`mark_recalled` for what was used.
    """
    words = content_query(query)
    if not words or limit <= 0:
        return SearchResults([], query=query)
    threshold = profile_of(store.embedder).kb_threshold if min_similarity is None else min_similarity
    hits = store.search(words, namespace=namespace, kind=kind, limit=max(3 * limit, 20), track_access=False)
    return SearchResults(hits.matching(threshold, min_keyword=min_keyword)[:limit], query=query)


def mark_recalled(store: MemoryStore, hits: Iterable[Hit]) -> None:
    """Count the recalled hits as accessed (seed 003), as a search would have."""
    rowids = [hit.memory.rowid for hit in hits if hit.memory.archived_at is None]
    if rowids and store.config.search.track_access and not store.db.read_only:
        with store.transaction():
            store.kernel.memories.track_access(rowids)

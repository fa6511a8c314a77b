"""``OpenKoiRetriever``: openkoi's hybrid search and ranking as a LlamaIndex retriever.

Unlike a vector-store retriever it searches any memories (facts, learnings, document
chunks, LlamaIndex nodes), fuses FTS5 BM25 with vector similarity and ranks by the
core's feedback and recency weights (seed 002). Each ``NodeWithScore`` carries the
final score; the node's metadata carries ``score_parts`` (BM25, similarity, fusion,
feedback, recency), ``memory_id``, ``memory_kind`` and ``memory_namespace``, all hidden
from the LLM and the embedder.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping, Sequence
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import NodeWithScore, QueryBundle
from llama_index.core.vector_stores.types import MetadataFilters

from shared_core import MemoryStore
from shared_core.index.filters import Filter
from shared_core.memories import DEFAULT_NAMESPACE

from ._handle import StoreHandle
from .filters import to_openkoi_filter
from .nodes import hit_to_node

__all__ = ["OpenKoiRetriever"]


class OpenKoiRetriever(BaseRetriever):
    """Retrieve memories with openkoi's hybrid search, filters and ranking.

    ``store`` (an open :class:`~shared_core.MemoryStore`) or ``path``; ``namespace`` (one
    or several) or ``namespace_prefix``; ``kind`` limits to memory kinds (``"node"`` for
    what :class:`OpenKoiVectorStore` holds); ``filters`` are LlamaIndex ``MetadataFilters``
    or openkoi's dict filters. ``embed_model`` embeds queries when the file holds
    precomputed vectors (without one, and without a text embedder in the store, the
    search is keyword-only). The other keywords go to :meth:`MemoryStore.search`
    (``fusion``, ``vector_weight``, ``min_score``, ``mmr_lambda``, ``include_archive``...).
    """

    def __init__(
        self,
        store: MemoryStore | None = None,
        *,
        path: str | os.PathLike[str] | None = None,
        namespace: str | Sequence[str] = DEFAULT_NAMESPACE,
        namespace_prefix: str | None = None,
        kind: str | Sequence[str] | None = None,
        filters: MetadataFilters | Mapping[str, Any] | Filter | None = None,
        similarity_top_k: int = 10,
        embed_model: BaseEmbedding | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
        **search_kwargs: Any,
    ) -> None:
        if not isinstance(similarity_top_k, int) or similarity_top_k < 1:
            raise ValueError(f"similarity_top_k must be a positive integer, got {similarity_top_k!r}")
        unknown = set(search_kwargs) - _SEARCH_OPTIONS
        if unknown:
            raise TypeError(
                f"unknown OpenKoiRetriever arguments {sorted(unknown)}; search options are {sorted(_SEARCH_OPTIONS)}"
            )
        self._handle = StoreHandle(store, path)
        self._scope: dict[str, Any] = {"namespace": namespace, "namespace_prefix": namespace_prefix, "kind": kind}
        self._where = to_openkoi_filter(filters)
        self._top_k = similarity_top_k
        self._embed_model = embed_model
        self._search_kwargs = search_kwargs
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    @property
    def store(self) -> MemoryStore:
        return self._handle.store

    def close(self) -> None:
        """Close the file if this retriever opened it."""
        self._handle.close()

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        vector = query_bundle.embedding
        if vector is None and self._embed_model is not None:
            vector = self._embed_model.get_query_embedding(query_bundle.query_str)
        return self._search(query_bundle.query_str, vector)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        vector = query_bundle.embedding
        if vector is None and self._embed_model is not None:
            vector = await self._embed_model.aget_query_embedding(query_bundle.query_str)
        return await asyncio.to_thread(self._search, query_bundle.query_str, vector)

    def _search(self, text: str, vector: list[float] | None) -> list[NodeWithScore]:
        hits = self.store.search(
            text if text and text.strip() else None, vector=vector, where=self._where, limit=self._top_k,
            **self._scope, **self._search_kwargs,
        )
        return [NodeWithScore(node=hit_to_node(hit), score=hit.score) for hit in hits]


_SEARCH_OPTIONS = frozenset({
    "tags", "category", "source", "since", "until", "fusion", "vector_weight", "min_score", "include_expired",
    "include_superseded", "include_archive", "mmr_lambda", "fetch_k", "track_access", "rank",
})

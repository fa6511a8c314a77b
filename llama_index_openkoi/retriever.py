"""``OpenKoiRetriever``: openkoi's hybrid search and ranking as a LlamaIndex retriever.

Unlike a vector-store retriever it searches any memories (facts, learnings, document
chunks, LlamaIndex nodes), fuses FTS5 BM25 with vector similarity and ranks by the
core's feedback and recency weights (Koshi's rank). Each ``NodeWithScore`` carries the
final score on a 0..1 scale (divided by the largest relevance the fusion gives, so the order
stays; a memory lifted by feedback may exceed 1); the node's metadata carries
``score_parts`` (BM25, similarity, fusion, feedback, recency), ``memory_id``,
``memory_kind`` and ``memory_namespace``, all hidden from the LLM and the embedder.
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

from shared_core import DEFAULT_NAMESPACE, MemoryStore
from shared_core.index.filters import Filter
from shared_core.namespaces import Namespace
from shared_core.relevance import unit_scores

from ._handle import StoreHandle, namespace_of
from .filters import to_openkoi_filter
from .nodes import hit_to_node

__all__ = ["OpenKoiRetriever"]


class OpenKoiRetriever(BaseRetriever):
    """Retrieve memories with openkoi's hybrid search, filters and ranking.

    ``store`` (an open :class:`~shared_core.MemoryStore`) or ``path``. Where to search, one
    of: ``namespace`` (a string, or a tuple read as everywhere else: ``("users", "ann")`` is
    ``"users.ann."``; default ``"default"``), ``namespaces`` (a list of them) or
    ``namespace_prefix`` (``""``: every namespace); templates such as ``"user:{user_id}"``
    are refused. ``kind`` limits to memory kinds (``"node"`` for
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
        namespace: Namespace | None = None,
        namespaces: Sequence[Namespace] | None = None,
        namespace_prefix: Namespace | None = None,
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
        self._scope: dict[str, Any] = {**_where_to_search(namespace, namespaces, namespace_prefix), "kind": kind}
        self._handle = StoreHandle(store, path)
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
        return [NodeWithScore(node=hit_to_node(hit), score=score)
                for hit, score in zip(hits, unit_scores(self.store, hits), strict=True)]


def _where_to_search(namespace: Namespace | None, namespaces: Sequence[Namespace] | None,
                     prefix: Namespace | None) -> dict[str, Any]:
    """The core's ``namespace``/``namespace_prefix`` for the retriever's one way of choosing them."""
    given = [name for name, value in (("namespace", namespace), ("namespaces", namespaces),
                                      ("namespace_prefix", prefix)) if value is not None]
    if len(given) > 1:
        raise ValueError(f"give one of namespace, namespaces or namespace_prefix, not {' and '.join(given)}")
    if isinstance(namespace, list):
        raise ValueError(
            f"namespace={namespace!r}: a namespace is a string or a tuple of labels such as ('users', 'ann'); "
            "to search several namespaces, pass namespaces=[...]"
        )
    if prefix is not None:
        return {"namespace": None, "namespace_prefix": "" if prefix == "" else namespace_of(prefix, "OpenKoiRetriever")}
    if namespaces is not None:
        if isinstance(namespaces, str) or not namespaces:
            raise ValueError(f"namespaces must be a non-empty list of namespaces, got {namespaces!r}")
        return {"namespace": [namespace_of(n, "OpenKoiRetriever") for n in namespaces], "namespace_prefix": None}
    return {"namespace": namespace_of(DEFAULT_NAMESPACE if namespace is None else namespace, "OpenKoiRetriever"),
            "namespace_prefix": None}


_SEARCH_OPTIONS = frozenset({
    "tags", "category", "source", "since", "until", "fusion", "vector_weight", "min_score", "include_expired",
    "include_superseded", "include_archive", "mmr_lambda", "fetch_k", "track_access", "rank",
})

"""``OpenKoiVectorStore``: a LlamaIndex vector store in one local SQLite file.

Nodes are memories of kind ``node`` in one namespace of an openkoi-memory file (see
``nodes.py``), so they get FTS5 keyword search and vector search together, and every
query mode runs on the core's search:

==================  ==========================================================
DEFAULT             vector KNN on ``query_embedding`` (cosine similarities)
TEXT_SEARCH/SPARSE  FTS5 BM25 on ``query_str`` (``sparse_top_k`` if given)
HYBRID              the core's weighted fusion with ``vector_weight = alpha``
                    (0 keywords only, 1 vectors only; no alpha: the core's default
                    keyword-first fusion, scaled to 0..1); ``hybrid_top_k`` if given
MMR                 vector candidates reordered by maximal marginal relevance,
                    ``mmr_threshold`` (query field or keyword) as lambda
==================  ==========================================================

``alpha`` 1 is exactly ``DEFAULT`` and 0 exactly ``TEXT_SEARCH``. Similarities are cosine in
the vector modes (as ``SimpleVectorStore`` reports them) and within 0..1 in the others.

**What it reads.** Queries and ``get_nodes`` read the memories of ``kinds`` in the store's
namespace: by default its own nodes and document chunks (kind ``document``: what
``store.documents.ingest`` and ``openkoi-memory ingest`` write, and LangChain's vector
store), so ``VectorStoreIndex.from_vector_store`` over a file finds the documents ingested
into it. ``kinds=[..., "fact"]`` adds facts, and so on. Writing and deleting touch only the
store's own nodes (kind ``node``); a document chunk comes back as a ``TextNode`` whose id is
its memory id and whose ``ref_doc_id`` is its document's id.

Metadata filters, ``node_ids`` and ``doc_ids`` apply before top-k. In a query, empty
``node_ids``/``doc_ids`` mean no restriction (LlamaIndex's retriever sends ``[]`` to
stores that keep text); in ``get_nodes``/``delete_nodes``, ``[]`` selects nothing and
``None`` everything, as in ``SimpleVectorStore``.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from typing import Any

from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.schema import BaseNode
from llama_index.core.vector_stores.types import (
    BasePydanticVectorStore,
    MetadataFilters,
    VectorStoreQuery,
    VectorStoreQueryMode,
    VectorStoreQueryResult,
)

from shared_core import DEFAULT_NAMESPACE, MemoryStore
from shared_core.index.filters import And, Condition, Filter, Not, Or
from shared_core.namespaces import Namespace
from shared_core.relevance import unit_scores

from ._handle import StoreHandle, namespace_of
from .filters import to_openkoi_filter
from .nodes import NODE_KIND, memory_id, memory_to_node, node_to_memory

__all__ = ["OpenKoiVectorStore", "DEFAULT_KINDS"]

_MODES = ("default", "text_search", "sparse", "hybrid", "mmr")
DEFAULT_KINDS = (NODE_KIND, "document")
"""What a vector store reads unless told otherwise: its nodes and the file's document chunks."""


class OpenKoiVectorStore(BasePydanticVectorStore):
    """LlamaIndex vector store backed by an openkoi-memory file (text, vectors, FTS5).

    Give an open :class:`~shared_core.MemoryStore` (shared with other adapters) or a
    ``path`` (``None``: the default data file). ``embed_dim`` sizes a new file; without
    it the file takes the size of the first embeddings added or queried. ``namespace``
    separates independent stores in one file. ``ranking=True`` weights relevance by the
    core's feedback and recency (Koshi's rank), as :class:`OpenKoiRetriever` does; by default
    results come in plain similarity order, as LlamaIndex expects of a vector store.
    ``namespace`` is a string, or a tuple read as everywhere else (``("users", "ann")`` is
    ``"users.ann."``); a template such as ``"user:{user_id}"`` is refused. ``kinds``: the
    memory kinds queries and ``get_nodes`` read (default: nodes and document chunks).
    """

    stores_text: bool = True
    namespace: str = DEFAULT_NAMESPACE
    kinds: tuple[str, ...] = DEFAULT_KINDS
    ranking: bool = False

    _handle: StoreHandle = PrivateAttr()

    def __init__(
        self,
        store: MemoryStore | None = None,
        *,
        path: str | os.PathLike[str] | None = None,
        embed_dim: int | None = None,
        namespace: Namespace = DEFAULT_NAMESPACE,
        kinds: str | Sequence[str] = DEFAULT_KINDS,
        ranking: bool = False,
        **open_kwargs: Any,
    ) -> None:
        super().__init__(stores_text=True, namespace=namespace_of(namespace, "OpenKoiVectorStore"),
                         kinds=_kinds(kinds), ranking=ranking)
        self._handle = StoreHandle(store, path, embed_dim, **open_kwargs)

    @classmethod
    def from_path(cls, path: str | os.PathLike[str], *, embed_dim: int | None = None,
                  namespace: Namespace = DEFAULT_NAMESPACE, **kwargs: Any) -> OpenKoiVectorStore:
        """A store on the file at ``path`` (created if missing), closed by :meth:`close`."""
        return cls(path=path, embed_dim=embed_dim, namespace=namespace, **kwargs)

    @classmethod
    def class_name(cls) -> str:
        return "OpenKoiVectorStore"

    @property
    def client(self) -> MemoryStore:
        """The underlying :class:`~shared_core.MemoryStore`."""
        return self._handle.store

    def close(self) -> None:
        """Close the file if this store opened it (a store passed in stays open)."""
        self._handle.close()

    # -- writing ---------------------------------------------------------------------------

    def add(self, nodes: Sequence[BaseNode], **add_kwargs: Any) -> list[str]:
        """Add (or replace, by node id) nodes with their embeddings, in one transaction."""
        nodes = list(nodes)
        if not nodes:
            return []
        first = next((n.embedding for n in nodes if n.embedding is not None), None)
        store = self._store_for(first)
        for node in nodes:
            if node.embedding is None and not getattr(store.embedder, "embeds_text", True):
                raise ValueError(
                    f"node {node.node_id!r} has no embedding; embed nodes before adding them "
                    "(VectorStoreIndex does this with its embed_model) or open the store with a text embedder"
                )
            if node.embedding is not None and len(node.embedding) != store.embedder.dims:
                raise ValueError(
                    f"node {node.node_id!r} has a {len(node.embedding)}-dimensional embedding, but this store "
                    f"holds {store.embedder.dims} dimensions; embed every node with the same model"
                )
        items = [node_to_memory(node, self.namespace) for node in nodes]
        with store.transaction():
            store.add_many(items, dedup=False)
        return [node.node_id for node in nodes]

    def delete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        """Delete every node of the source document ``ref_doc_id``."""
        self._delete_where(Condition(("ref_doc_id",), "$eq", ref_doc_id))

    def delete_nodes(self, node_ids: list[str] | None = None, filters: MetadataFilters | None = None,
                     **delete_kwargs: Any) -> None:
        """Delete the nodes among ``node_ids`` that match ``filters`` (both optional: all nodes)."""
        self._delete_where(self._where(node_ids, filters))

    def clear(self) -> None:
        """Delete every node of this store's namespace (other memories in the file stay)."""
        self._delete_where(None)

    def _delete_where(self, where: Filter | None) -> None:
        self.client.delete_where(namespace=self.namespace, kind=NODE_KIND, where=where)

    # -- reading ---------------------------------------------------------------------------

    def get_nodes(self, node_ids: list[str] | None = None, filters: MetadataFilters | None = None) -> list[BaseNode]:
        """The nodes among ``node_ids`` (in that order) that match ``filters``; neither: all nodes."""
        if node_ids is not None and not node_ids:
            return []
        memories = self.client.list(namespace=self.namespace, kind=list(self.kinds), where=self._where(node_ids, filters))
        found = [memory_to_node(m) for m in memories]
        if node_ids is not None:
            order = {node_id: i for i, node_id in enumerate(node_ids)}
            found.sort(key=lambda node: order.get(node.node_id, len(order)))
        return found

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        """Run ``query`` in its mode (see the module docs); filters apply before top-k."""
        mode = VectorStoreQueryMode(query.mode)
        if mode.value not in _MODES:
            raise ValueError(
                f"OpenKoiVectorStore does not support the {mode.value!r} query mode; use one of {', '.join(_MODES)}"
            )
        vector = query.query_embedding
        store = self._store_for(vector)
        text = query.query_str if query.query_str and query.query_str.strip() else None
        limit = query.similarity_top_k
        options: dict[str, Any] = {}
        if mode == VectorStoreQueryMode.DEFAULT or mode == VectorStoreQueryMode.MMR:
            if vector is None and (text is None or not getattr(store.embedder, "embeds_text", True)):
                raise ValueError(f"a {mode.value} query needs query_embedding (LlamaIndex's retrievers set it)")
            options["fusion"] = "vector"
            if mode == VectorStoreQueryMode.MMR:
                threshold = kwargs.get("mmr_threshold", query.mmr_threshold)
                options["mmr_lambda"] = 0.5 if threshold is None else float(threshold)
                options["fetch_k"] = _prefetch(limit, kwargs)
        elif mode in (VectorStoreQueryMode.TEXT_SEARCH, VectorStoreQueryMode.SPARSE):
            if text is None:
                raise ValueError(f"a {mode.value} query needs query_str (the words to search for)")
            options["fusion"] = "keyword"
            vector = None
            limit = query.sparse_top_k or limit
        else:  # hybrid
            if text is None and vector is None:
                raise ValueError("a hybrid query needs query_str, query_embedding, or both")
            if query.alpha is not None:
                if not 0.0 <= query.alpha <= 1.0:
                    raise ValueError(f"alpha must be between 0 (keywords only) and 1 (vectors only), got {query.alpha}")
                if query.alpha == 1.0:  # vectors only: exactly DEFAULT, every neighbour counts
                    options["fusion"] = "vector"
                elif query.alpha == 0.0 and text is not None:  # keywords only: exactly TEXT_SEARCH
                    options["fusion"] = "keyword"
                    vector = None
                else:
                    options["fusion"] = "weighted"
                    options["vector_weight"] = float(query.alpha)
            limit = query.hybrid_top_k or limit
        # VectorIndexRetriever sends node_ids=[] for stores that keep text: empty means "no restriction"
        where = self._where(query.node_ids or None, query.filters, query.doc_ids or None)
        hits = store.search(
            text, vector=vector, namespace=self.namespace, kind=list(self.kinds), where=where, limit=limit,
            rank=self.ranking, track_access=self.ranking, **options,  # plain vector-store reads never write
        )
        if options.get("fusion") == "vector" and not self.ranking:
            similarities = [float(hit.parts.similarity or 0.0) for hit in hits]
        else:
            similarities = unit_scores(store, hits)
        nodes = [memory_to_node(hit.memory) for hit in hits]
        return VectorStoreQueryResult(nodes=nodes, similarities=similarities, ids=[node.node_id for node in nodes])

    # -- async twins ------------------------------------------------------------------------

    async def async_add(self, nodes: Sequence[BaseNode], **kwargs: Any) -> list[str]:
        return await asyncio.to_thread(self.add, nodes, **kwargs)

    async def adelete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        await asyncio.to_thread(self.delete, ref_doc_id, **delete_kwargs)

    async def adelete_nodes(self, node_ids: list[str] | None = None, filters: MetadataFilters | None = None,
                            **delete_kwargs: Any) -> None:
        await asyncio.to_thread(self.delete_nodes, node_ids, filters, **delete_kwargs)

    async def aclear(self) -> None:
        await asyncio.to_thread(self.clear)

    async def aget_nodes(self, node_ids: list[str] | None = None,
                         filters: MetadataFilters | None = None) -> list[BaseNode]:
        return await asyncio.to_thread(self.get_nodes, node_ids, filters)

    async def aquery(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        return await asyncio.to_thread(self.query, query, **kwargs)

    # -- helpers ----------------------------------------------------------------------------

    def _store_for(self, vector: Sequence[float] | None) -> MemoryStore:
        return self._handle.fit(len(vector)) if vector is not None else self._handle.store

    def _where(self, node_ids: list[str] | None, filters: MetadataFilters | None,
               doc_ids: list[str] | None = None) -> Filter | None:
        parts: list[Filter] = []
        if node_ids is not None:  # a node's memory id is scoped by namespace; other memories keep their own
            is_node = Condition("@kind", "$eq", NODE_KIND)
            parts.append(Or((
                And((is_node, Condition("@id", "$in", [memory_id(self.namespace, i) for i in node_ids]))),
                And((Not(is_node), Condition("@id", "$in", list(node_ids)))),
            )))
        if doc_ids is not None:  # nodes and document chunks both record their document as document_id
            parts.append(Condition(("document_id",), "$in", list(doc_ids)))
        translated = to_openkoi_filter(filters)
        if translated is not None:
            parts.append(translated)
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else And(tuple(parts))


def _prefetch(limit: int, kwargs: dict[str, Any]) -> int:
    """How many vector candidates MMR chooses from (LlamaIndex's mmr_prefetch_k/_factor)."""
    if kwargs.get("mmr_prefetch_k") is not None:
        return max(int(kwargs["mmr_prefetch_k"]), limit)
    factor = kwargs.get("mmr_prefetch_factor")
    if factor is not None:
        return max(int(limit * float(factor)), limit)
    return max(20, 4 * limit)


def _kinds(kinds: str | Sequence[str]) -> tuple[str, ...]:
    chosen = (kinds,) if isinstance(kinds, str) else tuple(kinds)
    if not chosen or not all(isinstance(k, str) and k.strip() for k in chosen):
        raise ValueError(f"kinds must name one or more memory kinds, such as ('node', 'document'), got {kinds!r}")
    return chosen

"""``OpenKoiVectorStore``: a LangChain ``VectorStore`` on one openkoi-memory file.

Documents are memories of one ``kind`` (``"document"`` by default, the kind the core's
knowledge base gives its chunks) in one namespace: ``page_content`` is the memory's text,
``metadata`` its metadata, ``id`` its id (caller-given ids upsert). Similarity search is
the core's pure vector search (``fusion="vector"``, ``rank=False``: no feedback or
recency weighting, so a document's age never moves it); its score is the cosine
similarity, and the relevance score follows langchain-core's convention for cosine (0 for
unrelated or opposite, 1 for identical: ``max(0, cosine)``). For the core's hybrid,
feedback-ranked search use :class:`~langchain_openkoi.OpenKoiRetriever`.

The documents the knowledge base ingested (``openkoi-memory ingest``, ``store.documents``)
are memories of the same kind in the same default namespace, so a vector store over the file
finds them as it is; give ``namespace=`` when they were ingested into another one. Searches and
``get_by_ids`` also read LlamaIndex's nodes (kind ``"node"``) by default: ``kinds=`` names the
kinds to read (writes and deletes touch only ``kind``).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import VectorStore

from shared_core import NewMemory
from shared_core.clock import Clock
from shared_core.config import Config
from shared_core.index.filters import Filter
from shared_core.memories import DEFAULT_NAMESPACE
from shared_core.search import SearchResults

from ._core import open_store
from ._run import RunNamespace
from .embeddings import LangChainEmbedder, as_embedder

__all__ = ["OpenKoiVectorStore"]

_SEARCH_OPTIONS = frozenset({"filter"})


class OpenKoiVectorStore(VectorStore):
    """A vector store in an openkoi-memory file (or over an open :class:`MemoryStore`).

    ``OpenKoiVectorStore(embedding=emb, path="memory.db")`` opens (or creates) a file whose
    vectors come from ``emb``; ``OpenKoiVectorStore(store=memory_store)`` works on an open
    store with its own embedder (an ``embedding`` given as well must be the same model).
    Without ``path`` or ``store`` the default data file is used (``MemoryStore.open()``).
    ``namespace``: a core namespace, a LangGraph tuple (one namespace), or a template such as
    ``("docs", "{user_id}")`` filled on each call from the current run's config and context
    (inside a chain, graph node or tool; refused outside a run that has the value).
    ``filter`` takes the core's filter language: ``{"source": "a.pdf"}``,
    ``{"page": {"$gte": 2}}``, ``{"$or": [...]}``, ``$in $nin $ne $lt $lte $gt $gte $and $or
    $not $exists $contains $between ...`` over metadata (``"a.b"`` reaches nested keys).
    """

    def __init__(
        self,
        embedding: Embeddings | None = None,
        *,
        path: str | os.PathLike[str] | None = None,
        store: Any = None,
        namespace: str | Sequence[str] = DEFAULT_NAMESPACE,
        kind: str = "document",
        kinds: Sequence[str] | None = None,
        config: Config | Mapping[str, Any] | None = None,
        clock: Clock | None = None,
    ) -> None:
        self._embedding = embedding
        self.memory_store, self._owned = open_store(store, path, as_embedder(embedding), config=config, clock=clock)
        try:
            self._scope = RunNamespace(namespace)
            self.namespace = self._scope.fixed or self._scope.given
            self.kind = kind
            self.kinds = tuple(kinds) if kinds is not None else (kind, "node") if kind == "document" else (kind,)
            self.memory_store.count(namespace=self._scope.fixed or DEFAULT_NAMESPACE, kind=[kind, *self.kinds])
        except BaseException:
            self.close()
            raise

    # -- lifecycle ----------------------------------------------------------------------------

    def close(self) -> None:
        """Close the file if this vector store opened it (a store passed in stays open)."""
        if self._owned:
            self.memory_store.close()

    def __enter__(self) -> OpenKoiVectorStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"OpenKoiVectorStore({self.memory_store.path!r}, namespace={self.namespace!r}, kind={self.kind!r})"

    @property
    def embeddings(self) -> Embeddings | None:
        if self._embedding is not None:
            return self._embedding
        embedder = self.memory_store.embedder
        return embedder.embeddings if isinstance(embedder, LangChainEmbedder) else None

    # -- writing ------------------------------------------------------------------------------

    def add_texts(
        self,
        texts: Iterable[str],
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> list[str]:
        """Embed and store ``texts``; a given id replaces what it named (``batch_size`` per transaction)."""
        _no_options(kwargs, "add_texts", frozenset({"batch_size"}))
        texts = list(texts)
        if metadatas is not None and len(metadatas) != len(texts):
            raise ValueError(f"got {len(metadatas)} metadatas for {len(texts)} texts; give one per text")
        if ids is not None and len(ids) != len(texts):
            raise ValueError(f"got {len(ids)} ids for {len(texts)} texts; give one per text (None for a new id)")
        namespace = self._scope.resolve()
        items = [
            NewMemory(
                text=text,
                id=ids[i] if ids is not None else None,
                kind=self.kind,
                namespace=namespace,
                metadata=metadatas[i] if metadatas is not None else None,
                source="langchain",
            )
            for i, text in enumerate(texts)
        ]
        # embedded and written batch_size at a time, one transaction each (the core's add_many)
        results = self.memory_store.add_many(items, batch_size=kwargs.get("batch_size", 1000))
        return [str(r) for r in results]

    async def aadd_texts(
        self,
        texts: Iterable[str],
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> list[str]:
        return await asyncio.to_thread(self.add_texts, list(texts), metadatas, ids=ids, **kwargs)

    def delete(self, ids: list[str] | None = None, **kwargs: Any) -> bool | None:
        """Delete documents by id (missing ids are fine), or every document matching ``filter=``."""
        _no_options(kwargs, "delete", frozenset({"filter"}))
        where = kwargs.get("filter")
        if ids is None and where is None:
            raise ValueError("delete needs ids=[...] or filter={...}; to empty the namespace use filter={}")
        conditions: list[Any] = []
        if ids is not None:
            if not ids:
                return True
            conditions.append({"@id": {"$in": list(ids)}})
        if where:
            conditions.append(_filter(where))
        combined = None if not conditions else conditions[0] if len(conditions) == 1 else {"$and": conditions}
        self.memory_store.delete_where(namespace=self._scope.resolve(), kind=self.kind, where=combined)
        return True

    async def adelete(self, ids: list[str] | None = None, **kwargs: Any) -> bool | None:
        return await asyncio.to_thread(self.delete, ids, **kwargs)

    # -- reading ------------------------------------------------------------------------------

    def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        """The documents that exist among ``ids``, in the order asked."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return []
        found = {m.id: m for m in self.memory_store.list(namespace=self._scope.resolve(), kind=list(self.kinds),
                                                          ids=wanted)}
        return [_document(found[i]) for i in wanted if i in found]

    async def aget_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        return await asyncio.to_thread(self.get_by_ids, ids)

    def similarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        return [doc for doc, _ in self.similarity_search_with_score(query, k, **kwargs)]

    async def asimilarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        return await asyncio.to_thread(self.similarity_search, query, k, **kwargs)

    def similarity_search_with_score(self, query: str, k: int = 4, **kwargs: Any) -> list[tuple[Document, float]]:
        """The ``k`` nearest documents and their cosine similarity to the query (higher is closer)."""
        _no_options(kwargs, "similarity_search")
        return _scored(self._search(query=query, k=k, where=kwargs.get("filter")))

    async def asimilarity_search_with_score(
        self, query: str, k: int = 4, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        return await asyncio.to_thread(self.similarity_search_with_score, query, k, **kwargs)

    def similarity_search_by_vector(self, embedding: list[float], k: int = 4, **kwargs: Any) -> list[Document]:
        return [doc for doc, _ in self.similarity_search_with_score_by_vector(embedding, k, **kwargs)]

    async def asimilarity_search_by_vector(self, embedding: list[float], k: int = 4, **kwargs: Any) -> list[Document]:
        return await asyncio.to_thread(self.similarity_search_by_vector, embedding, k, **kwargs)

    def similarity_search_with_score_by_vector(
        self, embedding: list[float], k: int = 4, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        _no_options(kwargs, "similarity_search_by_vector")
        return _scored(self._search(vector=embedding, k=k, where=kwargs.get("filter")))

    def max_marginal_relevance_search(
        self, query: str, k: int = 4, fetch_k: int = 20, lambda_mult: float = 0.5, **kwargs: Any
    ) -> list[Document]:
        """The best ``fetch_k`` by similarity, reordered by the core's MMR; ``k`` returned."""
        _no_options(kwargs, "max_marginal_relevance_search")
        hits = self._search(query=query, k=k, where=kwargs.get("filter"), mmr=(lambda_mult, fetch_k))
        return [_document(hit.memory) for hit in hits]

    async def amax_marginal_relevance_search(
        self, query: str, k: int = 4, fetch_k: int = 20, lambda_mult: float = 0.5, **kwargs: Any
    ) -> list[Document]:
        return await asyncio.to_thread(
            self.max_marginal_relevance_search, query, k, fetch_k, lambda_mult, **kwargs
        )

    def max_marginal_relevance_search_by_vector(
        self, embedding: list[float], k: int = 4, fetch_k: int = 20, lambda_mult: float = 0.5, **kwargs: Any
    ) -> list[Document]:
        _no_options(kwargs, "max_marginal_relevance_search_by_vector")
        hits = self._search(vector=embedding, k=k, where=kwargs.get("filter"), mmr=(lambda_mult, fetch_k))
        return [_document(hit.memory) for hit in hits]

    async def amax_marginal_relevance_search_by_vector(
        self, embedding: list[float], k: int = 4, fetch_k: int = 20, lambda_mult: float = 0.5, **kwargs: Any
    ) -> list[Document]:
        return await asyncio.to_thread(
            self.max_marginal_relevance_search_by_vector, embedding, k, fetch_k, lambda_mult, **kwargs
        )

    def _select_relevance_score_fn(self) -> Callable[[float], float]:
        return _cosine_to_relevance

    def _search(
        self,
        *,
        k: int,
        query: str | None = None,
        vector: Any = None,
        where: Any = None,
        mmr: tuple[float, int] | None = None,
    ) -> SearchResults:
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise ValueError(f"k must be a non-negative integer, got {k!r}")
        options: dict[str, Any] = {}
        if mmr is not None:
            lambda_mult, fetch_k = mmr
            options = {"mmr_lambda": lambda_mult, "fetch_k": max(fetch_k, k)}
        return self.memory_store.search(
            query, vector=vector, namespace=self._scope.resolve(), kind=list(self.kinds), where=_filter(where), limit=k,
            fusion="vector", rank=False, track_access=False, **options,  # a vector-store read never writes
        )

    # -- construction -------------------------------------------------------------------------

    @classmethod
    def from_texts(
        cls,
        texts: list[str],
        embedding: Embeddings | None = None,
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> OpenKoiVectorStore:
        """A vector store (``path=``, ``store=``, ``namespace=``, ... as for the constructor) holding ``texts``."""
        vectorstore = cls(embedding, **kwargs)
        vectorstore.add_texts(texts, metadatas, ids=ids)
        return vectorstore

    @classmethod
    async def afrom_texts(
        cls,
        texts: list[str],
        embedding: Embeddings | None = None,
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> OpenKoiVectorStore:
        return await asyncio.to_thread(cls.from_texts, texts, embedding, metadatas, ids=ids, **kwargs)


def _document(memory: Any) -> Document:
    return Document(id=memory.id, page_content=memory.text, metadata=memory.metadata)


def _scored(hits: SearchResults) -> list[tuple[Document, float]]:
    return [(_document(hit.memory), float(hit.parts.similarity)) for hit in hits]


def _cosine_to_relevance(cosine: float) -> float:
    """langchain-core's relevance for a cosine similarity: 1 identical, 0 unrelated (or opposite)."""
    return min(1.0, max(0.0, cosine))


def _filter(where: Any) -> Mapping[str, Any] | Filter | None:
    if where is None or isinstance(where, Mapping):
        return where or None
    if callable(where):
        raise TypeError(
            "filter must be a dict such as {'source': 'a.pdf'} or {'page': {'$gte': 2}}, not a function: "
            "the filter runs inside SQLite, before the top-k"
        )
    return where


def _no_options(kwargs: Mapping[str, Any], method: str, allowed: frozenset[str] = _SEARCH_OPTIONS) -> None:
    unknown = sorted(set(kwargs) - allowed)
    if unknown:
        raise TypeError(f"{method}() got unexpected option(s) {', '.join(unknown)}; it takes {', '.join(sorted(allowed))}")

"""``OpenKoiRetriever``: the core's hybrid, feedback-ranked search as a LangChain retriever."""

from __future__ import annotations

import asyncio
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig
from pydantic import ConfigDict, field_validator

from shared_core import MemoryStore
from shared_core.clock import to_iso
from shared_core.memories import DEFAULT_NAMESPACE
from shared_core.search import Hit

from ._core import core_store
from ._run import RunNamespace
from .langgraph_store import searchable

__all__ = ["OpenKoiRetriever"]


class OpenKoiRetriever(BaseRetriever):
    """Hybrid search (BM25 + vectors, fused, then Koshi's feedback and recency rank).

    ``store``: a :class:`MemoryStore` (or an openkoi adapter built on one). ``k``, ``filter``
    (the core's filter language over metadata; ``@kind``, ``@tags``, ... reach built-in
    fields), ``namespace`` and ``kind`` are set here and can be overridden per call:
    ``retriever.invoke("query", k=2, filter={"project": "atlas"})``. ``namespace`` is read as
    every other class reads it: a string as given, a tuple as one LangGraph namespace
    (``("memories", "alice")`` is ``"memories.alice."``), a template (``("memories",
    "{user_id}")``) filled from the run's config and context on each call; a *list* searches
    several namespaces, each read that way. ``kind=None`` searches
    every kind (facts, learnings, documents, messages, LangGraph store items...) except
    store items put with ``index=False``. Each document's metadata is the
    memory's metadata plus an ``"openkoi"`` entry with the score, its parts (bm25, keyword,
    similarity, vector, relevance, feedback, recency...), kind, namespace, tags, category,
    source and creation time.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    store: Any
    namespace: Any = DEFAULT_NAMESPACE
    k: int = 4
    kind: str | list[str] | None = None
    filter: dict[str, Any] | None = None
    fusion: str | None = None
    min_score: float | None = None

    @field_validator("store", mode="before")
    @classmethod
    def _core(cls, value: Any) -> MemoryStore:
        return core_store(value)

    @field_validator("k")
    @classmethod
    def _positive(cls, value: int) -> int:
        return _check_k(value)

    @field_validator("namespace")
    @classmethod
    def _namespace(cls, value: Any) -> Any:
        _scopes(value)  # a bad namespace fails here, not at the first query
        return value

    def invoke(self, input: str, config: RunnableConfig | None = None, **kwargs: Any) -> list[Document]:
        """Search for ``input``; a namespace template is filled from ``config`` (and the runtime in it)."""
        return super().invoke(input, config, **self._for_run(config, kwargs))

    async def ainvoke(self, input: str, config: RunnableConfig | None = None, **kwargs: Any) -> list[Document]:
        return await super().ainvoke(input, config, **self._for_run(config, kwargs))

    def _for_run(self, config: RunnableConfig | None, kwargs: dict[str, Any]) -> dict[str, Any]:
        """The call's options with its namespace (given per call, or the retriever's) filled for this run."""
        given = kwargs.get("namespace")
        return {**kwargs, "namespace": _resolve(self.namespace if given is None else given, config)}

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        k: int | None = None,
        filter: dict[str, Any] | None = None,  # noqa: A002 - LangChain's name for it
        namespace: Any = None,
        kind: str | list[str] | None = None,
    ) -> list[Document]:
        kind = self.kind if kind is None else kind
        where = self.filter if filter is None else filter
        hits = self.store.search(
            query,
            namespace=_resolve(self.namespace if namespace is None else namespace, None),
            kind=kind,
            where=searchable(where) if kind is None else where,
            limit=self.k if k is None else _check_k(k),
            fusion=self.fusion,
            min_score=self.min_score,
        )
        return [hit_to_document(hit) for hit in hits]

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None,
        filter: dict[str, Any] | None = None,  # noqa: A002
        namespace: Any = None,
        kind: str | list[str] | None = None,
    ) -> list[Document]:
        return await asyncio.to_thread(
            self._get_relevant_documents, query, run_manager=run_manager.get_sync(), k=k, filter=filter,
            namespace=namespace, kind=kind,
        )


def hit_to_document(hit: Hit) -> Document:
    """A search hit as a ``Document`` whose metadata carries the score and its parts."""
    memory = hit.memory
    details = {
        "score": hit.score,
        "score_parts": hit.parts.to_dict(),
        "kind": memory.kind,
        "namespace": memory.namespace,
        "tags": list(memory.tags),
        "category": memory.category,
        "source": memory.source,
        "created_at": to_iso(memory.created_at),
    }
    return Document(id=memory.id, page_content=memory.text, metadata={**memory.metadata, "openkoi": details})


def _scopes(namespace: Any) -> list[RunNamespace]:
    """One namespace (a string, a tuple, a template), or a list of them."""
    if isinstance(namespace, list):
        if not namespace:
            raise ValueError("namespace=[] searches nothing; give a namespace, or a list of them")
        return [RunNamespace(ns) for ns in namespace]
    return [RunNamespace(namespace)]


def _resolve(namespace: Any, config: RunnableConfig | None) -> str | list[str]:
    """The core namespace(s) for this call, templates filled from ``config`` (default: the current run's)."""
    resolved = [scope.resolve(config) for scope in _scopes(namespace)]
    return resolved if isinstance(namespace, list) else resolved[0]


def _check_k(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"k must be a positive integer, got {value!r}")
    return value

"""One call for a LlamaIndex ``StorageContext`` whose stores all live in one openkoi file."""

from __future__ import annotations

import os
from typing import Any

from llama_index.core import StorageContext

from shared_core import DEFAULT_NAMESPACE, MemoryStore
from shared_core.namespaces import Namespace

from .kvstore import OpenKoiDocumentStore, OpenKoiIndexStore, OpenKoiKVStore
from .vector_store import OpenKoiVectorStore

__all__ = ["openkoi_storage_context"]


def openkoi_storage_context(
    store: MemoryStore | None = None,
    *,
    path: str | os.PathLike[str] | None = None,
    embed_dim: int | None = None,
    namespace: Namespace = DEFAULT_NAMESPACE,
    **vector_store_kwargs: Any,
) -> StorageContext:
    """``StorageContext.from_defaults`` with our vector store, document store and index store.

    All three share one connection to the file (``store``, or ``path`` opened once; close
    it with ``storage_context.vector_store.close()``). Nothing needs ``persist()``.
    """
    vector_store = OpenKoiVectorStore(store, path=path, embed_dim=embed_dim, namespace=namespace,
                                      **vector_store_kwargs)
    kv = OpenKoiKVStore(vector_store.client, namespace=vector_store.namespace)
    return StorageContext.from_defaults(
        vector_store=vector_store,
        docstore=OpenKoiDocumentStore(kv),
        index_store=OpenKoiIndexStore(kv),
    )

"""LlamaIndex's key-value storage in the openkoi file: KV store, document store, index store.

``OpenKoiKVStore`` puts LlamaIndex's collections into the core's namespaced key-value
table, so ``KVDocumentStore`` and ``KVIndexStore`` (and an ``IngestionPipeline``'s
dedup, which lives in the document store) keep their state in the same database as the
vectors. Nothing needs ``persist()``: every write is committed when it returns.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from llama_index.core.storage.docstore.keyval_docstore import KVDocumentStore
from llama_index.core.storage.index_store.keyval_index_store import KVIndexStore
from llama_index.core.storage.kvstore.types import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_COLLECTION,
    BaseKVStore,
)

from shared_core import DEFAULT_NAMESPACE, MemoryStore
from shared_core.namespaces import Namespace

from ._handle import StoreHandle, namespace_of

__all__ = ["OpenKoiKVStore", "OpenKoiDocumentStore", "OpenKoiIndexStore"]


class OpenKoiKVStore(BaseKVStore):
    """A LlamaIndex key-value store on an openkoi-memory file.

    Give an open :class:`~shared_core.MemoryStore` (to share it with the vector store)
    or a ``path``. Values are JSON dicts; each read returns a fresh copy. ``namespace``: a
    string, or a tuple read as everywhere else; a template is refused.
    """

    def __init__(self, store: MemoryStore | None = None, *, path: str | os.PathLike[str] | None = None,
                 namespace: Namespace = DEFAULT_NAMESPACE, **open_kwargs: Any) -> None:
        self.namespace = namespace_of(namespace, "OpenKoiKVStore")
        self._handle = StoreHandle(store, path, **open_kwargs)

    @classmethod
    def from_path(cls, path: str | os.PathLike[str], *, namespace: Namespace = DEFAULT_NAMESPACE) -> OpenKoiKVStore:
        return cls(path=path, namespace=namespace)

    @property
    def client(self) -> MemoryStore:
        return self._handle.store

    def close(self) -> None:
        """Close the file if this store opened it."""
        self._handle.close()

    def put(self, key: str, val: dict, collection: str = DEFAULT_COLLECTION) -> None:
        self.client.kv.put(key, _check(key, val), collection=collection, namespace=self.namespace)

    def put_all(self, kv_pairs: list[tuple[str, dict]], collection: str = DEFAULT_COLLECTION,
                batch_size: int = DEFAULT_BATCH_SIZE) -> None:
        """Write all pairs in one transaction (any ``batch_size`` is accepted)."""
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        pairs = [(key, _check(key, val)) for key, val in kv_pairs]
        self.client.kv.put_many(pairs, collection=collection, namespace=self.namespace)

    def get(self, key: str, collection: str = DEFAULT_COLLECTION) -> dict | None:
        return self.client.kv.get(key, collection=collection, namespace=self.namespace)

    def get_all(self, collection: str = DEFAULT_COLLECTION) -> dict[str, dict]:
        return self.client.kv.items(collection=collection, namespace=self.namespace)

    def delete(self, key: str, collection: str = DEFAULT_COLLECTION) -> bool:
        return self.client.kv.delete(key, collection=collection, namespace=self.namespace)

    async def aput(self, key: str, val: dict, collection: str = DEFAULT_COLLECTION) -> None:
        await asyncio.to_thread(self.put, key, val, collection)

    async def aput_all(self, kv_pairs: list[tuple[str, dict]], collection: str = DEFAULT_COLLECTION,
                       batch_size: int = DEFAULT_BATCH_SIZE) -> None:
        await asyncio.to_thread(self.put_all, kv_pairs, collection, batch_size)

    async def aget(self, key: str, collection: str = DEFAULT_COLLECTION) -> dict | None:
        return await asyncio.to_thread(self.get, key, collection)

    async def aget_all(self, collection: str = DEFAULT_COLLECTION) -> dict[str, dict]:
        return await asyncio.to_thread(self.get_all, collection)

    async def adelete(self, key: str, collection: str = DEFAULT_COLLECTION) -> bool:
        return await asyncio.to_thread(self.delete, key, collection)


def _check(key: str, val: Any) -> dict:
    if not isinstance(val, dict):
        raise TypeError(f"values of a LlamaIndex key-value store are dicts; {key!r} got {type(val).__name__}")
    return val


class OpenKoiDocumentStore(KVDocumentStore):
    """LlamaIndex's ``KVDocumentStore`` on an :class:`OpenKoiKVStore`."""

    def __init__(self, kvstore: OpenKoiKVStore, namespace: str | None = None,
                 batch_size: int = DEFAULT_BATCH_SIZE, **kwargs: Any) -> None:
        super().__init__(kvstore, namespace=namespace, batch_size=batch_size, **kwargs)

    @classmethod
    def from_store(cls, store: MemoryStore, *, namespace: Namespace = DEFAULT_NAMESPACE) -> OpenKoiDocumentStore:
        return cls(OpenKoiKVStore(store, namespace=namespace))

    @classmethod
    def from_path(cls, path: str | os.PathLike[str], *, namespace: Namespace = DEFAULT_NAMESPACE) -> OpenKoiDocumentStore:
        return cls(OpenKoiKVStore(path=path, namespace=namespace))


class OpenKoiIndexStore(KVIndexStore):
    """LlamaIndex's ``KVIndexStore`` on an :class:`OpenKoiKVStore`."""

    def __init__(self, kvstore: OpenKoiKVStore, namespace: str | None = None,
                 collection_suffix: str | None = None) -> None:
        super().__init__(kvstore, namespace=namespace, collection_suffix=collection_suffix)

    @classmethod
    def from_store(cls, store: MemoryStore, *, namespace: Namespace = DEFAULT_NAMESPACE) -> OpenKoiIndexStore:
        return cls(OpenKoiKVStore(store, namespace=namespace))

    @classmethod
    def from_path(cls, path: str | os.PathLike[str], *, namespace: Namespace = DEFAULT_NAMESPACE) -> OpenKoiIndexStore:
        return cls(OpenKoiKVStore(path=path, namespace=namespace))

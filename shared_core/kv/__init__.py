"""A namespaced key-value table of JSON values, in the same file as the memories.

Frameworks keep state beside their vectors (LlamaIndex's document store, index store and
ingestion dedup hashes); this keeps it in the one database, isolated by the same
namespaces as memories (so ``erase_namespace`` removes it too) and grouped in
collections. Values are anything JSON can hold; every read returns a fresh copy.

>>> from shared_core import MemoryStore
>>> with MemoryStore.open(":memory:") as store:
...     store.kv.put("doc-1", {"hash": "ab12"}, collection="docstore/metadata")
...     store.kv.get("doc-1", collection="docstore/metadata")
{'hash': 'ab12'}
"""

from .service import DEFAULT_COLLECTION, KeyValueStore

__all__ = ["KeyValueStore", "DEFAULT_COLLECTION"]

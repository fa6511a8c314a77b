"""LlamaIndex adapters for openkoi-memory (install the ``llama-index`` extra).

>>> from llama_index_openkoi import OpenKoiVectorStore
>>> vector_store = OpenKoiVectorStore(path=":memory:", embed_dim=8)
>>> vector_store.stores_text
True
"""

from .chat_store import OpenKoiChatStore, OpenKoiDBChatStore
from .embeddings import LlamaIndexEmbedder, OpenKoiEmbedding
from .filters import to_openkoi_filter
from .kvstore import OpenKoiDocumentStore, OpenKoiIndexStore, OpenKoiKVStore
from .memory_block import OpenKoiMemoryBlock
from .readers import OpenKoiReader
from .retriever import OpenKoiRetriever
from .storage import openkoi_storage_context
from .vector_store import OpenKoiVectorStore

__all__ = [
    "OpenKoiVectorStore",
    "OpenKoiKVStore",
    "OpenKoiDocumentStore",
    "OpenKoiIndexStore",
    "OpenKoiRetriever",
    "OpenKoiChatStore",
    "OpenKoiDBChatStore",
    "OpenKoiMemoryBlock",
    "OpenKoiReader",
    "OpenKoiEmbedding",
    "LlamaIndexEmbedder",
    "openkoi_storage_context",
    "to_openkoi_filter",
]

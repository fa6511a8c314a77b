"""LangChain and LangGraph adapters for openkoi-memory (install the ``langchain`` extra).

They translate types and delegate to :mod:`shared_core`; no SQL and no ranking live here. Every
class reads a namespace the same way (:mod:`shared_core.namespaces`): a string as given, a tuple
as one LangGraph namespace, a template such as ``("memories", "{user_id}")`` filled per run.

* :class:`OpenKoiVectorStore`: a ``VectorStore`` (pure vector similarity, MMR, metadata filters).
* :class:`OpenKoiRetriever`: the core's hybrid, feedback-ranked search as a retriever.
* :class:`OpenKoiStore`: LangGraph's ``BaseStore`` (``create_agent(..., store=...)``).
* :class:`OpenKoiSaver` / :class:`OpenKoiAsyncSaver`: LangGraph's SQLite checkpointer in the same file.
* :class:`OpenKoiChatMessageHistory`: a ``BaseChatMessageHistory`` on ``store.conversations``.
* :class:`OpenKoiMemoryMiddleware`: ``create_agent`` middleware: recall, write-then-compact, learning.
* :func:`create_memory_tools`: memory tools (memory_save and memory_search by default, the rest by name).
* :class:`OpenKoiDocumentLoader`: a ``BaseLoader`` over the core's document loaders.
* :class:`OpenKoiMemory`: the classic chain memory (needs the ``classic`` extra, langchain-classic;
  imported on first use).
* :class:`LangChainEmbedder`: any LangChain ``Embeddings`` as the store's embedder.
"""

from typing import Any

from .chat_history import OpenKoiChatMessageHistory
from .checkpoint import OpenKoiAsyncSaver, OpenKoiSaver
from .document_loaders import OpenKoiDocumentLoader
from .embeddings import LangChainEmbedder
from .langgraph_store import OpenKoiStore
from .middleware import OpenKoiMemoryMiddleware
from .retrievers import OpenKoiRetriever
from .tools import create_memory_tools
from .vectorstores import OpenKoiVectorStore

__all__ = [
    "LangChainEmbedder",
    "OpenKoiAsyncSaver",
    "OpenKoiChatMessageHistory",
    "OpenKoiDocumentLoader",
    "OpenKoiMemory",
    "OpenKoiMemoryMiddleware",
    "OpenKoiRetriever",
    "OpenKoiSaver",
    "OpenKoiStore",
    "OpenKoiVectorStore",
    "create_memory_tools",
]


def __getattr__(name: str) -> Any:
    # OpenKoiMemory needs langchain-classic: importing it lazily keeps the rest usable without it,
    # and the ImportError (naming the ``classic`` extra) comes when it is asked for
    if name == "OpenKoiMemory":
        from .memory import OpenKoiMemory

        return OpenKoiMemory
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

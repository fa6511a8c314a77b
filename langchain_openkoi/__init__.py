"""LangChain and LangGraph adapters for openkoi-memory (install the ``langchain`` extra).

They translate types and delegate to :mod:`shared_core`; no SQL and no ranking live here.

* :class:`OpenKoiVectorStore`: a ``VectorStore`` (pure vector similarity, MMR, metadata filters).
* :class:`OpenKoiRetriever`: the core's hybrid, feedback-ranked search as a retriever.
* :class:`OpenKoiStore`: LangGraph's ``BaseStore`` (``create_agent(..., store=...)``).
* :class:`OpenKoiSaver` / :class:`OpenKoiAsyncSaver`: LangGraph's SQLite checkpointer in the same file.
* :func:`create_memory_tools`: memory_store/query/reinforce/demote/update/recall/search/save tools.
* :class:`LangChainEmbedder`: any LangChain ``Embeddings`` as the store's embedder.
"""

from .checkpoint import OpenKoiAsyncSaver, OpenKoiSaver
from .embeddings import LangChainEmbedder
from .langgraph_store import OpenKoiStore
from .retrievers import OpenKoiRetriever
from .tools import create_memory_tools
from .vectorstores import OpenKoiVectorStore

__all__ = [
    "LangChainEmbedder",
    "OpenKoiAsyncSaver",
    "OpenKoiRetriever",
    "OpenKoiSaver",
    "OpenKoiStore",
    "OpenKoiVectorStore",
    "create_memory_tools",
]

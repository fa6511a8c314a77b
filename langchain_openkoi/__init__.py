"""LangChain and LangGraph adapters for openkoi-memory (install the ``langchain`` extra)."""

from .embeddings import LangChainEmbedder
from .langgraph_store import OpenKoiStore
from .retrievers import OpenKoiRetriever
from .vectorstores import OpenKoiVectorStore

__all__ = ["LangChainEmbedder", "OpenKoiRetriever", "OpenKoiStore", "OpenKoiVectorStore"]

"""LangChain and LangGraph adapters for openkoi-memory (install the ``langchain`` extra)."""

from .embeddings import LangChainEmbedder
from .retrievers import OpenKoiRetriever
from .vectorstores import OpenKoiVectorStore

__all__ = ["LangChainEmbedder", "OpenKoiRetriever", "OpenKoiVectorStore"]

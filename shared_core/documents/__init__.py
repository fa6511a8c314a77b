"""The knowledge base: document loaders, chunking, and ingest into the searchable index (seed 003).

Framework-free: the LangChain and LlamaIndex adapters reuse these loaders and the
:class:`KnowledgeBase` (``store.documents``).
"""

from .chunking import Chunk, Chunker
from .errors import REASONS, DocumentError, LimitExceeded
from .knowledge_base import KnowledgeBase, KnowledgeHit
from .loaders import FORMATS, SUPPORTED_EXTENSIONS, Format, format_for, load_document
from .records import LoadedDocument, Section
from .report import IngestFailure, IngestReport
from .repository import Document, DocumentChunk
from .safety import Budget, Limits

__all__ = [
    "KnowledgeBase",
    "KnowledgeHit",
    "Document",
    "DocumentChunk",
    "IngestReport",
    "IngestFailure",
    "LoadedDocument",
    "Section",
    "load_document",
    "format_for",
    "Format",
    "FORMATS",
    "SUPPORTED_EXTENSIONS",
    "Limits",
    "Budget",
    "Chunk",
    "Chunker",
    "DocumentError",
    "LimitExceeded",
    "REASONS",
]

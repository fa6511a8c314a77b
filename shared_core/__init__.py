"""openkoi-memory's framework-free core: one SQLite file of long-term memory for LLM agents.

>>> from shared_core import MemoryStore
>>> with MemoryStore.open(":memory:") as store:
...     mid = store.add("The production server runs on Fly.io in Frankfurt", tags=["infra"])
...     store.search("where does production run?")[0].id == mid
True

What a user imports lives here (the list is pinned by ``tests/core/test_public_surface.py``);
each domain's records come from its package (``from shared_core.learnings import Learning``).
"""

from .clock import Clock, ManualClock, SystemClock
from .config import Config
from .context import ContextManager, ContextPolicy
from .documents import DocumentError
from .embed import Embedder, EmbeddingError, HashingEmbedder, SentenceTransformerEmbedder
from .erasure import EraseReport
from .errors import (
    BusyError,
    ConfigError,
    DriverError,
    EmbedderMismatchError,
    FilterError,
    InputError,
    NotFoundError,
    OpenKoiError,
    SchemaError,
    StorageError,
    StoreClosedError,
    TooLargeError,
)
from .index.filters import And, Condition, Not, Or
from .memories import DEFAULT_NAMESPACE, AddResult, Memory, NewMemory
from .search import Hit, ScoreParts, SearchResults
from .store import MemoryStore, StoreStats
from .tools import MemoryTools, ToolSpec

__version__ = "0.1.0"

__all__ = [
    # the store and what it returns
    "MemoryStore",
    "StoreStats",
    "Memory",
    "NewMemory",
    "AddResult",
    "Hit",
    "ScoreParts",
    "SearchResults",
    "EraseReport",
    "DEFAULT_NAMESPACE",
    # filters for search, list and delete
    "Condition",
    "And",
    "Or",
    "Not",
    # what a store is opened with
    "Config",
    "Clock",
    "SystemClock",
    "ManualClock",
    "Embedder",
    "HashingEmbedder",
    "SentenceTransformerEmbedder",
    # an agent's context window and tools
    "ContextManager",
    "ContextPolicy",
    "MemoryTools",
    "ToolSpec",
    # errors
    "OpenKoiError",
    "ConfigError",
    "DriverError",
    "SchemaError",
    "EmbedderMismatchError",
    "EmbeddingError",
    "NotFoundError",
    "FilterError",
    "InputError",
    "TooLargeError",
    "StorageError",
    "BusyError",
    "StoreClosedError",
    "DocumentError",
    "__version__",
]

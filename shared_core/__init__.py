"""openkoi-memory's framework-free core: one SQLite file of long-term memory for LLM agents.

>>> from shared_core import MemoryStore
>>> with MemoryStore.open(":memory:") as store:
...     mid = store.add("The production server runs on Fly.io in Frankfurt", tags=["infra"])
...     store.search("where does production run?")[0].id == mid
True
"""

from .clock import Clock, ManualClock, SystemClock
from .config import Config
from .conversations import (
    Conversations,
    MemorySummary,
    Message,
    MessageHit,
    MessageResults,
    NewMessage,
    Session,
    WorkingMemory,
    WorkingSummary,
)
from .embed import Embedder, EmbedderProfile, EmbeddingError, HashingEmbedder, SentenceTransformerEmbedder
from .errors import (
    ConfigError,
    DriverError,
    EmbedderMismatchError,
    FilterError,
    NotFoundError,
    OpenKoiError,
    SchemaError,
    StorageError,
    StoreClosedError,
)
from .index.filters import And, Condition, Not, Or
from .lifecycle.forgetting import ForgettingEngine, ForgettingReport
from .memories import DEFAULT_NAMESPACE, AddResult, Memory, NewMemory
from .search import Hit, ScoreParts, SearchResults
from .store import MemoryStore, StoreStats

__version__ = "0.1.0"

__all__ = [
    "MemoryStore",
    "Memory",
    "NewMemory",
    "AddResult",
    "Hit",
    "ScoreParts",
    "SearchResults",
    "StoreStats",
    "Config",
    "Clock",
    "SystemClock",
    "ManualClock",
    "Embedder",
    "EmbedderProfile",
    "HashingEmbedder",
    "SentenceTransformerEmbedder",
    "Condition",
    "And",
    "Or",
    "Not",
    "DEFAULT_NAMESPACE",
    "OpenKoiError",
    "ConfigError",
    "DriverError",
    "SchemaError",
    "EmbedderMismatchError",
    "EmbeddingError",
    "NotFoundError",
    "FilterError",
    "StorageError",
    "StoreClosedError",
    "Conversations",
    "Session",
    "Message",
    "NewMessage",
    "MessageHit",
    "MessageResults",
    "WorkingMemory",
    "WorkingSummary",
    "MemorySummary",
    "ForgettingEngine",
    "ForgettingReport",
    "__version__",
]

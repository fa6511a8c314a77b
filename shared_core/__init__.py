"""openkoi-memory's framework-free core: one SQLite file of long-term memory for LLM agents.

>>> from shared_core import MemoryStore
>>> with MemoryStore.open(":memory:") as store:
...     mid = store.add("The production server runs on Fly.io in Frankfurt", tags=["infra"])
...     store.search("where does production run?")[0].id == mid
True
"""

from .categories import Categorizer
from .clock import Clock, ManualClock, SystemClock
from .config import Config
from .context import (
    ContextAddendum,
    ContextManager,
    ContextPolicy,
    ContextResult,
    ContextStatus,
    MemoryManager,
    StoredFact,
)
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
from .documents import DocumentError, IngestReport, KnowledgeBase, KnowledgeHit, load_document
from .embed import (
    Embedder,
    EmbedderProfile,
    EmbeddingError,
    HashingEmbedder,
    SentenceTransformerEmbedder,
)
from .episodes import Episode
from .erasure import EraseReport
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
from .insights import ExtractionResult, Insight, InsightData, InsightWeights, RankedInsight
from .learnings.records import DecayReport, Learning, LearningType
from .lifecycle.cron import CronSchedule
from .lifecycle.forgetting import ForgettingEngine, ForgettingReport
from .lifecycle.links import Link
from .lifecycle.pruning import PruneReport, SizeMeasure
from .memories import DEFAULT_NAMESPACE, AddResult, Memory, NewMemory
from .procedures import Procedure
from .recall import Recall
from .search import Hit, ScoreParts, SearchResults
from .store import MemoryStore, StoreStats
from .tasks import TaskOutcome, TaskRecord
from .tools import MemoryTools, ToolSpec
from .workspace import Workspace

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
    "EraseReport",
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
    "Insight",
    "InsightData",
    "InsightWeights",
    "RankedInsight",
    "ExtractionResult",
    "PruneReport",
    "SizeMeasure",
    "Link",
    "CronSchedule",
    "LearningType",
    "Learning",
    "DecayReport",
    "TaskRecord",
    "TaskOutcome",
    "Recall",
    "Procedure",
    "Episode",
    "KnowledgeBase",
    "KnowledgeHit",
    "IngestReport",
    "DocumentError",
    "load_document",
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
    "MemoryManager",
    "ContextManager",
    "ContextPolicy",
    "ContextStatus",
    "ContextResult",
    "ContextAddendum",
    "StoredFact",
    "Categorizer",
    "Workspace",
    "MemoryTools",
    "ToolSpec",
    "__version__",
]

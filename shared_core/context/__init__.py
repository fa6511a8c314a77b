"""Conversation memory beyond the transcript: context manager, fact extraction, prompt addendum.

Reached as ``store.memory_manager`` (:class:`MemoryManager`); see docs/context.md.

>>> from shared_core import MemoryStore
>>> with MemoryStore.open(":memory:") as store:
...     cm = store.memory_manager.context_manager("fleet", window_tokens=400)
...     chat = [{"role": "user", "content": "My cat's name is Whiskerino."}]
...     chat += [{"role": "user", "content": f"Let us talk about topic {i}, which is long enough."} for i in range(30)]
...     result = cm.manage(chat, session_id="chat-1")
...     result.action, result.messages[0]["content"].splitlines()[0], len(result.messages)
('compact', '[Compacted history]', 5)
"""

from .addendum import AddendumItem, ContextAddendum
from .fact_rules import extract_facts
from .facts import ConversationFacts, SalientFact, StoredFact
from .manager import ContextManager, ContextResult, ContextStatus, FlushResult
from .memory_manager import MemoryManager, SavedMemory, SessionEnd
from .messages import COMPACTED_HEADER, count_message_tokens, summary_message
from .policy import PRESETS, ContextPolicy
from .records import ContextEvent, ExtractedFact, Extraction

__all__ = [
    "MemoryManager",
    "ConversationFacts",
    "ContextManager",
    "ContextPolicy",
    "PRESETS",
    "ContextStatus",
    "ContextResult",
    "FlushResult",
    "ContextEvent",
    "ContextAddendum",
    "AddendumItem",
    "ExtractedFact",
    "Extraction",
    "StoredFact",
    "SavedMemory",
    "SessionEnd",
    "SalientFact",
    "extract_facts",
    "count_message_tokens",
    "summary_message",
    "COMPACTED_HEADER",
]

"""Conversation memory: sessions, messages, transcripts, embedding documents, working memory.

Reached as ``store.conversations`` (:class:`Conversations`); see docs/conversations.md.
"""

from .embedding_doc import build_embedding_document, truncate_at_boundary
from .records import (
    CHUNK_PREFIX,
    MemorySummary,
    Message,
    MessageHit,
    MessageResults,
    NewMessage,
    ReconcileReport,
    Session,
    WorkingSummary,
)
from .service import Conversations
from .working import WorkingMemory

__all__ = [
    "Conversations",
    "Session",
    "Message",
    "NewMessage",
    "MessageHit",
    "MessageResults",
    "ReconcileReport",
    "MemorySummary",
    "WorkingMemory",
    "WorkingSummary",
    "build_embedding_document",
    "truncate_at_boundary",
    "CHUNK_PREFIX",
]

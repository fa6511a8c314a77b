"""Conversation memory: sessions, messages, transcripts, embedding documents, working memory.

Reached as ``store.conversations`` (:class:`Conversations`); see docs/conversations.md.
"""

from .api import CHUNK_PREFIX, Conversations, MessageHit, MessageResults, ReconcileReport
from .embedding_doc import build_embedding_document, truncate_at_boundary
from .records import MemorySummary, Message, NewMessage, Session, WorkingSummary
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

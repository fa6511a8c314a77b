"""``store.conversations``: sessions and their messages, transcripts, search and working memory.

>>> from shared_core import MemoryStore
>>> with MemoryStore.open(":memory:") as store:
...     convs = store.conversations
...     _ = convs.append("chat-1", "user", "My cat is called Miso.")
...     _ = convs.append("chat-1", "assistant", "Nice to meet Miso!")
...     [m.role for m in convs.messages("chat-1")], convs.count("chat-1")
(['user', 'assistant'], 2)

Every message is one ``raw_messages`` row (seed 003), one line of the session's JSONL
transcript (seed 000), and, when it has text, one index chunk of kind ``message``
(id ``msg:<message_id>``, ``owner_id`` = the message id) whose text is the content (for
FTS) and whose vector embeds seed 003's embedding document (see ``embedding_doc``).

The methods come in parts, one module each: :mod:`.sessions`, :mod:`.messages`, :mod:`.search`
and :mod:`.summaries` (working memory); :mod:`.base` holds what they share.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from ..errors import StorageError
from ..memories import Memory
from .incoming import message_document
from .messages import MessageMethods
from .records import Message, ReconcileReport, session_id_arg
from .repository import MessageRepository
from .search import SearchMethods
from .sessions import SessionMethods
from .summaries import WorkingMemoryMethods

__all__ = ["Conversations"]

logger = logging.getLogger("openkoi.conversations")


class Conversations(SessionMethods, MessageMethods, SearchMethods, WorkingMemoryMethods):
    """Sessions, messages (of any role, with tool calls, extra kwargs and content blocks) and transcripts.

    Reached as ``store.conversations``. Sessions are created on first append; session ids
    and message ids are unique across the store, and a session belongs to one namespace.
    """

    def check_transcripts(self) -> None:
        """When the memory opens: :meth:`reconcile` the transcripts (a failure is logged, never raised)."""
        if self._transcripts.root is not None:
            try:
                self.reconcile()
            except (OSError, StorageError) as exc:  # never refuse to open the store over a transcript file
                logger.warning("could not reconcile session transcripts on open: %s", exc)

    # -- transcripts -------------------------------------------------------------------------------

    @property
    def transcript_dir(self) -> Path | None:
        """Where transcripts go, or None when they are off (``conversations.transcripts``)."""
        return self._transcripts.root

    def transcript_path(self, session_id: str) -> Path | None:
        """The JSONL file of a session (whether or not it exists yet), or None when transcripts are off."""
        return self._transcripts.path(session_id)

    def transcript(self, session_id: str) -> list[dict[str, Any]]:
        """The session's transcript file, parsed (one dict per line); [] when there is none."""
        if self._transcripts.root is None:
            return []
        return self._transcripts.read(session_id_arg(session_id))

    def reconcile(self, *, full: bool = False) -> ReconcileReport:
        """Make every transcript agree with the database; run on open, safe to run any time.

        Checks each session's file size against the recorded one (``full=True``: compares
        the bytes), repairs what differs, and removes transcripts of sessions that no longer
        exist and temporary files of interrupted rewrites.
        """
        return self._transcripts.reconcile(full=full)

    # -- hooks for the core ------------------------------------------------------------------------

    def embedding_text(self, memory: Memory) -> str:
        """The embedding document of a message chunk (registered for ``store.reembed``)."""
        message = self._repo.message(memory.owner_id) if memory.owner_id else None
        if message is None:
            return memory.text
        return self.embedding_document(message, text=memory.text)

    def embedding_document(self, message: Message, *, text: str | None = None, tier: str | None = None) -> str:
        """Seed 003's embedding document of a stored message (``tier`` overrides its current tier)."""
        return message_document(self.kernel.config.conversations, message, text=text, tier=tier)

    def erase(self, namespace: str) -> None:
        """``erase_namespace``: rows of every table of this layer, and the transcript files (after commit)."""
        ids = self._repo.session_ids(namespace)
        self._repo.erase_namespace(namespace)
        self._transcripts.remove_after_commit(ids)

    @property
    def repository(self) -> MessageRepository:
        """The SQL of this layer (for lifecycle code such as the forgetting engine)."""
        return self._repo

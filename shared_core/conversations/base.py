"""What every part of :class:`~.service.Conversations` shares: the repository, the transcripts, and
the writes that keep a message's row, index chunk and transcript line together.

The methods here run inside the caller's transaction, under the memory's lock.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..memories import DEFAULT_NAMESPACE, check_namespace
from .incoming import Pending
from .records import CHUNK_PREFIX, Message, Session, session_id_arg
from .repository import MessageRepository
from .transcript_sync import TranscriptSync

if TYPE_CHECKING:
    from ..kernel import Kernel

__all__ = ["ConversationsBase"]


class ConversationsBase:
    """The state and the shared writes of ``store.conversations``."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self._repo = MessageRepository(kernel.backend)
        self._transcripts = TranscriptSync(kernel, self._repo)

    def _session_in(self, session_id: str, namespace: str | None) -> Session | None:
        """The session, if it exists and (when ``namespace`` is given) belongs to that namespace."""
        session = self._repo.session(session_id_arg(session_id))
        if session is None or (namespace is not None and session.namespace != namespace):
            return None
        return session

    def _check_namespace(self, session: Session, namespace: str | None) -> None:
        if namespace is not None and session.namespace != namespace:
            raise ValueError(
                f"session {session.id!r} belongs to namespace {session.namespace!r}, not {namespace!r}; "
                "session ids are unique across namespaces, so use another id"
            )

    # -- writing -----------------------------------------------------------------------------------

    def _write(self, session_id: str, namespace: str | None, pending: list[Pending]) -> list[Message]:
        """Ensure the session, repair its transcript, insert the rows, append the lines."""
        now = self.kernel.clock.now()
        session = self._repo.session(session_id)
        if session is None:
            ns = check_namespace(namespace) if namespace is not None else DEFAULT_NAMESPACE
            session = Session(id=session_id, namespace=ns, created_at=now, updated_at=now)
            self._transcripts.insert_session(session)
            session = self._repo.session(session_id)
            assert session is not None
        else:
            self._check_namespace(session, namespace)
            self._transcripts.repair(session_id)
        fresh, existing = self._split_existing(session, pending)
        if not fresh:
            return existing
        seq = session.last_seq
        for p in fresh:
            seq += 1
            p.message.seq = seq
        self._insert_rows(session, fresh)
        self._transcripts.append(session_id, [p.message for p in fresh], seq, now)
        order = {p.message.message_id: i for i, p in enumerate(pending)}
        return sorted([*existing, *(p.message for p in fresh)], key=lambda m: order[m.message_id])

    def _split_existing(self, session: Session, pending: list[Pending]) -> tuple[list[Pending], list[Message]]:
        """Messages already stored under the same id: identical ones are returned, others are errors."""
        found = self._repo.messages_by_ids([p.message.message_id for p in pending])
        fresh: list[Pending] = []
        existing: list[Message] = []
        for p in pending:
            old = found.get(p.message.message_id)
            if old is None:
                fresh.append(p)
                continue
            if old.session_id != session.id or old.role != p.message.role or old.raw_content != p.message.raw_content:
                raise ValueError(
                    f"message id {old.message_id!r} is already stored (session {old.session_id!r}, role {old.role!r}) with "
                    "different content; message ids are unique across the store"
                )
            existing.append(old)
        return fresh, existing

    def _check_new_ids(self, pending: list[Pending]) -> None:
        found = self._repo.messages_by_ids([p.message.message_id for p in pending])
        if found:
            raise ValueError(f"message id {next(iter(found))!r} is already stored; message ids are unique")

    def _insert_rows(self, session: Session, pending: list[Pending]) -> None:
        memories = self.kernel.memories
        for p in pending:
            p.message.session_id = session.id
            p.message.namespace = session.namespace
            p.message.id = self._repo.insert_message(p.message)
            if p.chunk is not None:
                # the vector does not depend on these, so the chunk could be embedded before the session was known
                p.chunk.namespace = session.namespace
                p.chunk.session_id = session.id
                memories.write(p.chunk, dedup=False)

    def _reload(self, messages: Sequence[Message]) -> list[Message]:
        found = self._repo.messages_by_ids([m.message_id for m in messages])
        return [found[m.message_id] for m in messages]

    def _track(self, messages: Sequence[Message]) -> None:
        """accessCount += 1, lastAccessAt = now: through the live chunk (a trigger mirrors it), else directly."""
        if not messages:
            return
        memories = self.kernel.memories
        chunks = memories.get_many([CHUNK_PREFIX + m.message_id for m in messages])
        live = {c.owner_id for c in chunks}
        memories.track_access([c.rowid for c in chunks])
        rest = [m.message_id for m in messages if m.message_id not in live]
        self._repo.track_access(rest, self.kernel.clock.now())

    # -- removing ----------------------------------------------------------------------------------

    def _clear_rows(self, session_id: str) -> list[Message]:
        self._transcripts.repair(session_id)
        messages = self._repo.session_messages(session_id)
        self._remove(messages)
        self._repo.update_session(session_id, updated_at=self.kernel.clock.now())
        self._transcripts.rewrite(session_id)
        return messages

    def _delete_some(self, session_id: str, messages: Sequence[Message]) -> None:
        """Take several messages of one session out, then rewrite its transcript."""
        if not messages:
            return
        self._transcripts.repair(session_id)
        self._remove(messages)
        self._repo.update_session(session_id, updated_at=self.kernel.clock.now())
        self._transcripts.rewrite(session_id)

    def _delete_one(self, message: Message) -> None:
        self._transcripts.repair(message.session_id)
        was_last = self._repo.max_seq(message.session_id) == message.seq
        self._remove([message])
        self._repo.update_session(message.session_id, updated_at=self.kernel.clock.now())
        self._transcripts.drop_line(message, was_last=was_last)

    def _remove(self, messages: Sequence[Message]) -> None:
        """Take out rows, live or archived index chunks, summary links and working summaries."""
        if not messages:
            return
        memories = self.kernel.memories
        chunk_ids = [CHUNK_PREFIX + m.message_id for m in messages]
        live = memories.get_many(chunk_ids)
        if live:
            memories.delete_rows([c.rowid for c in live])
        self.kernel.archive.delete(chunk_ids)
        now = self.kernel.clock.now()
        for m in messages:
            if m.summary_ref_id is not None:
                if self._repo.drop_summary_source(m.summary_ref_id, m.id, now):
                    self._delete_summary_chunk(m.summary_ref_id)
        first = min(m.seq for m in messages)
        for session_id in {m.session_id for m in messages}:
            self._repo.drop_working_from(session_id, first)
        self._repo.delete_messages([m.id for m in messages])

    def _delete_summary_chunk(self, summary_id: str) -> None:
        memories = self.kernel.memories
        chunk = memories.get_row(summary_id)
        if chunk is not None:
            memories.delete_rows([chunk.rowid])
        self.kernel.archive.delete([summary_id])

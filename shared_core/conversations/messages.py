"""The message methods of ``store.conversations``: append, read, take out of the active window,
remove and mark messages. Each keeps the rows, the index chunks and the transcript together."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from ..errors import NotFoundError
from ..validation import unit_or_none
from .base import ConversationsBase
from .incoming import prepare
from .records import (
    CHUNK_PREFIX,
    Message,
    NewMessage,
    active_arg,
    as_new_message,
    count_arg,
    message_id_arg,
    session_id_arg,
)

__all__ = ["MessageMethods"]


class MessageMethods(ConversationsBase):
    """Messages of any role, with tool calls, extra kwargs and content blocks, in session order."""

    # -- appending ---------------------------------------------------------------------------------

    def append(
        self,
        session_id: str,
        role: str,
        content: str | list[Any] = "",
        *,
        namespace: str | None = None,
        message_id: str | None = None,
        name: str | None = None,
        tool_calls: Sequence[Any] | None = None,
        tool_call_id: str | None = None,
        additional_kwargs: Mapping[str, Any] | None = None,
        metadata: Mapping[str, Any] | None = None,
        attachments: Sequence[Mapping[str, Any]] | None = None,
        platform: str | None = None,
        channel: str | None = None,
        person: str | None = None,
        bot_id: str | None = None,
        sent_at: datetime | str | None = None,
        importance: float | None = None,
        pinned: bool = False,
        active: bool = True,
    ) -> Message:
        """Append one message to a session (created on first use); return it as stored.

        ``namespace``: the session's (``None``: the existing session's, or ``"default"`` for a
        new one). Appending a ``message_id`` that is already stored with the same role and
        content returns the stored message (re-ingesting a platform message is harmless).
        ``active=False`` stores it outside the session's active window (see :meth:`deactivate_oldest`).
        """
        item = NewMessage(
            role=role, content=content, message_id=message_id, name=name, tool_calls=tool_calls,
            tool_call_id=tool_call_id, additional_kwargs=additional_kwargs, metadata=metadata,
            attachments=attachments, platform=platform, channel=channel, person=person, bot_id=bot_id,
            sent_at=sent_at, importance=importance, pinned=pinned, active=active,
        )
        return self.append_many(session_id, [item], namespace=namespace)[0]

    def append_many(
        self,
        session_id: str,
        messages: Iterable[NewMessage | Mapping[str, Any]],
        *,
        namespace: str | None = None,
    ) -> list[Message]:
        """Append several messages in order, in one transaction (one embedding batch, one file write)."""
        session_id = session_id_arg(session_id)
        items = [as_new_message(m) for m in messages]
        if not items:
            return []
        pending = prepare(self.kernel, items)
        with self.kernel.session() as db:
            with db.transaction():
                stored = self._write(session_id, namespace, pending)
            return self._reload(stored)

    def insert(self, session_id: str, index: int, role: str, content: str | list[Any] = "", *,
               namespace: str | None = None, **fields: Any) -> Message:
        """Put a message at list position ``index`` (later messages move down; LlamaIndex's ``add_message(idx=)``)."""
        if isinstance(index, bool) or not isinstance(index, int):
            raise TypeError(f"index must be a whole number, got {index!r}")
        item = as_new_message({"role": role, "content": content, **fields})
        session_id = session_id_arg(session_id)
        (pending,) = prepare(self.kernel, [item])
        with self.kernel.session() as db:
            with db.transaction():
                session = self._repo.session(session_id)
                count = self._repo.count(session_id) if session else 0
                position = index if index >= 0 else count + index
                if session is None or position >= count:
                    stored = self._write(session_id, namespace, [pending])
                    return self._reload(stored)[0]
                self._check_namespace(session, namespace)
                target = self._repo.message_at(session_id, max(0, position))
                assert target is not None
                self._check_new_ids([pending])
                self._repo.shift_seqs(session_id, target.seq)
                pending.message.seq = target.seq
                self._insert_rows(session, [pending])
                self._repo.drop_working_from(session_id, target.seq)
                now = self.kernel.clock.now()
                last = max(session.last_seq + 1, self._repo.max_seq(session_id))
                self._repo.update_session(session_id, last_seq=last, updated_at=now)
                self._transcripts.rewrite(session_id)
            return self._reload([pending.message])[0]

    def replace(self, session_id: str, messages: Iterable[NewMessage | Mapping[str, Any]], *,
                namespace: str | None = None) -> list[Message]:
        """Replace a session's messages with ``messages`` in one transaction (LlamaIndex's ``set_messages``)."""
        session_id = session_id_arg(session_id)
        items = [as_new_message(m) for m in messages]
        pending = prepare(self.kernel, items)
        with self.kernel.session() as db:
            with db.transaction():
                session = self._repo.session(session_id)
                if session is not None:
                    self._check_namespace(session, namespace)
                    self._clear_rows(session_id)
                stored = self._write(session_id, namespace, pending) if pending else []
            return self._reload(stored)

    # -- reading -----------------------------------------------------------------------------------

    def messages(
        self,
        session_id: str,
        *,
        namespace: str | None = None,
        limit: int | None = None,
        last: int | None = None,
        after_seq: int | None = None,
        offset: int = 0,
        active: bool | None = None,
    ) -> list[Message]:
        """A session's messages in order ([] for an unknown session, or one in another namespace).

        ``last=n``: only the final n; ``limit=n``: only the first n (after ``after_seq``),
        skipping ``offset`` first. ``active``: only the messages in (True) or out of (False)
        the active window. Reading a transcript is not a retrieval: access counts do not change.
        """
        for name, value in (("limit", limit), ("last", last)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise ValueError(f"{name} must be a non-negative whole number, got {value!r}")
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ValueError(f"offset must be a non-negative whole number, got {offset!r}")
        with self.kernel.session():
            session = self._session_in(session_id, namespace)
            if session is None:
                return []
            return self._repo.session_messages(session.id, after_seq=after_seq, limit=limit, last=last,
                                               offset=offset, active=active_arg(active))

    def stored_ids(self, message_ids: Iterable[str]) -> set[str]:
        """Which of these message ids are stored (in any session): what an adapter that appends a
        growing list (a LangGraph thread) checks before embedding, so it appends only what is new."""
        wanted = [message_id_arg(m) for m in ([message_ids] if isinstance(message_ids, str) else message_ids)]
        with self.kernel.session():
            return set(self._repo.messages_by_ids(wanted)) if wanted else set()

    def count(self, session_id: str, *, namespace: str | None = None, active: bool | None = None) -> int:
        """How many messages a session holds (0 for an unknown session); ``active`` as in :meth:`messages`."""
        with self.kernel.session():
            session = self._session_in(session_id, namespace)
            if session is None:
                return 0
            return self._repo.count(session.id, active=active_arg(active))

    def get(self, message_id: str, *, namespace: str | None = None, track_access: bool = True) -> Message:
        """One message by id, or :class:`NotFoundError`. A lookup counts as an access (seed 003)."""
        with self.kernel.session() as db:
            message = self._repo.message(message_id_arg(message_id))
            if message is None or (namespace is not None and message.namespace != namespace):
                where = f" in namespace {namespace!r}" if namespace is not None else ""
                raise NotFoundError(f"no message {message_id!r}{where}")
            if track_access and not db.read_only:
                with db.transaction():
                    self._track([message])
                message = self._repo.message(message.message_id) or message
            return message

    # -- the active window -------------------------------------------------------------------------

    def deactivate_oldest(self, session_id: str, n: int, *, namespace: str | None = None) -> list[Message]:
        """Move the ``n`` oldest active messages out of the session's active window; return them.

        They stay in the history, the transcript and the search index (``messages(...,
        active=False)`` lists them): this is how a chat memory retires its short-term queue
        (LlamaIndex's ``archive_oldest_messages``). It is not the forgetting engine's compression.
        """
        n = count_arg(n)
        with self.kernel.session() as db:
            with db.transaction():
                session = self._session_in(session_id, namespace)
                if session is None or n == 0:
                    return []
                oldest = self._repo.session_messages(session.id, active=True, limit=n)
                self._repo.set_active([m.id for m in oldest], False)
                if oldest:
                    self._repo.update_session(session.id, updated_at=self.kernel.clock.now())
            for message in oldest:
                message.active = False
            return oldest

    def deactivate(self, session_id: str, message_ids: Iterable[str], *, namespace: str | None = None) -> list[Message]:
        """Move these messages of the session out of its active window; return the ones moved.

        Like :meth:`deactivate_oldest`, for a caller that chose the messages itself (a context
        manager that keeps the leading system prompt and compacts what follows it). Ids of
        other sessions, unknown ids and messages already inactive are passed over.
        """
        wanted = [message_id_arg(m) for m in ([message_ids] if isinstance(message_ids, str) else message_ids)]
        with self.kernel.session() as db:
            with db.transaction():
                session = self._session_in(session_id, namespace)
                if session is None or not wanted:
                    return []
                found = self._repo.messages_by_ids(wanted)
                chosen = sorted((m for m in found.values() if m.session_id == session.id and m.active),
                                key=lambda m: m.seq)
                self._repo.set_active([m.id for m in chosen], False)
                if chosen:
                    self._repo.update_session(session.id, updated_at=self.kernel.clock.now())
            for message in chosen:
                message.active = False
            return chosen

    # -- removing ----------------------------------------------------------------------------------

    def delete(self, message_id: str, *, namespace: str | None = None) -> Message:
        """Remove one message (row, index chunk, transcript line); return what was removed."""
        with self.kernel.session() as db:
            with db.transaction():
                message = self._repo.message(message_id_arg(message_id))
                if message is None or (namespace is not None and message.namespace != namespace):
                    raise NotFoundError(f"no message {message_id!r}")
                self._delete_one(message)
            return message

    def delete_at(self, session_id: str, index: int, *, namespace: str | None = None,
                  active: bool | None = None) -> Message | None:
        """Remove the message at list position ``index`` (negative counts from the end); None if there is none.

        ``active``: the position in the list ``messages(session_id, active=...)`` returns.
        """
        if isinstance(index, bool) or not isinstance(index, int):
            raise TypeError(f"index must be a whole number, got {index!r}")
        with self.kernel.session() as db:
            with db.transaction():
                session = self._session_in(session_id, namespace)
                if session is None:
                    return None
                message = self._repo.message_at(session.id, index, active=active_arg(active))
                if message is None:
                    return None
                self._delete_one(message)
            return message

    def delete_oldest(self, session_id: str, n: int, *, namespace: str | None = None,
                      active: bool | None = None) -> list[Message]:
        """Remove the ``n`` oldest messages (of those with the given ``active`` state) in one transaction; return them."""
        n = count_arg(n)
        with self.kernel.session() as db:
            with db.transaction():
                session = self._session_in(session_id, namespace)
                if session is None or n == 0:
                    return []
                oldest = self._repo.session_messages(session.id, active=active_arg(active), limit=n)
                self._delete_some(session.id, oldest)
            return oldest

    def delete_last(self, session_id: str, *, namespace: str | None = None) -> Message | None:
        """Remove the session's last message; return it (None for an empty session)."""
        return self.delete_at(session_id, -1, namespace=namespace)

    def clear(self, session_id: str, *, namespace: str | None = None, active: bool | None = None) -> list[Message]:
        """Remove every message of a session (the session itself stays); return them.

        ``active``: only the messages in (True) or out of (False) the active window.
        """
        with self.kernel.session() as db:
            with db.transaction():
                session = self._session_in(session_id, namespace)
                if session is None:
                    return []
                if active is None:
                    return self._clear_rows(session.id)
                chosen = self._repo.session_messages(session.id, active=active_arg(active))
                self._delete_some(session.id, chosen)
                return chosen

    # -- marking -----------------------------------------------------------------------------------

    def pin(self, message_id: str, pinned: bool = True) -> Message:
        """Mark a message important to the user (seed 003's ``isPinned``: +0.3 to its value score)."""
        return self._mark(message_id, pinned=bool(pinned))

    def set_importance(self, message_id: str, importance: float | None) -> Message:
        """Set the provided importance (0-1, seed 003's ``importanceScore``); None clears it."""
        return self._mark(message_id, importance=unit_or_none(importance, "importance"))

    def _mark(self, message_id: str, **values: Any) -> Message:
        """Set ``pinned``/``importance`` on the row and on its index chunk."""
        with self.kernel.session() as db:
            with db.transaction():
                message = self._repo.message(message_id_arg(message_id))
                if message is None:
                    raise NotFoundError(f"no message {message_id!r}")
                self._repo.set_flags(message.message_id, **values)
                chunk = self.kernel.memories.get_row(CHUNK_PREFIX + message.message_id)
                if chunk is not None:
                    self.kernel.memories.update(chunk, refresh_hit=False, **values)
            return self._repo.message(message.message_id)  # type: ignore[return-value]

"""LlamaIndex chat stores on ``store.conversations``: a key is a session of the store's namespace.

``OpenKoiChatStore`` is a ``BaseChatStore`` (for ``ChatMemoryBuffer``,
``ChatSummaryMemoryBuffer`` and anything else that takes one); ``OpenKoiDBChatStore`` is an
``AsyncDBChatStore``, the interface ``llama_index.core.memory.Memory`` keeps its history in.
Both keep every message in the openkoi file: a ``raw_messages`` row, a line of the session's
JSONL transcript and, for text, an index chunk that ``store.search`` finds (kind ``message``).

**Keys are scoped by namespace** (``shared_core.chat_keys``): the key ``K`` of a store whose
namespace is ``N`` is the session ``"N/K"`` (``store.session_id(K)``), so two users' stores
with the same key (``ChatMemoryBuffer``'s default ``"chat_history"``) never meet. A session
named ``K`` that belongs to ``N`` (written through ``store.conversations`` or another door) is
read and continued under the key ``K`` too.

**``delete_message(key, idx)``.** LlamaIndex's own stores disagree on what ``idx`` is:
``SimpleChatStore`` pops the list position ``idx`` (Python's ``list.pop``), while
``SQLAlchemyChatStore`` (the SQLite store behind ``Memory``) deletes the row whose table id is
``idx``. Both stores here take it as a **list position**: ``delete_message(key, idx)`` deletes
``get_messages(key)[idx]``; negative positions count from the end; a position past either
end deletes nothing and returns ``None``. A table id is never visible through either
interface (a ``ChatMessage`` carries no id), so a caller could not know which row it names;
a position is what they hold after ``get_messages``. For ``OpenKoiDBChatStore``,
``get_messages(key)`` lists the active messages (its default ``status``), so the position is
among those.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
from collections.abc import Sequence
from typing import Any

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.storage.chat_store.base import BaseChatStore
from llama_index.core.storage.chat_store.base_db import AsyncDBChatStore, MessageStatus

from shared_core import DEFAULT_NAMESPACE, MemoryStore, chat_keys
from shared_core.conversations import Conversations
from shared_core.namespaces import Namespace

from ._handle import StoreHandle, namespace_of
from .chat import to_chat_message, to_new_message

__all__ = ["OpenKoiChatStore", "OpenKoiDBChatStore"]


class _Conversations:
    """What both chat stores share: the file, the namespace, and the conversation API."""

    namespace: str
    _handle: StoreHandle

    @property
    def client(self) -> MemoryStore:
        """The underlying :class:`~shared_core.MemoryStore`."""
        return self._handle.store

    @property
    def _convs(self) -> Conversations:
        return self._handle.store.conversations

    def close(self) -> None:
        """Close the file if this store opened it (a store passed in stays open)."""
        self._handle.close()

    def session_id(self, key: str) -> str:
        """The session of ``store.conversations`` that holds ``key``'s messages (see the module docs)."""
        return chat_keys.session_for_key(self._convs, key, self.namespace)

    def _keys(self) -> list[str]:
        return chat_keys.keys(self._convs, self.namespace)

    def _on(self, method: str, key: str, *args: Any, **kwargs: Any) -> Any:
        """``store.conversations.<method>`` on ``key``'s session, in the store's namespace."""
        return getattr(self._convs, method)(self.session_id(key), *args, namespace=self.namespace, **kwargs)


class OpenKoiChatStore(_Conversations, BaseChatStore):
    """A LlamaIndex ``BaseChatStore`` whose keys are openkoi sessions.

    Give an open :class:`~shared_core.MemoryStore` (to share it) or a ``path`` (``None``:
    the default data file). ``namespace`` (a string, or a tuple read as everywhere else; a
    template is refused) holds the sessions, and scopes the keys: another namespace's store
    never sees this one's keys. ``get_keys()`` lists the keys whose sessions hold messages.
    """

    namespace: str = DEFAULT_NAMESPACE
    _handle: StoreHandle = PrivateAttr()

    def __init__(self, store: MemoryStore | None = None, *, path: str | os.PathLike[str] | None = None,
                 namespace: Namespace = DEFAULT_NAMESPACE, **open_kwargs: Any) -> None:
        super().__init__(namespace=namespace_of(namespace, "OpenKoiChatStore"))
        self._handle = StoreHandle(store, path, **open_kwargs)

    @classmethod
    def from_path(cls, path: str | os.PathLike[str], *, namespace: Namespace = DEFAULT_NAMESPACE,
                  **open_kwargs: Any) -> OpenKoiChatStore:
        """A chat store on the file at ``path`` (created if missing), closed by :meth:`close`."""
        return cls(path=path, namespace=namespace, **open_kwargs)

    @classmethod
    def class_name(cls) -> str:
        return "OpenKoiChatStore"

    def set_messages(self, key: str, messages: Sequence[ChatMessage]) -> None:
        """Replace the key's messages, in one transaction."""
        self._on("replace", key, [to_new_message(m) for m in messages])

    def get_messages(self, key: str) -> list[ChatMessage]:
        return [to_chat_message(m) for m in self._on("messages", key)]

    def add_message(self, key: str, message: ChatMessage, idx: int | None = None) -> None:
        """Append a message, or insert it at list position ``idx`` (as ``SimpleChatStore`` does)."""
        item = to_new_message(message)
        if idx is None:
            self._on("append_many", key, [item])
        else:
            fields = {f.name: getattr(item, f.name) for f in dataclasses.fields(item) if f.name not in ("role", "content")}
            self._on("insert", key, idx, item.role, item.content, **fields)

    def delete_messages(self, key: str) -> list[ChatMessage] | None:
        """Delete the key's messages and return them (``None`` when it had none)."""
        removed = self._on("clear", key)
        return [to_chat_message(m) for m in removed] if removed else None

    def delete_message(self, key: str, idx: int) -> ChatMessage | None:
        """Delete ``get_messages(key)[idx]`` and return it; ``None`` when there is no such position."""
        removed = self._on("delete_at", key, idx)
        return to_chat_message(removed) if removed is not None else None

    def delete_last_message(self, key: str) -> ChatMessage | None:
        removed = self._on("delete_last", key)
        return to_chat_message(removed) if removed is not None else None

    def get_keys(self) -> list[str]:
        return self._keys()

    async def async_add_message(self, key: str, message: ChatMessage, idx: int | None = None) -> None:
        await asyncio.to_thread(self.add_message, key, message, idx)


class OpenKoiDBChatStore(_Conversations, AsyncDBChatStore):
    """A LlamaIndex ``AsyncDBChatStore`` (what ``Memory`` keeps its history in) on an openkoi file.

    ``MessageStatus.ACTIVE`` messages are the ones in the session's active window,
    ``ARCHIVED`` ones were moved out of it by ``archive_oldest_messages`` (``Memory`` does
    that when its queue overflows); archived messages stay in the history, the transcript
    and the search index. ``store``/``path``/``namespace`` as for :class:`OpenKoiChatStore`.
    """

    namespace: str = DEFAULT_NAMESPACE
    _handle: StoreHandle = PrivateAttr()

    def __init__(self, store: MemoryStore | None = None, *, path: str | os.PathLike[str] | None = None,
                 namespace: Namespace = DEFAULT_NAMESPACE, **open_kwargs: Any) -> None:
        super().__init__(namespace=namespace_of(namespace, "OpenKoiDBChatStore"))
        self._handle = StoreHandle(store, path, **open_kwargs)

    @classmethod
    def from_path(cls, path: str | os.PathLike[str], *, namespace: Namespace = DEFAULT_NAMESPACE,
                  **open_kwargs: Any) -> OpenKoiDBChatStore:
        """A chat store on the file at ``path`` (created if missing), closed by :meth:`close`."""
        return cls(path=path, namespace=namespace, **open_kwargs)

    @classmethod
    def class_name(cls) -> str:
        return "OpenKoiDBChatStore"

    async def get_messages(self, key: str, status: MessageStatus | None = MessageStatus.ACTIVE,
                           limit: int | None = None, offset: int | None = None) -> list[ChatMessage]:
        """The key's messages of ``status`` (``None``: all) in order, ``offset``/``limit`` applied after it."""
        messages = await asyncio.to_thread(self._on, "messages", key, active=_active(status),
                                           limit=limit, offset=offset or 0)
        return [to_chat_message(m) for m in messages]

    async def count_messages(self, key: str, status: MessageStatus | None = MessageStatus.ACTIVE) -> int:
        return await asyncio.to_thread(self._on, "count", key, active=_active(status))

    async def add_message(self, key: str, message: ChatMessage, status: MessageStatus = MessageStatus.ACTIVE) -> None:
        await self.add_messages(key, [message], status)

    async def add_messages(self, key: str, messages: list[ChatMessage],
                           status: MessageStatus = MessageStatus.ACTIVE) -> None:
        """Append messages in order, in one transaction."""
        items = [to_new_message(m, active=_status_required(status)) for m in messages]
        await asyncio.to_thread(self._on, "append_many", key, items)

    async def set_messages(self, key: str, messages: list[ChatMessage],
                           status: MessageStatus = MessageStatus.ACTIVE) -> None:
        """Replace every message of the key (whatever its status), in one transaction."""
        items = [to_new_message(m, active=_status_required(status)) for m in messages]
        await asyncio.to_thread(self._on, "replace", key, items)

    async def delete_message(self, key: str, idx: int) -> ChatMessage | None:
        """Delete ``(await get_messages(key))[idx]`` (a position among the active messages); see the module docs."""
        removed = await asyncio.to_thread(self._on, "delete_at", key, idx, active=True)
        return to_chat_message(removed) if removed is not None else None

    async def delete_messages(self, key: str, status: MessageStatus | None = None) -> None:
        await asyncio.to_thread(self._on, "clear", key, active=_active(status))

    async def delete_oldest_messages(self, key: str, n: int) -> list[ChatMessage]:
        """Delete the ``n`` oldest active messages and return them."""
        removed = await asyncio.to_thread(self._on, "delete_oldest", key, n, active=True)
        return [to_chat_message(m) for m in removed]

    async def archive_oldest_messages(self, key: str, n: int) -> list[ChatMessage]:
        """Move the ``n`` oldest active messages out of the active window and return them."""
        moved = await asyncio.to_thread(self._on, "deactivate_oldest", key, n)
        return [to_chat_message(m) for m in moved]

    async def get_keys(self) -> list[str]:
        return await asyncio.to_thread(self._keys)


def _active(status: MessageStatus | str | None) -> bool | None:
    """``MessageStatus`` as the core's ``active`` flag (``None``: messages of every status)."""
    if status is None:
        return None
    try:
        return MessageStatus(status) == MessageStatus.ACTIVE
    except ValueError:
        raise ValueError(f"unknown message status {status!r}; use MessageStatus.ACTIVE, ARCHIVED or None") from None


def _status_required(status: MessageStatus | str) -> bool:
    if status is None:
        raise ValueError("a message is stored as MessageStatus.ACTIVE or ARCHIVED, not None")
    return bool(_active(status))

"""``OpenKoiChatMessageHistory``: LangChain's chat message history, kept by ``store.conversations``.

Every message is a row of the session, a line of its JSONL transcript and (with text) an index
chunk that ``store.search(..., kind="message")`` finds; it reads back as the same LangChain
message (see :mod:`langchain_openkoi.messages`).

**A window, with write-then-compact** (``context=``): with a preset name (``"openkoi"``,
``"openmotoko"``, ``"fleet"``) or a :class:`~shared_core.ContextPolicy`, :attr:`messages`
returns what fits the policy's window instead of the whole history. The core's context manager
decides: when the conversation passes its threshold, the facts of the older messages are stored
(database, and the workspace's MEMORY.md), then the summary, and only then are those messages
moved out of the session's active window (``conversations.deactivate``). The history then reads
as ``[leading system messages..., SystemMessage("[Compacted history]\\n..."), recent messages...]``;
the next compaction folds that summary into the new one. Nothing is deleted: the moved messages
stay in the session (``store.conversations.messages(session_id)``), its transcript and the search
index; :meth:`clear` deletes them all.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from typing import Any

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import BaseMessage

from shared_core import ContextManager, ContextPolicy, MemoryStore
from shared_core.chat_keys import session_for_key
from shared_core.context.messages import is_compacted_summary
from shared_core.memories import DEFAULT_NAMESPACE
from shared_core.namespaces import NamespaceTemplateError

from ._core import open_store
from ._run import RunNamespace
from .messages import summary_message, to_langchain, to_new_message

__all__ = ["OpenKoiChatMessageHistory"]


class OpenKoiChatMessageHistory(BaseChatMessageHistory):
    """The messages of one session, in an openkoi-memory file.

    ``session_id``: the conversation's key, per namespace (:mod:`shared_core.chat_keys`, as for
    LlamaIndex's chat stores): two users' histories under one key are two sessions, kept as
    ``"<namespace>/<session_id>"`` (:attr:`stored_session_id`); a session named ``session_id``
    that belongs to the namespace (written by another door, or an older version) is read and
    continued as it is. ``store``: an open :class:`~shared_core.MemoryStore` (or an openkoi
    adapter built on one), or ``path``: a file to open (closed by :meth:`close`; ``None`` for
    both: the default data file). ``namespace``: whose conversation (a core namespace, a
    LangGraph tuple, or a template such as ``("chats", "{user_id}")`` filled from the current
    run's config and context, refused outside a run that has the value).
    ``context``: ``None`` (every message), a preset name or a ``ContextPolicy`` (see the module
    docs); ``window_tokens`` sets a preset's window (default ``context.window_tokens``).

    With ``RunnableWithMessageHistory``, give the store, not a path:
    ``get_session_history=lambda sid: OpenKoiChatMessageHistory(sid, store)``.
    """

    def __init__(
        self,
        session_id: str,
        store: Any = None,
        *,
        path: str | os.PathLike[str] | None = None,
        namespace: str | Sequence[str] = DEFAULT_NAMESPACE,
        context: str | ContextPolicy | None = None,
        window_tokens: int | None = None,
    ) -> None:
        if not isinstance(session_id, str) or not session_id.strip():
            raise ValueError(f"session_id must be a non-empty string such as 'chat-42', got {session_id!r}")
        if context is None and window_tokens is not None:
            raise ValueError("window_tokens applies to a context window: pass context='fleet' (or another preset) too")
        self.session_id = session_id
        try:
            self.namespace = RunNamespace(namespace).resolve()
        except NamespaceTemplateError as exc:
            raise NamespaceTemplateError(
                f"{exc}. A chat history is usually made before the run starts (RunnableWithMessageHistory calls its "
                "factory first), so name the user there: history_factory_config=[ConfigurableFieldSpec(id='user_id', "
                "annotation=str), ...] and lambda session_id, user_id: OpenKoiChatMessageHistory(session_id, store, "
                "namespace=('chats', user_id))"
            ) from None
        self.memory_store, self._owned = open_store(store, path, None)
        try:
            self.context_manager: ContextManager | None = None
            if context is not None:
                overrides: dict[str, Any] = {} if window_tokens is None else {"window_tokens": window_tokens}
                if isinstance(context, ContextPolicy) and overrides:
                    raise ValueError("window_tokens applies to presets; build the ContextPolicy with it instead")
                self.context_manager = self.memory_store.memory_manager.context_manager(
                    context, namespace=self.namespace, session_id=self.stored_session_id, **overrides)
        except BaseException:
            self.close()
            raise

    def __repr__(self) -> str:
        window = f", context={self.context_manager.policy.name!r}" if self.context_manager else ""
        return f"OpenKoiChatMessageHistory({self.session_id!r}, namespace={self.namespace!r}{window})"

    @property
    def stored_session_id(self) -> str:
        """The id of the ``store.conversations`` session that holds this history (see :mod:`shared_core.chat_keys`)."""
        return session_for_key(self.memory_store.conversations, self.session_id, self.namespace)

    def close(self) -> None:
        """Close the file if this history opened it (a store passed in stays open)."""
        if self._owned:
            self.memory_store.close()

    def __enter__(self) -> OpenKoiChatMessageHistory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- BaseChatMessageHistory ----------------------------------------------------------------

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """The session's messages in order (within the window when ``context`` is set)."""
        convs = self.memory_store.conversations
        if self.context_manager is None:
            return [to_langchain(m) for m in convs.messages(self.stored_session_id, namespace=self.namespace)]
        return self._window()

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Append messages in order, in one transaction (one embedding batch, one transcript write)."""
        items = [to_new_message(m) for m in messages]
        if items:
            self.memory_store.conversations.append_many(self.stored_session_id, items, namespace=self.namespace)

    def clear(self) -> None:
        """Delete every message of the session (rows, transcript lines, index chunks); the session stays."""
        self.memory_store.conversations.clear(self.stored_session_id, namespace=self.namespace)

    async def aget_messages(self) -> list[BaseMessage]:
        return await asyncio.to_thread(lambda: self.messages)

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        await asyncio.to_thread(self.add_messages, list(messages))

    async def aclear(self) -> None:
        await asyncio.to_thread(self.clear)

    # -- the window ----------------------------------------------------------------------------

    def _window(self) -> list[BaseMessage]:
        """The active messages after the last compaction's summary; compact now if the policy says so."""
        assert self.context_manager is not None
        store = self.memory_store
        convs = store.conversations
        sid = self.stored_session_id
        active = convs.messages(sid, namespace=self.namespace, active=True)
        view: list[BaseMessage] = [to_langchain(m) for m in active]
        offset = 0
        summary = self._last_summary(sid)
        if summary is not None:
            lead = 0
            while lead < len(view) and view[lead].type == "system" and not is_compacted_summary(view[lead]):
                lead += 1
            view.insert(lead, summary_message(summary))
            offset = lead
        result = self.context_manager.manage(view, session_id=sid)
        if result.action != "compact":
            return view
        kept = set(result.kept)
        left_out = [active[i if summary is None or i < offset else i - 1].message_id
                    for i in range(len(view)) if i not in kept and not (summary is not None and i == offset)]
        convs.deactivate(sid, left_out, namespace=self.namespace)  # facts and summary are stored
        out = list(result.messages)
        assert result.summary_position is not None and result.summary_message is not None
        out[result.summary_position] = summary_message(result.summary_message["content"])
        return out

    def _last_summary(self, sid: str) -> str | None:
        """The latest compaction's summary, while messages it covers are out of the window."""
        store = self.memory_store
        if not store.conversations.count(sid, namespace=self.namespace, active=False):
            return None  # never compacted, or cleared since
        events = store.memory_manager.compactions(sid, namespace=self.namespace, limit=1)
        return events[0].summary if events and events[0].summary.strip() else None

    @property
    def client(self) -> MemoryStore:
        """The underlying :class:`~shared_core.MemoryStore`."""
        return self.memory_store

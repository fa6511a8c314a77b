"""``OpenKoiMemoryBlock``: long-term memory for ``llama_index.core.memory.Memory``, kept in the database.

``Memory`` keeps a short-term queue of messages (in its ``sql_store``, e.g.
:class:`OpenKoiDBChatStore`) and, when the queue overflows, hands the oldest messages to its
memory blocks (``aput``); before each model call it asks the blocks what to add to the
prompt (``aget``). This block:

* on put, stores each flushed turn (a user message and the replies after it, as
  ``role: text`` lines) as an episode (``store.episodes``, kind ``episode``) with the
  session id, so it persists in the file, is searchable, and survives restarts;
* on get, searches the namespace's facts and episodes for the latest user message with the
  core's recall gate (``shared_core.relevance.relevant``: hybrid search on the message's
  content words, so a memory that shares only stop words with it is never recalled, kept
  when its keywords matched or its vector is close enough: OpenLoomi's similarity threshold), takes the best that
  fit the block's ``token_budget`` (counted with the core's ``count_tokens``), and adds the
  learnings recall (``store.recall``) in what is left.

Facts come from anything that writes kind ``fact`` into the namespace (``store.add``, the
LangChain tools, your own code). The rule-based fact extraction and context building of
the core's conversation layer will take over put and get when they land; the block keeps
only the translation between ``ChatMessage``s and those calls.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, MessageRole, TextBlock
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.memory.memory import BaseMemoryBlock

from shared_core import DEFAULT_NAMESPACE, MemoryStore
from shared_core.relevance import mark_recalled, relevant
from shared_core.tokens import count_tokens

from ._handle import StoreHandle, namespace_of

__all__ = ["OpenKoiMemoryBlock"]

SOURCE = "llama_index.memory"


class OpenKoiMemoryBlock(BaseMemoryBlock[str]):
    """A ``Memory`` block that remembers flushed turns in an openkoi file and recalls what is relevant.

    Give an open :class:`~shared_core.MemoryStore` (to share it with the chat store) or a
    ``path``. ``namespace``: whose memory (a user, an agent; a string, or a tuple read as
    everywhere else; a template is refused); every session of the namespace shares it. ``kinds``: what is recalled (facts and episodes by default). ``token_budget``:
    the most tokens the block adds to the prompt; ``max_items``: the most memories it lists.
    ``include_learnings``: add the learnings recall (OpenKoi's) in the budget left over.
    """

    name: str = Field(default="OpenKoiMemory", description="The name of the memory block.")
    namespace: str = Field(default=DEFAULT_NAMESPACE, description="Whose memory: the openkoi namespace.")
    kinds: list[str] = Field(default_factory=lambda: ["fact", "episode"], description="Memory kinds recalled.")
    token_budget: int = Field(default=1000, gt=0, description="Most tokens the block adds to the prompt.")
    max_items: int = Field(default=10, gt=0, description="Most memories listed.")
    include_learnings: bool = Field(default=True, description="Add the learnings recall in the budget left.")
    channel: str = Field(default="llama_index", description="The channel flushed turns are recorded under.")
    min_similarity: float | None = Field(
        default=None, description="Vector similarity a memory needs when no keyword matched (None: the embedder's own)."
    )
    min_keyword: float = Field(
        default=0.05, ge=0.0, le=1.0,
        description="A keyword match counts when its BM25 is at least this share of the best match's.",
    )

    _handle: StoreHandle = PrivateAttr()

    def __init__(self, store: MemoryStore | None = None, *, path: str | os.PathLike[str] | None = None,
                 **data: Any) -> None:
        if "namespace" in data:
            data["namespace"] = namespace_of(data["namespace"], "OpenKoiMemoryBlock")
        super().__init__(**data)
        self._handle = StoreHandle(store, path)

    @property
    def client(self) -> MemoryStore:
        """The underlying :class:`~shared_core.MemoryStore`."""
        return self._handle.store

    def close(self) -> None:
        """Close the file if this block opened it."""
        self._handle.close()

    # -- put ---------------------------------------------------------------------------------

    async def _aput(self, messages: list[ChatMessage]) -> None:
        """Store each turn of the flushed messages as an episode (with its session id)."""
        await asyncio.to_thread(self.remember, messages)

    def remember(self, messages: Sequence[ChatMessage]) -> list[str]:
        """Store ``messages`` as episodes, one per turn; return their ids."""
        store = self.client
        ids = []
        for turn in _turns(messages):
            text = "\n".join(f"{_role(m)}: {_text(m)}" for m in turn if _text(m).strip())
            if not text:
                continue
            session = next((m.additional_kwargs.get("session_id") for m in turn
                            if isinstance(m.additional_kwargs.get("session_id"), str)), None)
            episode = store.episodes.add(text, channel=self.channel, session_id=session, namespace=self.namespace,
                                         metadata={"source": SOURCE, "messages": len(turn)})
            ids.append(episode.id)
        return ids

    # -- get ---------------------------------------------------------------------------------

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        """What the memory holds about the latest user message, within ``token_budget`` tokens."""
        query = _query(messages or [])
        if not query:
            return ""
        return await asyncio.to_thread(self.recall, query)

    def recall(self, query: str) -> str:
        """The recalled memories for ``query``, rendered as ``- item`` lines, within the budget."""
        store = self.client
        hits = relevant(store, query, namespace=self.namespace, kind=self.kinds, limit=self.max_items,
                        min_similarity=self.min_similarity, min_keyword=self.min_keyword)
        lines: list[str] = []
        used = 0
        recalled = []
        for hit in hits:
            line = _item(hit.text)
            cost = count_tokens(line + "\n")
            if used + cost > self.token_budget:
                break  # the best that fit, in rank order (OpenKoi's recall does the same)
            lines.append(line)
            recalled.append(hit)
            used += cost
        mark_recalled(store, recalled)  # what was recalled counts as accessed (OpenLoomi's access tracking), not the rest
        remaining = self.token_budget - used
        if self.include_learnings and remaining > 0:
            learned = store.recall(query, token_budget=remaining, namespace=self.namespace)
            if learned:
                lines.append(learned.prompt)
        return "\n".join(lines)

    async def atruncate(self, content: str, tokens_to_truncate: int) -> str | None:
        """Drop the last (least relevant) items until ``tokens_to_truncate`` tokens are saved."""
        items = _split_items(content)
        saved = 0
        while items and saved < tokens_to_truncate:
            saved += count_tokens(items.pop() + "\n")
        while items and not items[-1].startswith("- "):
            items.pop()  # a header whose items are gone
        return "\n".join(items) if items else None


def _turns(messages: Sequence[ChatMessage]) -> list[list[ChatMessage]]:
    """A turn is a user message and the messages after it until the next one."""
    turns: list[list[ChatMessage]] = []
    for message in messages:
        if message.role == MessageRole.USER or not turns:
            turns.append([])
        turns[-1].append(message)
    return turns


def _role(message: ChatMessage) -> str:
    return getattr(message.role, "value", str(message.role))


def _text(message: ChatMessage) -> str:
    return "\n".join(b.text for b in message.blocks if isinstance(b, TextBlock))


def _query(messages: Sequence[ChatMessage]) -> str:
    """The latest user message's text (else the latest message with text)."""
    for role in (MessageRole.USER, None):
        for message in reversed(messages):
            if (role is None or message.role == role) and _text(message).strip():
                return _text(message)
    return ""


def _item(text: str) -> str:
    lines = text.strip().splitlines() or [""]
    return "\n".join([f"- {lines[0]}", *(f"  {line}" for line in lines[1:])])


def _split_items(content: str) -> list[str]:
    """The rendered content as items: each starts at a ``- `` or ``#`` line, with its continuation lines."""
    items: list[str] = []
    for line in content.splitlines():
        if items and not line.startswith(("- ", "#")):
            items[-1] += "\n" + line
        else:
            items.append(line)
    return items

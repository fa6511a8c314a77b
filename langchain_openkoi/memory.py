"""``OpenKoiMemory``: the classic ``BaseMemory`` (langchain-classic), for ``ConversationChain``/``LLMChain``.

LangChain 1.x moved the chain memories to ``langchain-classic``; this class needs it
(``pip install langchain-classic``). New code should use ``create_agent`` with
:class:`~langchain_openkoi.OpenKoiMemoryMiddleware`.

Two memory variables:

* ``history`` (``memory_key``): the session's messages from :class:`OpenKoiChatMessageHistory`
  (``store.conversations``; with ``context=`` only what fits the window, facts stored first),
  as a ``Human: ... / AI: ...`` buffer or, with ``return_messages=True``, as messages;
* ``facts`` (``facts_key``): the facts recalled for the chain's input
  (``memory_manager.recall_facts``: the query's categories first, then a flat search), one
  ``- fact`` line each. With ``facts_key=None`` they open the history instead, so a chain whose
  prompt knows only ``{history}`` (``ConversationChain``'s default) still gets them.

``save_context`` appends the turn to the session and extracts its facts (the core's extraction:
rules, or ``store.text_model``), so what the user tells one session is recalled in the next.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

try:
    from langchain_classic.memory.chat_memory import BaseChatMemory
    from langchain_classic.memory.utils import get_prompt_input_key
except ImportError as exc:  # pragma: no cover - exercised by simulating the missing package
    raise ImportError(
        "OpenKoiMemory is LangChain's classic chain memory and needs the langchain-classic package: "
        "pip install langchain-classic. "
        "For new code, use create_agent with OpenKoiMemoryMiddleware instead."
    ) from exc

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    get_buffer_string,
)
from pydantic import Field

from shared_core import ContextPolicy
from shared_core.memories import DEFAULT_NAMESPACE

from .chat_history import OpenKoiChatMessageHistory

__all__ = ["OpenKoiMemory"]

FACTS_TITLE = "Relevant facts:"


class OpenKoiMemory(BaseChatMemory):
    """Chat history and recalled facts from an openkoi-memory file, as classic chain memory.

    ``OpenKoiMemory(store, session_id="chat-1", namespace="user:bob")``: ``store`` is an open
    :class:`~shared_core.MemoryStore` (or an openkoi adapter on one), or give ``path``.
    ``context``/``window_tokens``: the history's window (see :class:`OpenKoiChatMessageHistory`).
    ``memory_key`` and ``facts_key`` name the variables; ``facts_limit`` caps the facts;
    ``extract_facts=False`` stores turns without reading them for facts. ``input_key``,
    ``output_key``, ``return_messages``, ``human_prefix`` and ``ai_prefix`` work as in
    ``ConversationBufferMemory``.
    """

    memory_key: str = "history"
    facts_key: str | None = "facts"
    facts_limit: int = Field(default=5, ge=1)
    extract_facts: bool = True
    human_prefix: str = "Human"
    ai_prefix: str = "AI"
    session_id: str
    namespace: str = DEFAULT_NAMESPACE

    def __init__(
        self,
        store: Any = None,
        *,
        session_id: str,
        path: str | None = None,
        namespace: str | Sequence[str] = DEFAULT_NAMESPACE,
        context: str | ContextPolicy | None = None,
        window_tokens: int | None = None,
        **fields: Any,
    ) -> None:
        if "chat_memory" in fields:
            raise TypeError("OpenKoiMemory keeps its own chat history; give store=, session_id= and namespace=")
        history = OpenKoiChatMessageHistory(session_id, store, path=path, namespace=namespace, context=context,
                                            window_tokens=window_tokens)
        try:
            super().__init__(chat_memory=history, session_id=session_id, namespace=history.namespace, **fields)
        except BaseException:
            history.close()
            raise
        if self.facts_key is not None and self.facts_key == self.memory_key:
            history.close()
            raise ValueError(f"memory_key and facts_key must differ (both are {self.memory_key!r}); "
                             "set facts_key=None to put the facts into the history variable")

    @property
    def history(self) -> OpenKoiChatMessageHistory:
        return self.chat_memory  # type: ignore[return-value]

    @property
    def memory_variables(self) -> list[str]:
        return [self.memory_key] if self.facts_key is None else [self.memory_key, self.facts_key]

    def load_memory_variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """The history (buffer or messages) and the facts recalled for the input."""
        messages = self.chat_memory.messages
        facts = self._facts(self._query(inputs))
        if self.facts_key is not None:
            return {self.memory_key: self._render(messages), self.facts_key: "\n".join(facts)}
        if not facts:
            return {self.memory_key: self._render(messages)}
        block = "\n".join([FACTS_TITLE, *facts])
        if self.return_messages:
            return {self.memory_key: [SystemMessage(block), *messages]}
        history = self._render(messages)
        return {self.memory_key: f"{block}\n\n{history}" if history else block}

    def save_context(self, inputs: dict[str, Any], outputs: dict[str, str]) -> None:
        """Append the turn to the session, then store the facts it holds."""
        human, answer = self._get_input_output(inputs, outputs)
        turn = [HumanMessage(content=human), AIMessage(content=answer)]
        self.chat_memory.add_messages(turn)
        if self.extract_facts:
            store = self.history.memory_store
            manager = store.memory_manager.context_manager(namespace=self.namespace,
                                                           session_id=self.history.stored_session_id)
            manager.flush(turn)

    async def asave_context(self, inputs: dict[str, Any], outputs: dict[str, str]) -> None:
        await asyncio.to_thread(self.save_context, inputs, outputs)

    def close(self) -> None:
        """Close the file if this memory opened it (``path=``)."""
        self.history.close()

    # -- internals --------------------------------------------------------------------------------

    def _render(self, messages: list[BaseMessage]) -> str | list[BaseMessage]:
        if self.return_messages:
            return messages
        return get_buffer_string(messages, human_prefix=self.human_prefix, ai_prefix=self.ai_prefix)

    def _query(self, inputs: dict[str, Any]) -> str | None:
        if not inputs:
            return None
        key = self.input_key or get_prompt_input_key(inputs, self.memory_variables)
        value = inputs.get(key)
        return value if isinstance(value, str) and value.strip() else None

    def _facts(self, query: str | None) -> list[str]:
        if query is None:
            return []
        store = self.history.memory_store
        found = store.memory_manager.recall_facts(query, namespace=self.namespace, limit=self.facts_limit)
        return [f"- {hit.text}" for hit in found.hits]

"""``OpenKoiMemoryMiddleware``: long-term memory for ``create_agent``, from the core's conversation memory.

``create_agent(model, tools, middleware=[OpenKoiMemoryMiddleware(store, namespace=...)])``.
Each hook is a call into ``store.memory_manager`` / ``store.conversations``:

==================== ==================================================================================
hook                 what happens
==================== ==================================================================================
``before_agent``     the conversation gets its session id: the LangGraph thread id, else ``session_id=``,
                     else a fresh ``run-...`` id (kept in the agent state); its transcript is the
                     namespace's session for that key (``shared_core.chat_keys``: ``"<namespace>/<id>"``)
``before_model``     the messages new since the last call are appended to the session's transcript
                     (``store.conversations``); then ``context_manager(...).manage(messages)``: when the
                     conversation passes its threshold, facts and the summary are stored **first**,
                     then the graph state's messages are rewritten to
                     ``[SystemMessage("[Compacted history]\\n..."), *recent]``
``wrap_model_call``  the system prompt gets ``build_context(..., extra_kinds=("langgraph_item",)).render()``:
                     workspace files (AGENTS.md, SOUL.md, USER.md), the namespace's known facts (its
                     profile, asked or not) and those that match the last user message (facts and
                     ``OpenKoiStore`` items, LangMem's included, alike), learnings and anti-patterns,
                     recent episodes, within ``memory_tokens``
``wrap_tool_call``   a tool that fails (an error ``ToolMessage`` or an exception) is recorded with
                     ``record_error``: ``learnings/errors.md`` and an AntiPattern learning, injected
                     into later prompts
``after_agent``      the rest of the transcript is stored, and the facts of messages not read before
                     are extracted and stored (``flush``; corrections go to learnings/corrections.md)
==================== ==================================================================================

**Compaction rewrites the graph state**, as LangChain's own ``SummarizationMiddleware`` does
(``RemoveMessage(REMOVE_ALL_MESSAGES)`` and the new list): the checkpointed thread stays within
the window instead of growing for ever, and each compaction reads only the messages since the
last one (its summary is folded into the next). What is dropped is not lost: its facts and the
summary were stored before, and every message is in the session's transcript
(``store.conversations.messages(thread_id)``; ``OpenKoiChatMessageHistory(thread_id, store)``
reads it back as LangChain messages). The summary is a ``SystemMessage`` (OpenKoi's form,
marked ``additional_kwargs["lc_source"] == "openkoi.compaction"``) at the head of the
conversation, right after the system prompt; since the messages carry it, the prompt addendum
leaves the conversation's summary out.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Annotated, Any

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain.agents.middleware.types import PrivateStateAttr
from langchain_core.messages import (
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langgraph.graph.message import REMOVE_ALL_MESSAGES
from typing_extensions import NotRequired

from shared_core import ContextManager, ContextPolicy, MemoryStore
from shared_core.chat_keys import session_for_key
from shared_core.context.messages import is_compacted_summary
from shared_core.embed import fnv1a_64
from shared_core.items import ITEM_KIND
from shared_core.memories import DEFAULT_NAMESPACE
from shared_core.namespaces import as_namespace

from ._core import core_store
from ._run import RunNamespace
from .messages import SUMMARY_SOURCE, summary_message, to_new_message

__all__ = ["OpenKoiMemoryMiddleware", "OpenKoiMemoryState"]

Namespace = str | Sequence[str]


class OpenKoiMemoryState(AgentState):
    """The agent state with the conversation's openkoi session id (private to the middleware)."""

    openkoi_session_id: NotRequired[Annotated[str, PrivateStateAttr]]


class OpenKoiMemoryMiddleware(AgentMiddleware):
    """Recall before each model call, write-then-compact, and learn after the run (see the module docs).

    ``store``: an open :class:`~shared_core.MemoryStore` or an openkoi adapter on one (the
    ``OpenKoiStore`` given to ``create_agent(store=...)`` works). ``namespace``: whose memory
    (a core namespace, a LangGraph tuple, a template filled per run from the runtime's context
    and the run's ``configurable``, e.g. ``("memories", "{user_id}")``, or a function of the
    runtime returning one, e.g. ``lambda runtime: ("memories", runtime.context.user_id)``).
    ``context``: the compaction policy (a preset name or a ``ContextPolicy``; default the store's ``context.preset``) and
    ``window_tokens`` its window (default ``context.window_tokens``). ``memory_tokens``: the
    budget of the memory added to the system prompt (default: OpenKoi's recall budget).
    ``session_id``: the conversation id when the agent runs without a checkpointer.
    The switches turn parts off: ``inject`` (the system prompt), ``compact``, ``store_transcript``,
    ``extract_facts`` (after the run) and ``record_tool_errors``.
    """

    state_schema = OpenKoiMemoryState

    def __init__(
        self,
        store: Any,
        *,
        namespace: Namespace | Callable[[Any], Namespace] = DEFAULT_NAMESPACE,
        context: str | ContextPolicy | None = None,
        window_tokens: int | None = None,
        memory_tokens: int | None = None,
        session_id: str | None = None,
        inject: bool = True,
        compact: bool = True,
        store_transcript: bool = True,
        extract_facts: bool = True,
        record_tool_errors: bool = True,
    ) -> None:
        super().__init__()
        self.memory_store: MemoryStore = core_store(store)
        self._scope = None if callable(namespace) else RunNamespace(namespace)
        self.namespace: Namespace | Callable[[Any], Namespace] = (
            namespace if self._scope is None else self._scope.fixed or self._scope.given)
        if isinstance(context, ContextPolicy) and window_tokens is not None:
            raise ValueError("window_tokens applies to presets; build the ContextPolicy with it instead")
        self.context = context
        self.window_tokens = window_tokens
        if memory_tokens is not None and (isinstance(memory_tokens, bool) or not isinstance(memory_tokens, int)
                                          or memory_tokens < 0):
            raise ValueError(f"memory_tokens must be a non-negative whole number, got {memory_tokens!r}")
        self.memory_tokens = memory_tokens
        if session_id is not None and (not isinstance(session_id, str) or not session_id.strip()):
            raise ValueError(f"session_id must be a non-empty string, got {session_id!r}")
        self.session_id = session_id
        self.inject = inject
        self.compact = compact
        self.store_transcript = store_transcript
        self.extract_facts = extract_facts
        self.record_tool_errors = record_tool_errors
        self._managers: dict[str, ContextManager] = {}
        if not isinstance(context, ContextPolicy):  # a bad preset or window fails here, not in the first run
            settings = self.memory_store.config.context
            ContextPolicy.preset(context or settings.preset, settings, **self._overrides())

    def __repr__(self) -> str:
        return f"OpenKoiMemoryMiddleware({self.memory_store!r}, namespace={self.namespace!r})"

    # -- hooks ------------------------------------------------------------------------------------

    def before_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """Give the conversation its session id (once: it stays in the thread's state)."""
        if state.get("openkoi_session_id"):
            return None
        return {"openkoi_session_id": self._new_session_id(runtime)}

    async def abefore_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return self.before_agent(state, runtime)

    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """Store the new messages, then write-then-compact when the conversation passes its threshold."""
        session_id = self._session_id(state, runtime)
        namespace = self._namespace_of(runtime)
        messages = list(state["messages"])
        if self.store_transcript:
            self.remember(messages, session_id=session_id, namespace=namespace)
        if not self.compact:
            return None
        sid = session_for_key(self.memory_store.conversations, session_id, namespace)
        result = self._manager(namespace).manage(messages, session_id=sid)
        if result.action != "compact":
            return None
        assert result.summary_position is not None and result.summary_message is not None
        rebuilt = list(result.messages)
        rebuilt[result.summary_position] = summary_message(result.summary_message["content"])
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *rebuilt]}

    async def abefore_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return await asyncio.to_thread(self.before_model, state, runtime)

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> Any:
        """Call the model with the memory added to the system prompt."""
        if not self.inject:
            return handler(request)
        return handler(request.override(system_message=self._system_message(request)))

    async def awrap_model_call(self, request: ModelRequest,
                               handler: Callable[[ModelRequest], Awaitable[ModelResponse]]) -> Any:
        if not self.inject:
            return await handler(request)
        system = await asyncio.to_thread(self._system_message, request)
        return await handler(request.override(system_message=system))

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        """Run the tool; record a failure as a learning (``record_error``)."""
        if not self.record_tool_errors:
            return handler(request)
        try:
            result = handler(request)
        except Exception as exc:
            self._record_error(request, exc)
            raise
        if isinstance(result, ToolMessage) and result.status == "error":
            self._record_error(request, result.text)
        return result

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        if not self.record_tool_errors:
            return await handler(request)
        try:
            result = await handler(request)
        except Exception as exc:
            await asyncio.to_thread(self._record_error, request, exc)
            raise
        if isinstance(result, ToolMessage) and result.status == "error":
            await asyncio.to_thread(self._record_error, request, result.text)
        return result

    def after_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """Store the rest of the transcript; extract and store the facts of messages not read before."""
        session_id = self._session_id(state, runtime)
        namespace = self._namespace_of(runtime)
        messages = list(state["messages"])
        if self.store_transcript:
            self.remember(messages, session_id=session_id, namespace=namespace)
        if self.extract_facts:
            manager = self._manager(namespace)
            sid = session_for_key(self.memory_store.conversations, session_id, namespace)
            if manager.status(messages, session_id=sid).unread:
                manager.flush(messages, session_id=sid)
        return None

    async def aafter_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        return await asyncio.to_thread(self.after_agent, state, runtime)

    # -- the calls behind the hooks (usable on their own) ----------------------------------------

    def remember(self, messages: Sequence[BaseMessage], *, session_id: str, namespace: Namespace | None = None) -> int:
        """Append the messages not stored yet to the session's transcript; return how many were new.

        A message is known by its LangChain id (LangGraph gives every message in the state one),
        so each is stored once however often the state is seen (a message replaced in the state
        under the same id, an edit, keeps its first version in the transcript). Our own
        compacted-history messages are not part of it (the summary is a memory of its own).
        """
        ns = self._given_namespace(namespace, "remember()")
        convs = self.memory_store.conversations
        sid = session_for_key(convs, session_id, ns)
        candidates = [(self._message_id(sid, m), m) for m in messages
                      if not isinstance(m, RemoveMessage) and not _is_our_summary(m)]
        if not candidates:
            return 0
        stored = convs.stored_ids([mid for mid, _ in candidates])
        new = [to_new_message(m, message_id=mid, lenient=True) for mid, m in candidates if mid not in stored]
        if new:
            convs.append_many(sid, new, namespace=ns)
        return len(new)

    def end_conversation(self, session_id: str, *, namespace: Namespace | None = None) -> Any:
        """The conversation is over: facts of its unread messages and its summary (Koshi's), from the
        stored transcript (``memory_manager.end_session``). Returns the core's ``SessionEnd``.
        ``namespace``: whose conversation (needed when the middleware's namespace is a template or a function)."""
        ns = self._given_namespace(namespace, "end_conversation()")
        sid = session_for_key(self.memory_store.conversations, session_id, ns)
        return self.memory_store.memory_manager.end_session(sid)

    # -- internals --------------------------------------------------------------------------------

    def _manager(self, namespace: str) -> ContextManager:
        manager = self._managers.get(namespace)
        if manager is None:
            manager = self.memory_store.memory_manager.context_manager(self.context, namespace=namespace,
                                                                       **self._overrides())
            self._managers[namespace] = manager
        return manager

    def _overrides(self) -> dict[str, Any]:
        return {} if self.window_tokens is None else {"window_tokens": self.window_tokens}

    def _given_namespace(self, namespace: Namespace | None, caller: str) -> str:
        """``namespace`` if given, else the middleware's fixed one (a call outside a run cannot fill a template)."""
        if namespace is not None:
            return as_namespace(namespace)
        if self._scope is not None and self._scope.fixed is not None:
            return self._scope.fixed
        raise TypeError(f"{caller} needs namespace= when the middleware's namespace is a function or a template")

    def _namespace_of(self, runtime: Any) -> str:
        """This run's namespace: the fixed one, the template filled from the run, or the function's choice."""
        if self._scope is not None:
            return self._scope.resolve(runtime=runtime)
        assert callable(self.namespace)
        chosen = self.namespace(runtime)
        if not isinstance(chosen, (str, tuple, list)):
            raise TypeError(f"the namespace function must return a namespace (a string or a tuple), got {chosen!r}")
        return as_namespace(tuple(chosen) if isinstance(chosen, list) else chosen)

    def _new_session_id(self, runtime: Any) -> str:
        info = getattr(runtime, "execution_info", None)
        thread = getattr(info, "thread_id", None)
        if isinstance(thread, str) and thread:
            return thread
        return self.session_id or f"run-{uuid.uuid4().hex}"

    def _session_id(self, state: Any, runtime: Any) -> str:
        found = state.get("openkoi_session_id") if hasattr(state, "get") else None
        return found if isinstance(found, str) and found else self._new_session_id(runtime)

    @staticmethod
    def _message_id(session_id: str, message: BaseMessage) -> str:
        """The stored id of a thread's message: stable per (session, LangChain id), unique in the file."""
        key = message.id or json.dumps([message.type, message.text, getattr(message, "tool_calls", None)],
                                       default=str)
        return f"lc_{fnv1a_64(session_id + chr(31) + key):016x}"

    def _system_message(self, request: ModelRequest) -> SystemMessage | None:
        session_id = self._session_id(request.state, request.runtime)
        namespace = self._namespace_of(request.runtime)
        sid = session_for_key(self.memory_store.conversations, session_id, namespace)
        query = next((m.text for m in reversed(request.messages) if isinstance(m, HumanMessage) and m.text.strip()),
                     None)
        carries_summary = any(is_compacted_summary(m) for m in request.messages)
        text = self.memory_store.memory_manager.build_context(
            sid, query, self.memory_tokens, namespace=namespace, include_summary=not carries_summary,
            extra_kinds=(ITEM_KIND,)).render()
        base = request.system_message
        if not text:
            return base
        if base is None:
            return SystemMessage(text)
        if isinstance(base.content, str):
            joined = f"{base.content}\n\n{text}" if base.content else text
            return base.model_copy(update={"content": joined})
        return base.model_copy(update={"content": [*base.content, {"type": "text", "text": text}]})

    def _record_error(self, request: Any, error: str | BaseException) -> None:
        call = request.tool_call
        if isinstance(error, str) and not error.strip():
            error = "the tool reported an error without a message"
        runtime = request.runtime
        state = request.state if isinstance(request.state, dict) else {}
        namespace = self._namespace_of(runtime)
        session_id = session_for_key(self.memory_store.conversations, self._session_id(state, runtime), namespace)
        try:
            args = json.dumps(call.get("args", {}), ensure_ascii=False, sort_keys=True, default=str)
        except (TypeError, ValueError):
            args = repr(call.get("args"))
        self.memory_store.memory_manager.record_error(
            str(call.get("name") or "tool"), error, namespace=namespace,
            context=f"arguments {args[:500]}", session_id=session_id)


def _is_our_summary(message: BaseMessage) -> bool:
    return message.additional_kwargs.get("lc_source") == SUMMARY_SOURCE and is_compacted_summary(message)

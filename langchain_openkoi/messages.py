"""LangChain messages as openkoi conversation messages, and back, without losing anything.

A message is stored through ``store.conversations`` (one ``raw_messages`` row, one transcript
line, one index chunk when it has text). What goes where:

* ``role``: the chat role other readers of the session understand (``user``, ``assistant``,
  ``system``, ``tool``, ``function``, a ``ChatMessage``'s own role);
* ``content``: the string, or the list of content blocks verbatim;
* ``additional_kwargs``: verbatim (LlamaIndex's chat store reads them as its own);
* ``tool_calls``, ``tool_call_id``, ``name``: copies in the core's fields, for search and for
  other frameworks;
* ``metadata["__langchain"]``: the rest of langchain_core's own serialisation
  (``message_to_dict``: the type, id, name, response_metadata, tool_calls,
  invalid_tool_calls, usage_metadata, artifact, status, role, chunk fields). Metadata keys
  starting with ``__`` stay out of the embedding document, so none of this changes the vector.

Reading rebuilds the message with ``messages_from_dict`` from those parts: the same class and
``==`` the message that was stored. A message another framework (or ``store.conversations``
directly) wrote is converted from its chat role, text, tool calls and additional kwargs.
"""

from __future__ import annotations

import json
import logging
from datetime import date, datetime
from typing import Any

from langchain_core.load import dumpd
from langchain_core.load.serializable import Serializable
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
    convert_to_messages,
    message_to_dict,
    messages_from_dict,
)

from shared_core.context.messages import COMPACTED_HEADER
from shared_core.conversations import Message, NewMessage

__all__ = ["LC_KEY", "to_new_message", "to_langchain", "summary_message", "SUMMARY_SOURCE"]

logger = logging.getLogger("openkoi.langchain.messages")

LC_KEY = "__langchain"  # metadata key of langchain_core's serialisation (kept out of the embedding document)
SUMMARY_SOURCE = "openkoi.compaction"  # additional_kwargs["lc_source"] of a [Compacted history] message


def to_new_message(message: BaseMessage, *, message_id: str | None = None, lenient: bool = False,
                   active: bool = True) -> NewMessage:
    """The core message a LangChain message is stored as (see the module docs).

    Everything must be JSON: with ``lenient=False`` a value that is not (a tool's artifact
    object, a datetime in ``response_metadata``) is a ``ValueError``; with ``lenient=True`` it is
    stored as LangChain's own serialisation (``dumpd``), an ISO date or its ``repr`` (NaN and
    infinities as null), and a warning is logged (the middleware's transcript must not stop an agent).
    """
    if not isinstance(message, BaseMessage):
        raise TypeError(f"expected a LangChain message (BaseMessage), got {type(message).__name__}")
    if isinstance(message, RemoveMessage):
        raise ValueError("a RemoveMessage is an instruction to LangGraph's message reducer, not a message; "
                         "it cannot be stored")
    dumped = message_to_dict(message)
    data = dict(dumped["data"])
    what = type(message).__name__
    content = _json(data.pop("content"), f"{what}'s content", lenient)
    kwargs = _json(data.pop("additional_kwargs", None) or {}, f"{what}'s additional_kwargs", lenient)
    extra = _json({"type": dumped["type"], "data": data}, f"{what}'s fields", lenient)
    calls = data.get("tool_calls") if isinstance(message, AIMessage) else None
    return NewMessage(
        role=_role(message), content=content, message_id=message_id, name=_short_text(message.name),
        tool_calls=extra["data"].get("tool_calls") if calls else None,
        tool_call_id=_short_text(getattr(message, "tool_call_id", None)), additional_kwargs=kwargs,
        metadata={LC_KEY: extra}, active=active,
    )


def to_langchain(message: Message) -> BaseMessage:
    """The LangChain message a stored message holds (``==`` the one stored through :func:`to_new_message`)."""
    saved = message.metadata.get(LC_KEY)
    if isinstance(saved, dict) and isinstance(saved.get("type"), str) and isinstance(saved.get("data"), dict):
        data = {**saved["data"], "content": message.raw_content, "additional_kwargs": dict(message.additional_kwargs)}
        return messages_from_dict([{"type": saved["type"], "data": data}])[0]
    return _foreign(message)


def summary_message(content: str) -> SystemMessage:
    """The ``[Compacted history]`` message as LangChain's ``SystemMessage`` (OpenKoi's form), marked by
    ``additional_kwargs["lc_source"]`` as LangChain's own SummarizationMiddleware marks its summary."""
    if not content.startswith(COMPACTED_HEADER):
        content = f"{COMPACTED_HEADER}\n{content}"
    return SystemMessage(content, additional_kwargs={"lc_source": SUMMARY_SOURCE})


def _role(message: BaseMessage) -> str:
    if isinstance(message, HumanMessage):
        return "user"
    if isinstance(message, AIMessage):
        return "assistant"
    if isinstance(message, SystemMessage):
        return "system"
    if isinstance(message, ToolMessage):
        return "tool"
    if isinstance(message, FunctionMessage):
        return "function"
    if isinstance(message, ChatMessage):
        return _short_text(message.role, 64) or "chat"
    return _short_text(message.type, 64) or "message"


def _foreign(message: Message) -> BaseMessage:
    """A message another framework wrote: converted from its chat form (unknown roles become ``ChatMessage``)."""
    content: Any = message.raw_content
    if isinstance(content, list) and not all(isinstance(b, str) or (isinstance(b, dict) and "type" in b)
                                             for b in content):
        content = message.content  # blocks in another framework's format (LlamaIndex's block_type): their text
    chat: dict[str, Any] = {"role": message.role, "content": content}
    if message.name is not None:
        chat["name"] = message.name
    if message.tool_calls:
        chat["tool_calls"] = message.tool_calls
    if message.tool_call_id is not None:
        chat["tool_call_id"] = message.tool_call_id
    try:
        converted = convert_to_messages([chat])[0]
    except (ValueError, KeyError, TypeError):  # a role LangChain has no class for, or a tool result without its call
        converted = ChatMessage(content=content, role=message.role, name=message.name)
    if message.additional_kwargs:
        converted.additional_kwargs = {**converted.additional_kwargs, **message.additional_kwargs}
    converted.id = message.message_id
    return converted


def _json(value: Any, what: str, lenient: bool) -> Any:
    try:
        return json.loads(json.dumps(value, ensure_ascii=False, allow_nan=False))
    except (TypeError, ValueError) as exc:
        if not lenient:
            raise ValueError(
                f"the {what} cannot be stored: {exc}; a chat history keeps messages as JSON, so convert that "
                "value to JSON types (str, number, bool, None, list, dict) first"
            ) from None
    logger.warning("the %s is not all JSON; the rest is stored as LangChain's serialisation or repr", what)
    text = json.dumps(value, ensure_ascii=False, default=_fallback)
    return json.loads(text, parse_constant=lambda _: None)  # NaN and infinities become null


def _fallback(value: Any) -> Any:
    if isinstance(value, Serializable):
        return dumpd(value)
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return repr(value)


def _short_text(value: Any, limit: int = 1000) -> str | None:
    """A value the core's optional text fields accept, else None (the exact value stays in the metadata)."""
    if isinstance(value, str) and value.strip() and len(value) <= limit and "\x00" not in value:
        return value
    return None

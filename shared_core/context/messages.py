"""The message lists the context manager reads: plain dicts or records, counted in tokens.

Accepted, item by item (the list may mix them):

* a mapping with ``role`` (or ``type``) and ``content``, plus optional ``name``, ``tool_calls``,
  ``tool_call_id`` and ``id``/``message_id``: chat-completion dicts, ``Message.to_chat()``;
* an object with ``role`` and ``content`` attributes: the conversation module's
  :class:`~shared_core.conversations.Message` and ``NewMessage``, LlamaIndex ``ChatMessage``
  (its ``MessageRole`` enum is read by value);
* an object with ``type`` and ``content``: LangChain ``BaseMessage`` (``human`` is read as
  ``user``, ``ai`` as ``assistant``).

Content is a string or a list of content blocks (strings, ``{"type": "text", "text": ...}``);
only the text counts. The given objects are never changed or copied: results point back to
them by position, so an adapter can rebuild its own message list.

Token count of a list = the sum over its messages of ``count_tokens(text)`` (tiktoken when
usable offline, else the documented estimate), plus ``count_tokens`` of the tool calls as
JSON, plus ``context.message_overhead_tokens`` (4) for the role and separators.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..embed import fnv1a_64
from ..tokens import count_tokens

__all__ = [
    "Turn",
    "as_turns",
    "turn_of",
    "count_message_tokens",
    "COMPACTED_HEADER",
    "summary_message",
    "is_compacted_summary",
    "ROLE_ALIASES",
    "batches",
]

COMPACTED_HEADER = "[Compacted history]"  # seed 000: Message::system(format!("[Compacted history]\n{summary}"))
ROLE_ALIASES = {"human": "user", "ai": "assistant", "function": "tool", "chatbot": "assistant", "model": "assistant"}


@dataclass(frozen=True)
class Turn:
    """One message as the context manager sees it: where it was in the list, its role, text and tokens.

    ``content``, ``role`` and ``tool_calls`` make it readable by the working-memory summariser.
    """

    index: int
    role: str
    text: str
    tokens: int
    name: str | None = None
    tool_calls: list[Any] = field(default_factory=list)
    message_id: str | None = None
    original: Any = field(default=None, repr=False, compare=False)

    @property
    def content(self) -> str:
        return self.text

    @property
    def fingerprint(self) -> str:
        """16 hex digits of FNV-64a over id, role and text: "this message was already read for facts"."""
        key = "\x1f".join((self.message_id or "", self.role, self.text))
        return f"{fnv1a_64(key):016x}"

    @property
    def is_summary(self) -> bool:
        return self.role == "system" and self.text.startswith(COMPACTED_HEADER)


def _text_of(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, (list, tuple)):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, Mapping) and isinstance(block.get("text"), str) and block.get("type", "text") == "text":
                parts.append(block["text"])
            else:
                text = getattr(block, "text", None)  # framework block objects (LlamaIndex TextBlock)
                if isinstance(text, str):
                    parts.append(text)
        return "\n".join(parts)
    raise TypeError(f"message content must be a string or a list of content blocks, got {type(content).__name__}")


def _role_of(value: Any) -> str:
    value = getattr(value, "value", value)  # str enums (LlamaIndex MessageRole)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"a message needs a role such as 'user' or 'assistant', got {value!r}")
    role = value.strip().lower()
    return ROLE_ALIASES.get(role, role)


def turn_of(message: Any) -> tuple[str, str, str | None, list[Any], str | None]:
    """``(role, text, name, tool_calls, id)`` of one message in any accepted form (see the module docs)."""
    if isinstance(message, Mapping):
        role = message.get("role", message.get("type"))
        content = message.get("content", "")
        name = message.get("name")
        calls = message.get("tool_calls") or []
        ident = message.get("message_id", message.get("id"))
    elif hasattr(message, "role") or hasattr(message, "type"):
        role = getattr(message, "role", None) or getattr(message, "type", None)
        content = getattr(message, "content", "")
        name = getattr(message, "name", None)
        calls = getattr(message, "tool_calls", None) or []
        ident = getattr(message, "message_id", None) or getattr(message, "id", None)
    else:
        raise TypeError(
            f"cannot read a message from {type(message).__name__}; give dicts like "
            "{'role': 'user', 'content': 'hi'} or objects with role/type and content"
        )
    return (_role_of(role), _text_of(content), name if isinstance(name, str) else None, list(calls),
            ident if isinstance(ident, str) else None)


def as_turns(messages: Sequence[Any], overhead: int = 4) -> list[Turn]:
    """Every message as a :class:`Turn`, with its token count (``overhead`` per message added)."""
    if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Sequence):
        raise TypeError("messages must be a list of messages (dicts or message objects)")
    turns = []
    for index, message in enumerate(messages):
        role, text, name, calls, ident = turn_of(message)
        tokens = count_tokens(text) + overhead
        if calls:
            tokens += count_tokens(json.dumps(calls, ensure_ascii=False, default=str))
        turns.append(Turn(index, role, text, tokens, name, calls, ident, message))
    return turns


def count_message_tokens(messages: Sequence[Any], overhead: int = 4) -> int:
    """Estimated tokens of a message list (see the module docs)."""
    return sum(t.tokens for t in as_turns(messages, overhead))


def summary_message(summary: str) -> dict[str, str]:
    """Seed 000's compacted-history message: ``{"role": "system", "content": "[Compacted history]\\n<summary>"}``."""
    return {"role": "system", "content": f"{COMPACTED_HEADER}\n{summary}"}


def is_compacted_summary(message: Any) -> bool:
    """True for a message this module's :func:`summary_message` made (a system message starting with the header)."""
    role, text, *_ = turn_of(message)
    return role == "system" and text.startswith(COMPACTED_HEADER)


def batches(turns: Sequence[Turn], max_tokens: int) -> list[list[Turn]]:
    """Consecutive groups of turns of at most ``max_tokens`` each (a longer turn is a group of its own)."""
    out: list[list[Turn]] = []
    current: list[Turn] = []
    used = 0
    for turn in turns:
        if current and used + turn.tokens > max_tokens:
            out.append(current)
            current, used = [], 0
        current.append(turn)
        used += turn.tokens
    if current:
        out.append(current)
    return out

"""LlamaIndex ``ChatMessage``s as openkoi conversation messages, and back.

A message is stored through ``store.conversations`` (one ``raw_messages`` row, one
transcript line, one index chunk when it has text). What goes in:

* ``role``: the role's value (``"user"``, ``"assistant"``, ...);
* content: a message whose only block is a ``TextBlock`` is stored as that string (so
  other readers of the session, such as LangChain's chat history, see plain text); any
  other block list (images, audio, documents, thinking, tool calls, or several texts) is
  stored verbatim as LlamaIndex's own JSON (``model_dump(mode="json")``, the form
  LlamaIndex's SQL chat store keeps), and the core indexes its text blocks;
* ``additional_kwargs``: verbatim, as JSON;
* for search and for other frameworks, copies of ``additional_kwargs["tool_calls"]`` (or the
  ``ToolCallBlock``s), ``["tool_call_id"]`` and ``["name"]`` in the core's tool fields.

Reading rebuilds the same ``ChatMessage`` (``==`` holds). A message another framework wrote
gets its text and image blocks, and its core tool fields as ``additional_kwargs`` keys.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.base.llms.types import (
    ChatMessage,
    ImageBlock,
    MessageRole,
    TextBlock,
    ToolCallBlock,
)

from shared_core.conversations import Message, NewMessage

__all__ = ["to_new_message", "to_chat_message"]

_FOREIGN_ROLES = {"human": MessageRole.USER, "ai": MessageRole.ASSISTANT}
_TOOL_KEYS = ("tool_calls", "tool_call_id", "name")


def to_new_message(message: ChatMessage, *, active: bool = True) -> NewMessage:
    """The core message a ``ChatMessage`` is stored as."""
    if not isinstance(message, ChatMessage):
        raise TypeError(f"chat stores take llama_index ChatMessage objects, got {type(message).__name__}")
    try:
        dumped = message.model_dump(mode="json")
    except Exception as exc:  # pydantic's serialisation errors name the offending value
        raise ValueError(f"this ChatMessage cannot be stored as JSON: {exc}") from None
    blocks: list[dict[str, Any]] = dumped["blocks"]
    kwargs: dict[str, Any] = dumped.get("additional_kwargs") or {}
    only_text = len(blocks) == 1 and blocks[0].get("block_type") == "text"
    content: str | list[Any] = blocks[0]["text"] if only_text else blocks
    calls = kwargs.get("tool_calls")
    if not isinstance(calls, list):
        calls = [
            {"name": b["tool_name"], "args": b["tool_kwargs"], "id": b["tool_call_id"]}
            for b in blocks if b.get("block_type") == "tool_call"
        ]
    return NewMessage(
        role=str(dumped["role"]), content=content, additional_kwargs=kwargs, tool_calls=calls or None,
        tool_call_id=_short_text(kwargs.get("tool_call_id")), name=_short_text(kwargs.get("name")), active=active,
    )


def to_chat_message(message: Message) -> ChatMessage:
    """The ``ChatMessage`` a stored message holds."""
    role = _role(message)
    kwargs = dict(message.additional_kwargs)
    raw = message.content_blocks
    if raw is None:
        chat = ChatMessage(role=role, content=message.content, additional_kwargs=kwargs)
    elif all(isinstance(b, dict) and "block_type" in b for b in raw):
        chat = ChatMessage.model_validate({"role": role, "blocks": raw, "additional_kwargs": kwargs})
    else:  # blocks written by another framework
        chat = ChatMessage(role=role, blocks=[b for b in map(_foreign_block, raw) if b is not None],
                           additional_kwargs=kwargs)
    has_call_blocks = any(isinstance(b, ToolCallBlock) for b in chat.blocks)
    for key, value in zip(_TOOL_KEYS, (message.tool_calls, message.tool_call_id, message.name), strict=True):
        if value and key not in kwargs and not (key == "tool_calls" and has_call_blocks):
            chat.additional_kwargs[key] = value
    return chat


def _role(message: Message) -> MessageRole:
    role = message.role
    if role in _FOREIGN_ROLES:
        return _FOREIGN_ROLES[role]
    try:
        return MessageRole(role)
    except ValueError:
        known = ", ".join(r.value for r in MessageRole)
        raise ValueError(
            f"message {message.message_id!r} of session {message.session_id!r} has the role {role!r}, which a "
            f"LlamaIndex ChatMessage cannot hold (roles: {known}); read it with store.conversations instead"
        ) from None


def _foreign_block(block: Any) -> TextBlock | ImageBlock | None:
    if isinstance(block, str):
        return TextBlock(text=block)
    if not isinstance(block, dict):
        return None
    kind = block.get("type", "text")
    if kind == "text" and isinstance(block.get("text"), str):
        return TextBlock(text=block["text"])
    url = block.get("url")
    if isinstance(block.get("image_url"), dict):
        url = block["image_url"].get("url")
    elif isinstance(block.get("image_url"), str):
        url = block["image_url"]
    if kind in ("image", "image_url", "input_image") and isinstance(url, str) and url:
        return ImageBlock(url=url)
    return None  # other foreign blocks (tool results, audio in provider formats) have no LlamaIndex form here


def _short_text(value: Any) -> str | None:
    """A value the core's optional text fields accept, else None (it stays in additional_kwargs)."""
    if isinstance(value, str) and value.strip() and len(value) <= 1000 and "\x00" not in value:
        return value
    return None

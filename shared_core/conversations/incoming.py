"""Messages on their way in: checked, given their searchable text and embedding document, and
embedded in one batch, all before the write transaction begins."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..config import ConversationsConfig
from ..memories import NewMemory
from ..tokens import count_tokens
from ..validation import time_or_none, unit_or_none
from .embedding_doc import build_embedding_document
from .records import (
    CHUNK_PREFIX,
    Message,
    NewMessage,
    check_text,
    content_parts,
    json_list,
    json_object,
    media_refs,
    message_id_arg,
    new_message_id,
    normalise_attachments,
    optional_text,
)

if TYPE_CHECKING:
    from ..kernel import Kernel

__all__ = ["Pending", "prepare", "searchable_text", "message_document"]


@dataclass
class Pending:
    """A checked message on its way in: the record, and its index chunk (embedded) if it has text."""

    message: Message
    chunk: Any  # the core's prepared (checked and embedded) NewMemory, or None


def prepare(kernel: Kernel, items: Sequence[NewMessage]) -> list[Pending]:
    """Check the messages, build their embedding documents and embed them (outside any transaction)."""
    cfg = kernel.config.conversations
    now = kernel.clock.now()
    # a store whose vectors all come from outside (PrecomputedVectors) cannot embed a message:
    # its messages are kept (rows and transcript) but not indexed
    indexable = getattr(kernel.embedder, "embeds_text", True)
    pending: list[Pending] = []
    for item in items:
        role = check_text(item.role, "role", allow_empty=False, max_len=64)
        if not isinstance(item.active, bool):
            raise TypeError(f"active must be True or False, got {item.active!r}")
        text, blocks = content_parts(item.content)
        message_id = new_message_id() if item.message_id is None else message_id_arg(item.message_id)
        attachments = normalise_attachments(item.attachments)
        message = Message(
            message_id=message_id, session_id="", seq=0, role=role, content=text, namespace="",
            content_blocks=blocks, name=optional_text(item.name, "name"),
            tool_calls=json_list(item.tool_calls, "tool_calls"),
            tool_call_id=optional_text(item.tool_call_id, "tool_call_id"),
            additional_kwargs=json_object(item.additional_kwargs, "additional_kwargs"),
            metadata=json_object(item.metadata, "metadata"), attachments=attachments,
            platform=optional_text(item.platform, "platform"), channel=optional_text(item.channel, "channel"),
            person=optional_text(item.person, "person"), bot_id=optional_text(item.bot_id, "bot_id"),
            sent_at=time_or_none(item.sent_at, "sent_at") or now, stored_at=now, tier="short",
            importance=unit_or_none(item.importance, "importance"), pinned=bool(item.pinned),
            active=item.active,
        )
        searchable = searchable_text(message)
        message.token_count = count_tokens(searchable) if searchable else 0
        chunk = None
        if searchable and indexable:
            chunk = NewMemory(
                text=searchable, id=CHUNK_PREFIX + message_id, kind="message", source="conversation",
                metadata=_chunk_metadata(message), importance=message.importance, pinned=message.pinned,
                owner_id=message_id, created_at=message.sent_at,
                embedding_text=message_document(cfg, message, text=searchable),
            )
        pending.append(Pending(message, chunk))
    chunks = [p.chunk for p in pending if p.chunk is not None]
    if chunks:  # embed in one batch, outside any transaction
        prepared = iter(kernel.memories.prepare(chunks))
        for p in pending:
            if p.chunk is not None:
                p.chunk = next(prepared)
    seen: set[str] = set()
    for p in pending:
        if p.message.message_id in seen:
            raise ValueError(f"message id {p.message.message_id!r} appears twice in one append")
        seen.add(p.message.message_id)
    return pending


def message_document(cfg: ConversationsConfig, message: Message, *, text: str | None = None,
                     tier: str | None = None) -> str:
    """Seed 003's embedding document of a message (``text`` and ``tier`` override its own)."""
    return build_embedding_document(
        text if text is not None else (searchable_text(message) or ""), sent_at=message.sent_at,  # type: ignore[arg-type]
        tier=tier or message.tier, media=media_refs(message.attachments, message.content_blocks),
        dimensions=message.dimensions, metadata=message.metadata, max_chars=cfg.embedding_max_chars,
        window=cfg.embedding_boundary_window,
    )


def searchable_text(message: Message) -> str | None:
    """What the keyword index holds for a message: its text, or for a tool-call-only message the
    calls rendered as ``name {args}``; None when there is nothing to index."""
    text = message.content.strip()
    if text:
        return message.content
    calls = []
    for call in message.tool_calls:
        if isinstance(call, dict):
            name = call.get("name") or (call.get("function") or {}).get("name") or "tool"
            args = call.get("args", call.get("arguments", (call.get("function") or {}).get("arguments")))
            calls.append(f"{name} {json.dumps(args, ensure_ascii=False, sort_keys=True)}" if args else str(name))
    rendered = "\n".join(calls).strip()
    return rendered or None


def _chunk_metadata(message: Message) -> dict[str, Any]:
    out: dict[str, Any] = {"role": message.role}
    for key, value in message.dimensions.items():
        if value is not None:
            out[key] = value
    return out

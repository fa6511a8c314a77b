"""The records of the conversation layer: sessions, messages, and what ``append`` takes.

Field names follow seed 003's ``raw_messages`` with Python spelling; the column each
maps to is in docs/conversations.md (``sent_at`` is the seed's ``timestamp``, ``tier``
its ``memoryStage``, ``pinned`` its ``isPinned``, ``namespace`` its ``userId``).
"""

from __future__ import annotations

import html
import json
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from ..clock import to_iso

__all__ = ["Session", "Message", "NewMessage", "MemorySummary", "WorkingSummary", "MessageHit", "MessageResults",
           "ReconcileReport", "TIERS", "CHUNK_PREFIX", "new_message_id"]

TIERS = ("short", "mid", "long")
CHUNK_PREFIX = "msg:"  # index chunk id of a message: "msg:<message_id>"


def new_message_id() -> str:
    """A fresh message id: ``msg_`` and 16 hex digits."""
    return "msg_" + secrets.token_hex(8)


@dataclass
class Session:
    """A conversation (seed 000's ``sessions`` row, with the namespace that owns it)."""

    id: str
    namespace: str
    channel: str | None = None
    model_provider: str | None = None
    model_id: str | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    total_tokens: int = 0
    total_cost_usd: float = 0.0
    transcript_path: str | None = None  # relative to the transcript directory's parent
    metadata: dict[str, Any] = field(default_factory=dict)
    last_seq: int = 0
    ended_at: datetime | None = None

    def to_dict(self) -> dict[str, Any]:
        return _jsonable(asdict(self))


@dataclass
class Message:
    """One stored message: what was said, who said it where, and its memory state.

    ``content`` is always text; when the message was given as a list of content blocks,
    ``content_blocks`` keeps that list verbatim and ``content`` holds its text parts
    (``raw_content`` gives back whichever was given). ``id`` is the seed's auto-increment
    row id (what summaries' ``source_record_ids`` list); ``message_id`` is the public one.
    ``active``: the message is in the session's active window (a chat memory's short-term
    queue); :meth:`Conversations.deactivate_oldest` moves messages out of it, and they stay
    in the history, the transcript and the search index.
    """

    message_id: str
    session_id: str
    seq: int
    role: str
    content: str
    namespace: str
    content_blocks: list[Any] | None = None
    name: str | None = None
    tool_calls: list[Any] = field(default_factory=list)
    tool_call_id: str | None = None
    additional_kwargs: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    attachments: list[dict[str, Any]] = field(default_factory=list)
    platform: str | None = None
    channel: str | None = None
    person: str | None = None
    bot_id: str | None = None
    sent_at: datetime | None = None
    stored_at: datetime | None = None
    tier: str = "short"
    importance: float | None = None
    pinned: bool = False
    access_count: int = 0
    last_access_at: datetime | None = None
    archived_at: datetime | None = None
    summary_ref_id: str | None = None
    embedding_model: str | None = None
    embedding_content_hash: str | None = None
    embedding_dimensions: int | None = None
    embedding_updated_at: datetime | None = None
    token_count: int = 0
    active: bool = True
    id: int = 0

    @property
    def raw_content(self) -> str | list[Any]:
        """The content as it was given: the block list, or the string."""
        return self.content_blocks if self.content_blocks is not None else self.content

    @property
    def dimensions(self) -> dict[str, str | None]:
        return {"platform": self.platform, "channel": self.channel, "person": self.person, "bot_id": self.bot_id}

    @property
    def compressed(self) -> bool:
        """True once the forgetting engine has folded it into a summary (``archived_at`` set)."""
        return self.archived_at is not None

    def to_dict(self) -> dict[str, Any]:
        return _jsonable(asdict(self))

    def to_chat(self) -> dict[str, Any]:
        """The message as a chat-completion style dict (role, content and the tool fields that are set)."""
        out: dict[str, Any] = {"role": self.role, "content": self.raw_content}
        if self.name is not None:
            out["name"] = self.name
        if self.tool_calls:
            out["tool_calls"] = self.tool_calls
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        return out


@dataclass
class NewMessage:
    """What ``append_many`` takes (``append`` takes the same fields as keyword arguments).

    ``content``: a string, or a list of content blocks (strings or dicts, kept verbatim as
    JSON). ``tool_calls``/``additional_kwargs``/``metadata``/``attachments`` must be
    JSON-serialisable. ``sent_at`` defaults to now (the store's clock). ``message_id`` is
    the platform's id when there is one (unique across the store); a fresh one otherwise.
    ``active=False`` stores it outside the session's active window (see ``Message.active``).
    """

    role: str
    content: str | list[Any] = ""
    message_id: str | None = None
    name: str | None = None
    tool_calls: Sequence[Any] | None = None
    tool_call_id: str | None = None
    additional_kwargs: Mapping[str, Any] | None = None
    metadata: Mapping[str, Any] | None = None
    attachments: Sequence[Mapping[str, Any]] | None = None
    platform: str | None = None
    channel: str | None = None
    person: str | None = None
    bot_id: str | None = None
    sent_at: datetime | str | None = None
    importance: float | None = None
    pinned: bool = False
    active: bool = True


# -- validation and normalisation (used by the repository before any write) --------------------


def _json_copy(value: Any, what: str) -> Any:
    """A JSON round trip: proves the value serialises, and turns tuples into lists."""
    try:
        return json.loads(json.dumps(value, ensure_ascii=False, allow_nan=False, default=_json_default))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what} must be JSON-serialisable (no NaN or infinity): {exc}") from None


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime):
        return to_iso(value)
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=str)
    item = getattr(value, "item", None)  # numpy scalars
    if callable(item):
        return item()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def check_text(value: Any, what: str, *, allow_empty: bool = True, max_len: int | None = None) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a string, got {type(value).__name__}")
    if not allow_empty and not value.strip():
        raise ValueError(f"{what} must not be empty")
    if "\x00" in value:
        raise ValueError(f"{what} contains a NUL character; remove it")
    if max_len is not None and len(value) > max_len:
        raise ValueError(f"{what} is longer than {max_len} characters")
    return value


def optional_text(value: Any, what: str) -> str | None:
    if value is None:
        return None
    return check_text(value, what, allow_empty=False, max_len=1000)


def block_type(block: Mapping[str, Any]) -> str:
    """A content block's type: ``type`` (OpenAI, Anthropic, LangChain) or ``block_type`` (LlamaIndex); "text" if neither."""
    kind = block.get("type", block.get("block_type"))
    return kind if isinstance(kind, str) and kind else "text"


def content_parts(content: Any) -> tuple[str, list[Any] | None]:
    """(text, blocks): a string stays as it is; a block list keeps its JSON and yields its text parts."""
    if isinstance(content, str):
        return check_text(content, "content"), None
    if isinstance(content, (list, tuple)):
        blocks = _json_copy(list(content), "content blocks")
        texts: list[str] = []
        for block in blocks:
            if isinstance(block, str):
                texts.append(block)
            elif isinstance(block, dict) and isinstance(block.get("text"), str) and block_type(block) == "text":
                texts.append(block["text"])
        return check_text("\n".join(texts), "content"), blocks
    raise TypeError(f"content must be a string or a list of content blocks, got {type(content).__name__}")


def media_refs(attachments: Sequence[Mapping[str, Any]], blocks: Sequence[Any] | None) -> list[str]:
    """Seed 003's media refs: each attachment's url (or name), and each non-text content block."""
    refs: list[str] = []
    for item in attachments:
        ref = item.get("url") or item.get("name")
        if ref:
            refs.append(str(ref))
    for block in blocks or ():
        if not isinstance(block, dict) or block_type(block) in _NOT_MEDIA:
            continue
        url = block.get("url")
        if url is None and isinstance(block.get("image_url"), dict):
            url = block["image_url"].get("url")
        elif url is None and isinstance(block.get("image_url"), str):
            url = block["image_url"]
        if url is None and isinstance(block.get("path"), str):
            url = block["path"]
        if isinstance(url, str) and url and not url.startswith("data:"):
            refs.append(url)
        else:
            refs.append(f"{block_type(block)} (inline)")
    return refs


# block types that carry no medium: text, reasoning, tool calls and results, prompt-cache markers,
# citations (LlamaIndex's block_type names and the providers' type names)
_NOT_MEDIA = frozenset({"text", "thinking", "reasoning", "tool_call", "tool_use", "tool_result", "function_call",
                        "cache", "citable", "citation"})


_ATTACHMENT_KEYS = {"contentType": "content_type", "sizeBytes": "size_bytes"}


def normalise_attachments(value: Any) -> list[dict[str, Any]]:
    """``[{name, url, content_type, size_bytes}]`` (the seed's camelCase keys are accepted too)."""
    if value is None:
        return []
    if isinstance(value, Mapping) or not isinstance(value, (list, tuple)):
        raise TypeError("attachments must be a list of dicts like {'name': 'plan.pdf', 'url': 'file:///...'}")
    out = []
    for item in value:
        if not isinstance(item, Mapping):
            raise TypeError(f"each attachment must be a dict, got {item!r}")
        entry = {_ATTACHMENT_KEYS.get(str(k), str(k)): v for k, v in item.items()}
        if not entry.get("name") and not entry.get("url"):
            raise ValueError(f"an attachment needs a name or a url, got {dict(item)!r}")
        size = entry.get("size_bytes")
        if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < 0):
            raise ValueError(f"attachment size_bytes must be a non-negative integer, got {size!r}")
        out.append(_json_copy(entry, "attachments"))
    return out


def json_object(value: Any, what: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise TypeError(f"{what} must be a dict, got {type(value).__name__}")
    return _json_copy(dict(value), what)


def json_list(value: Any, what: str) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, (list, tuple)):
        raise TypeError(f"{what} must be a list, got {type(value).__name__}")
    return _json_copy(list(value), what)


def _jsonable(data: dict[str, Any]) -> dict[str, Any]:
    return {k: to_iso(v) if isinstance(v, datetime) else v for k, v in data.items()}


@dataclass
class MemorySummary:
    """Seed 003's ``memory_summaries`` row: a compressed group of raw messages."""

    summary_id: str
    namespace: str
    summary_tier: str  # L1 | L2 | L3
    source_tier: str  # short | mid | long
    start_timestamp: datetime
    end_timestamp: datetime
    message_count: int
    source_record_ids: list[int]
    key_points: list[str]
    keywords: list[str]
    keywords_text: str
    summary_text: str
    dimensions: dict[str, Any]
    quality_score: float
    created_at: datetime | None = None
    updated_at: datetime | None = None

    def to_dict(self) -> dict[str, Any]:
        return _jsonable(asdict(self))


@dataclass
class WorkingSummary:
    """Seed 001's ``working_memory_summaries`` row: a session's messages up to ``last_seq``, summarised."""

    id: str
    session_id: str
    namespace: str
    summary: str
    first_seq: int
    last_seq: int
    message_count: int
    token_count: int
    method: str  # "model" or "extractive"
    created_at: datetime | None = None

    def to_dict(self) -> dict[str, Any]:
        return _jsonable(asdict(self))


@dataclass(frozen=True)
class MessageHit:
    """One result of :meth:`Conversations.search`: a message, or (fallback) a forgetting summary."""

    kind: str  # "message" or "summary"
    score: float
    timestamp: datetime
    message: Message | None = None
    summary: MemorySummary | None = None
    similarity: float | None = None
    keyword_match: bool = False

    @property
    def text(self) -> str:
        return self.message.content if self.message is not None else self.summary.summary_text  # type: ignore[union-attr]

    @property
    def id(self) -> str:
        return self.message.message_id if self.message is not None else self.summary.summary_id  # type: ignore[union-attr]


class MessageResults(list[MessageHit]):
    """Search results, best first (or newest first when summaries were merged in, as seed 003 does)."""

    def __init__(self, hits: Sequence[MessageHit] = (), *, query: str = "", fallback_used: bool = False) -> None:
        super().__init__(hits)
        self.query = query
        self.fallback_used = fallback_used

    @property
    def ids(self) -> list[str]:
        return [h.id for h in self]

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td>{h.kind}</td><td><code>{html.escape(h.id)}</code></td><td>{h.score:.4f}</td>"
            f"<td>{to_iso(h.timestamp)}</td><td style='text-align:left'>{html.escape(h.text[:200])}</td></tr>"
            for h in self
        )
        note = " (summaries merged in)" if self.fallback_used else ""
        return (f"<table><caption>{len(self)} results for {html.escape(repr(self.query))}{note}</caption>"
                f"<thead><tr><th>kind</th><th>id</th><th>score</th><th>time</th><th>text</th></tr></thead>"
                f"<tbody>{rows}</tbody></table>")


@dataclass
class ReconcileReport:
    """What :meth:`Conversations.reconcile` found and fixed."""

    checked: int = 0
    repaired: list[str] = field(default_factory=list)  # session ids whose transcript was fixed
    removed: list[str] = field(default_factory=list)  # stray files deleted

    @property
    def clean(self) -> bool:
        return not self.repaired and not self.removed


# -- the arguments of the public methods -----------------------------------------------------------

_NEW_MESSAGE_FIELDS = frozenset(NewMessage.__dataclass_fields__)


def session_id_arg(value: Any) -> str:
    """A session id as given to a public method, checked."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"a session id must be a non-empty string such as 'chat-42', got {value!r}")
    return check_text(value, "session id", max_len=512)


def message_id_arg(value: Any) -> str:
    """A message id as given to a public method, checked."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"a message id must be a non-empty string, got {value!r}")
    return check_text(value, "message id", max_len=512)


def active_arg(active: Any) -> bool | None:
    """``active=``: True, False or None (all messages)."""
    if active is not None and not isinstance(active, bool):
        raise TypeError(f"active must be True, False or None (all messages), got {active!r}")
    return active


def count_arg(n: Any) -> int:
    """``n=``: how many messages, a non-negative whole number."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"n must be a non-negative whole number, got {n!r}")
    return n


def as_new_message(raw: NewMessage | Mapping[str, Any]) -> NewMessage:
    """A :class:`NewMessage`, or a dict of its fields, as a :class:`NewMessage`."""
    if isinstance(raw, NewMessage):
        return raw
    if isinstance(raw, Mapping):
        unknown = set(raw) - _NEW_MESSAGE_FIELDS
        if unknown:
            raise ValueError(f"unknown message fields {sorted(unknown)}; known: {sorted(_NEW_MESSAGE_FIELDS)}")
        if "role" not in raw:
            raise ValueError("a message needs a role, e.g. {'role': 'user', 'content': 'hi'}")
        return NewMessage(**raw)
    raise TypeError(f"messages must be NewMessage objects or dicts, got {type(raw).__name__}")

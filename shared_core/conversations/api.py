"""``store.conversations``: sessions and their messages, transcripts, search and working memory.

>>> from shared_core import MemoryStore
>>> with MemoryStore.open(":memory:") as store:
...     convs = store.conversations
...     _ = convs.append("chat-1", "user", "My cat is called Miso.")
...     _ = convs.append("chat-1", "assistant", "Nice to meet Miso!")
...     [m.role for m in convs.messages("chat-1")], convs.count("chat-1")
(['user', 'assistant'], 2)

Every message is one ``raw_messages`` row (seed 003), one line of the session's JSONL
transcript (seed 000), and, when it has text, one index chunk of kind ``message``
(id ``msg:<message_id>``, ``owner_id`` = the message id) whose text is the content (for
FTS) and whose vector embeds seed 003's embedding document (see ``embedding_doc``).
"""

from __future__ import annotations

import html
import json
import logging
import secrets
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..clock import to_iso
from ..embed import fnv1a_64, profile_of
from ..errors import ConfigError, NotFoundError, StorageError
from ..index.sanitize import query_terms
from ..memories import DEFAULT_NAMESPACE, Memory, NewMemory, check_namespace
from ..memories.service import MemoryService
from ..tokens import count_tokens
from ..validation import time_or_none, unit_or_none
from .embedding_doc import build_embedding_document
from .records import (
    MemorySummary,
    Message,
    NewMessage,
    Session,
    WorkingSummary,
    check_text,
    content_parts,
    json_list,
    json_object,
    media_refs,
    new_message_id,
    normalise_attachments,
    optional_text,
)
from .repository import MessageRepository
from .transcripts import TranscriptDir, transcript_line, transcript_name
from .working import WorkingMemory, summarize_messages

if TYPE_CHECKING:
    from ..kernel import Kernel

__all__ = ["Conversations", "MessageHit", "MessageResults", "ReconcileReport", "CHUNK_PREFIX"]

logger = logging.getLogger("openkoi.conversations")

CHUNK_PREFIX = "msg:"  # index chunk id of a message: "msg:<message_id>"
_NEW_MESSAGE_FIELDS = set(NewMessage.__dataclass_fields__)


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


class MessageResults(list):
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


@dataclass
class _Pending:
    """A validated message on its way in: the record, and its index chunk (embedded) if it has text."""

    message: Message
    chunk: Any  # the core's prepared (validated and embedded) NewMemory, or None


class Conversations:
    """Sessions, messages (of any role, with tool calls, extra kwargs and content blocks) and transcripts.

    Reached as ``store.conversations``. Sessions are created on first append; session ids
    and message ids are unique across the store, and a session belongs to one namespace.
    """

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self._repo = MessageRepository(kernel.backend)
        self._tdir: TranscriptDir | None = None
        self._transcript_root = self._resolve_transcript_dir()

    def check_transcripts(self) -> None:
        """When the memory opens: :meth:`reconcile` the transcripts (a failure is logged, never raised)."""
        if self._transcript_root is not None:
            try:
                self.reconcile()
            except (OSError, StorageError) as exc:  # never refuse to open the store over a transcript file
                logger.warning("could not reconcile session transcripts on open: %s", exc)

    # -- configuration -----------------------------------------------------------------------

    def _resolve_transcript_dir(self) -> Path | None:
        cfg, db = self.kernel.config.conversations, self.kernel.backend
        in_memory = db.path == ":memory:"
        # a PostgreSQL memory is shared by several machines: a local transcript would hold only a part
        shared = db.capabilities.shared
        if cfg.transcripts == "off" or db.read_only or (cfg.transcripts == "auto" and (in_memory or shared)):
            return None
        if cfg.transcript_dir:
            return Path(cfg.transcript_dir).expanduser()
        if in_memory:
            raise ConfigError(
                "conversations.transcripts = 'on' for a ':memory:' store needs a directory: set "
                "conversations.transcript_dir (a ':memory:' store has no data directory of its own)"
            )
        return self.kernel.data_dir / "sessions"

    @property
    def transcript_dir(self) -> Path | None:
        """Where transcripts go, or None when they are off (``conversations.transcripts``)."""
        return self._transcript_root

    def _dir(self) -> TranscriptDir | None:
        if self._transcript_root is None:
            return None
        if self._tdir is None:
            db = self.kernel.backend
            store_id = db.get_meta("store_id")
            if store_id is None:
                with db.transaction():
                    store_id = db.get_meta("store_id")
                    if store_id is None:  # the id that marks the transcript directory as this store's
                        store_id = secrets.token_hex(8)
                        db.set_meta("store_id", store_id)
            self._tdir = TranscriptDir(self._transcript_root, store_id=store_id,
                                       fsync=self.kernel.config.conversations.transcript_fsync)
        return self._tdir

    def transcript_path(self, session_id: str) -> Path | None:
        """The JSONL file of a session (whether or not it exists yet), or None when transcripts are off."""
        if self._transcript_root is None:
            return None
        return self._transcript_root / transcript_name(session_id)

    def _relative(self, name: str) -> str:
        assert self._transcript_root is not None
        path = self._transcript_root / name
        try:
            return str(path.relative_to(self.kernel.data_dir))
        except ValueError:
            return str(path)

    # -- sessions ----------------------------------------------------------------------------

    def create_session(
        self,
        session_id: str | None = None,
        *,
        namespace: str = DEFAULT_NAMESPACE,
        channel: str | None = None,
        model_provider: str | None = None,
        model_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Session:
        """Start a session (a fresh id when none is given); an existing id is an error."""
        session_id = _session_id(session_id) if session_id is not None else "ses_" + new_message_id()[4:]
        check_namespace(namespace)
        now = self.kernel.clock.now()
        session = Session(
            id=session_id, namespace=namespace, channel=optional_text(channel, "channel"),
            model_provider=optional_text(model_provider, "model_provider"),
            model_id=optional_text(model_id, "model_id"), created_at=now, updated_at=now,
            metadata=json_object(metadata, "metadata"),
        )
        with self.kernel.session(write=True):
            if self._repo.session(session_id) is not None:
                raise ValueError(f"session {session_id!r} already exists; append to it, or delete it first")
            self._insert_session(session)
        return self.session(session_id)

    def _insert_session(self, session: Session) -> None:
        tdir = self._dir()
        if tdir is not None:
            name = transcript_name(session.id)
            session.transcript_path = self._relative(name)
            self._repo.insert_session(session)
            size = tdir.rewrite(name, [])
            self._repo.update_session(session.id, transcript_bytes=size)
        else:
            self._repo.insert_session(session)

    def session(self, session_id: str, *, namespace: str | None = None) -> Session:
        """The session, or :class:`NotFoundError`."""
        with self.kernel.session():
            session = self._repo.session(_session_id(session_id))
            if session is None or (namespace is not None and session.namespace != namespace):
                where = f" in namespace {namespace!r}" if namespace is not None else ""
                raise NotFoundError(f"no session {session_id!r}{where}")
            return session

    def update_session(
        self,
        session_id: str,
        *,
        channel: Any = ...,
        model_provider: Any = ...,
        model_id: Any = ...,
        metadata: Mapping[str, Any] | None = None,
    ) -> Session:
        """Change a session's channel, model or metadata (only the arguments given)."""
        values: dict[str, Any] = {}
        for key, value in (("channel", channel), ("model_provider", model_provider), ("model_id", model_id)):
            if value is not ...:
                values[key] = optional_text(value, key)
        if metadata is not None:
            values["metadata"] = json_object(metadata, "metadata")
        with self.kernel.session(write=True):
            self.session(session_id)
            self._repo.update_session(session_id, updated_at=self.kernel.clock.now(), **values)
        return self.session(session_id)

    def add_usage(self, session_id: str, *, tokens: int = 0, cost_usd: float = 0.0) -> Session:
        """Add model usage to the session's totals (seed 000's ``total_tokens``, ``total_cost_usd``)."""
        if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0:
            raise ValueError(f"tokens must be a non-negative whole number, got {tokens!r}")
        if isinstance(cost_usd, bool) or not isinstance(cost_usd, (int, float)) or not cost_usd >= 0:
            raise ValueError(f"cost_usd must be a non-negative number, got {cost_usd!r}")
        with self.kernel.session(write=True):
            self.session(session_id)
            self._repo.add_usage(session_id, tokens, float(cost_usd), self.kernel.clock.now())
        return self.session(session_id)

    def end_session(self, session_id: str) -> Session:
        """Mark the session ended (``ended_at`` = now); appending later is still allowed."""
        with self.kernel.session(write=True):
            self.session(session_id)
            now = self.kernel.clock.now()
            self._repo.update_session(session_id, ended_at=now, updated_at=now)
        return self.session(session_id)

    def sessions(self, *, namespace: str | None = DEFAULT_NAMESPACE, limit: int | None = None,
                 offset: int = 0) -> list[Session]:
        """Sessions of a namespace (``None``: all), most recently updated first."""
        if namespace is not None:
            check_namespace(namespace)
        with self.kernel.session():
            return self._repo.list_sessions(namespace, limit, offset)

    def session_ids(self, *, namespace: str | None = None, with_messages: bool = False) -> list[str]:
        """Every session id (of one namespace, if given), sorted: the chat stores' "keys".

        ``with_messages=True``: only sessions that hold at least one message.
        """
        if namespace is not None:
            check_namespace(namespace)
        with self.kernel.session():
            return self._repo.session_ids(namespace, with_messages=with_messages)

    def delete_session(self, session_id: str, *, missing_ok: bool = False) -> int:
        """Delete a session, its messages, index chunks, working summaries and transcript; return how many messages."""
        with self.kernel.session() as db:
            with db.transaction():
                session = self._repo.session(_session_id(session_id))
                if session is None:
                    if missing_ok:
                        return 0
                    raise NotFoundError(f"no session {session_id!r}")
                messages = self._repo.session_messages(session.id)
                self._remove(messages)
                self._repo.delete_session(session.id)
                tdir = self._dir()
                if tdir is not None:
                    name = transcript_name(session.id)
                    db.after_commit(lambda: tdir.remove(name))
            return len(messages)

    # -- appending ---------------------------------------------------------------------------

    def append(
        self,
        session_id: str,
        role: str,
        content: str | list[Any] = "",
        *,
        namespace: str | None = None,
        message_id: str | None = None,
        name: str | None = None,
        tool_calls: Sequence[Any] | None = None,
        tool_call_id: str | None = None,
        additional_kwargs: Mapping[str, Any] | None = None,
        metadata: Mapping[str, Any] | None = None,
        attachments: Sequence[Mapping[str, Any]] | None = None,
        platform: str | None = None,
        channel: str | None = None,
        person: str | None = None,
        bot_id: str | None = None,
        sent_at: datetime | str | None = None,
        importance: float | None = None,
        pinned: bool = False,
        active: bool = True,
    ) -> Message:
        """Append one message to a session (created on first use); return it as stored.

        ``namespace``: the session's (``None``: the existing session's, or ``"default"`` for a
        new one). Appending a ``message_id`` that is already stored with the same role and
        content returns the stored message (re-ingesting a platform message is harmless).
        ``active=False`` stores it outside the session's active window (see :meth:`deactivate_oldest`).
        """
        item = NewMessage(
            role=role, content=content, message_id=message_id, name=name, tool_calls=tool_calls,
            tool_call_id=tool_call_id, additional_kwargs=additional_kwargs, metadata=metadata,
            attachments=attachments, platform=platform, channel=channel, person=person, bot_id=bot_id,
            sent_at=sent_at, importance=importance, pinned=pinned, active=active,
        )
        return self.append_many(session_id, [item], namespace=namespace)[0]

    def append_many(
        self,
        session_id: str,
        messages: Iterable[NewMessage | Mapping[str, Any]],
        *,
        namespace: str | None = None,
    ) -> list[Message]:
        """Append several messages in order, in one transaction (one embedding batch, one file write)."""
        session_id = _session_id(session_id)
        items = [_as_new_message(m) for m in messages]
        if not items:
            return []
        pending = self._prepare(items)
        with self.kernel.session() as db:
            with db.transaction():
                stored = self._write(session_id, namespace, pending)
            return self._reload(stored)

    def insert(self, session_id: str, index: int, role: str, content: str | list[Any] = "", *,
               namespace: str | None = None, **fields: Any) -> Message:
        """Insert a message at list position ``index`` (later messages move down; LlamaIndex's ``add_message(idx=)``)."""
        if isinstance(index, bool) or not isinstance(index, int):
            raise TypeError(f"index must be a whole number, got {index!r}")
        item = _as_new_message({"role": role, "content": content, **fields})
        session_id = _session_id(session_id)
        (pending,) = self._prepare([item])
        with self.kernel.session() as db:
            with db.transaction():
                session = self._repo.session(session_id)
                count = self._repo.count(session_id) if session else 0
                position = index if index >= 0 else count + index
                if session is None or position >= count:
                    stored = self._write(session_id, namespace, [pending])
                    return self._reload(stored)[0]
                self._check_namespace(session, namespace)
                target = self._repo.message_at(session_id, max(0, position))
                assert target is not None
                self._check_new_ids([pending])
                self._repo.shift_seqs(session_id, target.seq)
                pending.message.seq = target.seq
                self._insert_rows(session, [pending])
                self._repo.drop_working_from(session_id, target.seq)
                now = self.kernel.clock.now()
                last = max(session.last_seq + 1, self._max_seq(session_id))
                self._repo.update_session(session_id, last_seq=last, updated_at=now)
                self._rewrite_transcript(session_id)
            return self._reload([pending.message])[0]

    def replace(self, session_id: str, messages: Iterable[NewMessage | Mapping[str, Any]], *,
                namespace: str | None = None) -> list[Message]:
        """Replace a session's messages with ``messages`` in one transaction (LlamaIndex's ``set_messages``)."""
        session_id = _session_id(session_id)
        items = [_as_new_message(m) for m in messages]
        pending = self._prepare(items)
        with self.kernel.session() as db:
            with db.transaction():
                session = self._repo.session(session_id)
                if session is not None:
                    self._check_namespace(session, namespace)
                    self._clear_rows(session_id)
                stored = self._write(session_id, namespace, pending) if pending else []
            return self._reload(stored)

    def _prepare(self, items: Sequence[NewMessage]) -> list[_Pending]:
        """Validate, build the embedding documents and embed, all before the write transaction."""
        cfg = self.kernel.config.conversations
        now = self.kernel.clock.now()
        # a store whose vectors all come from outside (PrecomputedVectors) cannot embed a message:
        # its messages are kept (rows and transcript) but not indexed
        indexable = getattr(self.kernel.embedder, "embeds_text", True)
        pending: list[_Pending] = []
        for item in items:
            role = check_text(item.role, "role", allow_empty=False, max_len=64)
            if not isinstance(item.active, bool):
                raise TypeError(f"active must be True or False, got {item.active!r}")
            text, blocks = content_parts(item.content)
            message_id = new_message_id() if item.message_id is None else _message_id(item.message_id)
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
                doc = build_embedding_document(
                    searchable, sent_at=message.sent_at, tier=message.tier,
                    media=media_refs(message.attachments, message.content_blocks), dimensions=message.dimensions,
                    metadata=message.metadata, max_chars=cfg.embedding_max_chars, window=cfg.embedding_boundary_window,
                )
                chunk = NewMemory(
                    text=searchable, id=CHUNK_PREFIX + message_id, kind="message", source="conversation",
                    metadata=_chunk_metadata(message), importance=message.importance, pinned=message.pinned,
                    owner_id=message_id, created_at=message.sent_at, embedding_text=doc,
                )
            pending.append(_Pending(message, chunk))
        chunks = [p.chunk for p in pending if p.chunk is not None]
        if chunks:  # embed in one batch, outside any transaction
            prepared = iter(self.kernel.memories.prepare(chunks))
            for p in pending:
                if p.chunk is not None:
                    p.chunk = next(prepared)
        seen: set[str] = set()
        for p in pending:
            if p.message.message_id in seen:
                raise ValueError(f"message id {p.message.message_id!r} appears twice in one append")
            seen.add(p.message.message_id)
        return pending

    def _write(self, session_id: str, namespace: str | None, pending: list[_Pending]) -> list[Message]:
        """Inside a transaction: ensure the session, repair its transcript, insert, append the lines."""
        now = self.kernel.clock.now()
        session = self._repo.session(session_id)
        if session is None:
            ns = check_namespace(namespace) if namespace is not None else DEFAULT_NAMESPACE
            session = Session(id=session_id, namespace=ns, created_at=now, updated_at=now)
            self._insert_session(session)
            session = self._repo.session(session_id)
            assert session is not None
        else:
            self._check_namespace(session, namespace)
            self._repair(session_id)
        fresh, existing = self._split_existing(session, pending)
        if not fresh:
            return existing
        seq = session.last_seq
        for p in fresh:
            seq += 1
            p.message.seq = seq
        self._insert_rows(session, fresh)
        tdir = self._dir()
        if tdir is None:
            self._repo.update_session(session_id, last_seq=seq, updated_at=now, transcript_bytes=None)
        else:
            name = transcript_name(session_id)
            _, before = self._repo.transcript_state(session_id)
            assert before is not None
            self.kernel.backend.on_rollback(lambda: tdir.truncate(name, before))
            try:
                size = tdir.append(name, b"".join(transcript_line(p.message) for p in fresh))
                self._repo.update_session(session_id, last_seq=seq, updated_at=now, transcript_bytes=size)
            except BaseException:
                tdir.truncate(name, before)
                raise
        order = {p.message.message_id: i for i, p in enumerate(pending)}
        return sorted([*existing, *(p.message for p in fresh)], key=lambda m: order[m.message_id])

    def _split_existing(self, session: Session, pending: list[_Pending]) -> tuple[list[_Pending], list[Message]]:
        """Messages already stored under the same id: identical ones are returned, others are errors."""
        found = self._repo.messages_by_ids([p.message.message_id for p in pending])
        fresh: list[_Pending] = []
        existing: list[Message] = []
        for p in pending:
            old = found.get(p.message.message_id)
            if old is None:
                fresh.append(p)
                continue
            if old.session_id != session.id or old.role != p.message.role or old.raw_content != p.message.raw_content:
                raise ValueError(
                    f"message id {old.message_id!r} is already stored (session {old.session_id!r}, role {old.role!r}) "
                    "with different content; message ids are unique across the store"
                )
            existing.append(old)
        return fresh, existing

    def _check_new_ids(self, pending: list[_Pending]) -> None:
        found = self._repo.messages_by_ids([p.message.message_id for p in pending])
        if found:
            raise ValueError(f"message id {next(iter(found))!r} is already stored; message ids are unique")

    def _insert_rows(self, session: Session, pending: list[_Pending]) -> None:
        memories = self.kernel.memories
        for p in pending:
            p.message.session_id = session.id
            p.message.namespace = session.namespace
            p.message.id = self._repo.insert_message(p.message)
            if p.chunk is not None:
                # the vector does not depend on these, so the chunk could be embedded before the session was known
                p.chunk.namespace = session.namespace
                p.chunk.session_id = session.id
                memories.write(p.chunk, dedup=False)

    def _check_namespace(self, session: Session, namespace: str | None) -> None:
        if namespace is not None and session.namespace != namespace:
            raise ValueError(
                f"session {session.id!r} belongs to namespace {session.namespace!r}, not {namespace!r}; "
                "session ids are unique across namespaces, so use another id"
            )

    def _max_seq(self, session_id: str) -> int:
        return int(self.kernel.backend.scalar("SELECT coalesce(max(seq), 0) FROM raw_messages WHERE session_id = ?",
                                   (session_id,)) or 0)

    def _reload(self, messages: Sequence[Message]) -> list[Message]:
        found = self._repo.messages_by_ids([m.message_id for m in messages])
        return [found[m.message_id] for m in messages]

    # -- reading -----------------------------------------------------------------------------

    def messages(
        self,
        session_id: str,
        *,
        namespace: str | None = None,
        limit: int | None = None,
        last: int | None = None,
        after_seq: int | None = None,
        offset: int = 0,
        active: bool | None = None,
    ) -> list[Message]:
        """A session's messages in order ([] for an unknown session, or one in another namespace).

        ``last=n``: only the final n; ``limit=n``: only the first n (after ``after_seq``),
        skipping ``offset`` first. ``active``: only the messages in (True) or out of (False)
        the active window. Reading a transcript is not a retrieval: access counts do not change.
        """
        for name, value in (("limit", limit), ("last", last)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise ValueError(f"{name} must be a non-negative whole number, got {value!r}")
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ValueError(f"offset must be a non-negative whole number, got {offset!r}")
        with self.kernel.session():
            session = self._repo.session(_session_id(session_id))
            if session is None or (namespace is not None and session.namespace != namespace):
                return []
            return self._repo.session_messages(session.id, after_seq=after_seq, limit=limit, last=last,
                                               offset=offset, active=_state(active))

    def stored_ids(self, message_ids: Iterable[str]) -> set[str]:
        """Which of these message ids are stored (in any session): what an adapter that appends a
        growing list (a LangGraph thread) checks before embedding, so it appends only what is new."""
        wanted = [_message_id(m) for m in ([message_ids] if isinstance(message_ids, str) else message_ids)]
        with self.kernel.session():
            return set(self._repo.messages_by_ids(wanted)) if wanted else set()

    def count(self, session_id: str, *, namespace: str | None = None, active: bool | None = None) -> int:
        """How many messages a session holds (0 for an unknown session); ``active`` as in :meth:`messages`."""
        with self.kernel.session():
            session = self._repo.session(_session_id(session_id))
            if session is None or (namespace is not None and session.namespace != namespace):
                return 0
            return self._repo.count(session.id, active=_state(active))

    def get(self, message_id: str, *, namespace: str | None = None, track_access: bool = True) -> Message:
        """One message by id, or :class:`NotFoundError`. A lookup counts as an access (seed 003)."""
        with self.kernel.session() as db:
            message = self._repo.message(_message_id(message_id))
            if message is None or (namespace is not None and message.namespace != namespace):
                where = f" in namespace {namespace!r}" if namespace is not None else ""
                raise NotFoundError(f"no message {message_id!r}{where}")
            if track_access and not db.read_only:
                with db.transaction():
                    self._track([message])
                message = self._repo.message(message.message_id) or message
            return message

    def _track(self, messages: Sequence[Message]) -> None:
        """accessCount += 1, lastAccessAt = now: through the live chunk (a trigger mirrors it), else directly."""
        if not messages:
            return
        memories = self.kernel.memories
        chunks = memories.get_many([CHUNK_PREFIX + m.message_id for m in messages])
        live = {c.owner_id for c in chunks}
        memories.track_access([c.rowid for c in chunks])
        rest = [m.message_id for m in messages if m.message_id not in live]
        self._repo.track_access(rest, self.kernel.clock.now())

    # -- deleting ----------------------------------------------------------------------------

    def delete(self, message_id: str, *, namespace: str | None = None) -> Message:
        """Delete one message (row, index chunk, transcript line); return what was deleted."""
        with self.kernel.session() as db:
            with db.transaction():
                message = self._repo.message(_message_id(message_id))
                if message is None or (namespace is not None and message.namespace != namespace):
                    raise NotFoundError(f"no message {message_id!r}")
                self._delete_one(message)
            return message

    def delete_at(self, session_id: str, index: int, *, namespace: str | None = None,
                  active: bool | None = None) -> Message | None:
        """Delete the message at list position ``index`` (negative counts from the end); None if there is none.

        ``active``: the position in the list ``messages(session_id, active=...)`` returns.
        """
        if isinstance(index, bool) or not isinstance(index, int):
            raise TypeError(f"index must be a whole number, got {index!r}")
        with self.kernel.session() as db:
            with db.transaction():
                session = self._repo.session(_session_id(session_id))
                if session is None or (namespace is not None and session.namespace != namespace):
                    return None
                message = self._repo.message_at(session.id, index, active=_state(active))
                if message is None:
                    return None
                self._delete_one(message)
            return message

    def deactivate_oldest(self, session_id: str, n: int, *, namespace: str | None = None) -> list[Message]:
        """Move the ``n`` oldest active messages out of the session's active window; return them.

        They stay in the history, the transcript and the search index (``messages(...,
        active=False)`` lists them): this is how a chat memory retires its short-term queue
        (LlamaIndex's ``archive_oldest_messages``). It is not the forgetting engine's compression.
        """
        n = _count_arg(n)
        with self.kernel.session() as db:
            with db.transaction():
                session = self._repo.session(_session_id(session_id))
                if session is None or (namespace is not None and session.namespace != namespace) or n == 0:
                    return []
                oldest = self._repo.session_messages(session.id, active=True, limit=n)
                self._repo.set_active([m.id for m in oldest], False)
                if oldest:
                    self._repo.update_session(session.id, updated_at=self.kernel.clock.now())
            for message in oldest:
                message.active = False
            return oldest

    def deactivate(self, session_id: str, message_ids: Iterable[str], *, namespace: str | None = None) -> list[Message]:
        """Move these messages of the session out of its active window; return the ones moved.

        Like :meth:`deactivate_oldest`, for a caller that chose the messages itself (a context
        manager that keeps the leading system prompt and compacts what follows it). Ids of
        other sessions, unknown ids and messages already inactive are passed over.
        """
        wanted = [_message_id(m) for m in ([message_ids] if isinstance(message_ids, str) else message_ids)]
        with self.kernel.session() as db:
            with db.transaction():
                session = self._repo.session(_session_id(session_id))
                if session is None or (namespace is not None and session.namespace != namespace) or not wanted:
                    return []
                found = self._repo.messages_by_ids(wanted)
                chosen = sorted((m for m in found.values() if m.session_id == session.id and m.active),
                                key=lambda m: m.seq)
                self._repo.set_active([m.id for m in chosen], False)
                if chosen:
                    self._repo.update_session(session.id, updated_at=self.kernel.clock.now())
            for message in chosen:
                message.active = False
            return chosen

    def delete_oldest(self, session_id: str, n: int, *, namespace: str | None = None,
                      active: bool | None = None) -> list[Message]:
        """Delete the ``n`` oldest messages (of those with the given ``active`` state) in one transaction; return them."""
        n = _count_arg(n)
        with self.kernel.session() as db:
            with db.transaction():
                session = self._repo.session(_session_id(session_id))
                if session is None or (namespace is not None and session.namespace != namespace) or n == 0:
                    return []
                oldest = self._repo.session_messages(session.id, active=_state(active), limit=n)
                self._delete_some(session.id, oldest)
            return oldest

    def delete_last(self, session_id: str, *, namespace: str | None = None) -> Message | None:
        """Delete the session's last message; return it (None for an empty session)."""
        return self.delete_at(session_id, -1, namespace=namespace)

    def clear(self, session_id: str, *, namespace: str | None = None, active: bool | None = None) -> list[Message]:
        """Delete every message of a session (the session itself stays); return them.

        ``active``: only the messages in (True) or out of (False) the active window.
        """
        with self.kernel.session() as db:
            with db.transaction():
                session = self._repo.session(_session_id(session_id))
                if session is None or (namespace is not None and session.namespace != namespace):
                    return []
                if active is None:
                    return self._clear_rows(session.id)
                chosen = self._repo.session_messages(session.id, active=_state(active))
                self._delete_some(session.id, chosen)
                return chosen

    def _clear_rows(self, session_id: str) -> list[Message]:
        self._repair(session_id)
        messages = self._repo.session_messages(session_id)
        self._remove(messages)
        self._repo.update_session(session_id, updated_at=self.kernel.clock.now())
        self._rewrite_transcript(session_id)
        return messages

    def _delete_some(self, session_id: str, messages: Sequence[Message]) -> None:
        """Inside a transaction: delete several messages of one session, then rewrite its transcript."""
        if not messages:
            return
        self._repair(session_id)
        self._remove(messages)
        self._repo.update_session(session_id, updated_at=self.kernel.clock.now())
        self._rewrite_transcript(session_id)

    def _delete_one(self, message: Message) -> None:
        self._repair(message.session_id)
        is_last = self._max_seq(message.session_id) == message.seq
        self._remove([message])
        self._repo.update_session(message.session_id, updated_at=self.kernel.clock.now())
        tdir = self._dir()
        if tdir is None:
            self._repo.update_session(message.session_id, transcript_bytes=None)
            return
        name = transcript_name(message.session_id)
        _, recorded = self._repo.transcript_state(message.session_id)
        line = transcript_line(message)
        if is_last and recorded is not None and recorded >= len(line):
            tdir.truncate(name, recorded - len(line))
            self._repo.update_session(message.session_id, transcript_bytes=recorded - len(line))
            if tdir.ends_cleanly(name):
                return
        self._rewrite_transcript(message.session_id)

    def _remove(self, messages: Sequence[Message]) -> None:
        """Delete rows, live or archived index chunks, summary links and working summaries."""
        if not messages:
            return
        memories = self.kernel.memories
        chunk_ids = [CHUNK_PREFIX + m.message_id for m in messages]
        live = memories.get_many(chunk_ids)
        if live:
            memories.delete_rows([c.rowid for c in live])
        self.kernel.archive.delete(chunk_ids)
        now = self.kernel.clock.now()
        for m in messages:
            if m.summary_ref_id is not None:
                if self._repo.drop_summary_source(m.summary_ref_id, m.id, now):
                    self._delete_summary_chunk(m.summary_ref_id)
        first = min(m.seq for m in messages)
        for session_id in {m.session_id for m in messages}:
            self._repo.drop_working_from(session_id, first)
        self._repo.delete_messages([m.id for m in messages])


    def _delete_summary_chunk(self, summary_id: str) -> None:
        memories = self.kernel.memories
        chunk = memories.get_row(summary_id)
        if chunk is not None:
            memories.delete_rows([chunk.rowid])
        self.kernel.archive.delete([summary_id])

    # -- marking -------------------------------------------------------------------------------

    def pin(self, message_id: str, pinned: bool = True) -> Message:
        """Mark a message important to the user (seed 003's ``isPinned``: +0.3 to its value score)."""
        return self._set(message_id, pinned=bool(pinned))

    def set_importance(self, message_id: str, importance: float | None) -> Message:
        """Set the provided importance (0-1, seed 003's ``importanceScore``); None clears it."""
        return self._set(message_id, importance=unit_or_none(importance, "importance"))

    def _set(self, message_id: str, **values: Any) -> Message:
        with self.kernel.session() as db:
            with db.transaction():
                message = self._repo.message(_message_id(message_id))
                if message is None:
                    raise NotFoundError(f"no message {message_id!r}")
                self._repo.set_flags(message.message_id, **values)
                chunk = self.kernel.memories.get_row(CHUNK_PREFIX + message.message_id)
                if chunk is not None:
                    self.kernel.memories.update(chunk, refresh_hit=False, **values)
            return self._repo.message(message.message_id)  # type: ignore[return-value]

    # -- search (seed 003's query flow) --------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        namespace: str = DEFAULT_NAMESPACE,
        session_id: str | None = None,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        limit: int | None = None,
        threshold: float | None = None,
        min_raw_results: int | None = None,
        include_summaries: bool = True,
        track_access: bool = True,
    ) -> MessageResults:
        """Search messages the way seed 003 does, through the core's hybrid search.

        1. Up to ``limit x forgetting.scan_limit_factor`` (10) message chunks are fetched;
           a hit stays when its keywords matched or its vector similarity reaches
           ``threshold`` (``forgetting.vector_threshold``; < 0 takes the embedder's own,
           0.7 for sentence models as in the seed, 0.35 for the hashing embedder).
        2. When fewer than ``min_raw_results`` (``forgetting.min_raw_results_without_fallback``,
           3) remain, memory summaries whose keywords contain a query word, within the time
           range, are merged in and everything is sorted newest first (seed 003).
        Returned messages count as accessed (seed 003), unless ``track_access=False``.
        """
        cfg = self.kernel.config.forgetting
        limit = self.kernel.config.search.default_limit if limit is None else limit
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"limit must be a positive whole number, got {limit!r}")
        if threshold is None:
            threshold = self.search_threshold
        minimum = cfg.min_raw_results_without_fallback if min_raw_results is None else min_raw_results
        where = {"@session_id": _session_id(session_id)} if session_id is not None else None
        hits = self.kernel.service(MemoryService).search(
            query, namespace=namespace, kind="message", where=where, since=since, until=until,
            limit=limit * cfg.scan_limit_factor, track_access=False,
        )
        kept = hits.matching(threshold)[:limit]
        with self.kernel.session() as db:
            found = self._repo.messages_by_ids([h.memory.owner_id for h in kept if h.memory.owner_id])
            results = [
                MessageHit("message", h.score, found[h.memory.owner_id].sent_at, message=found[h.memory.owner_id],
                           similarity=h.parts.similarity, keyword_match=(h.parts.bm25 or 0.0) > 0.0)
                for h in kept if h.memory.owner_id in found
            ]
            fallback = False
            if include_summaries and len(results) < minimum:
                terms = query_terms(query)
                summaries = self._repo.summaries(
                    namespace, since=time_or_none(since, "since"), until=time_or_none(until, "until"), terms=terms,
                    session_id=_session_id(session_id) if session_id is not None else None, limit=limit,
                ) if terms else []
                if summaries:
                    fallback = True
                    results += [MessageHit("summary", s.quality_score, s.end_timestamp, summary=s) for s in summaries]
                    results.sort(key=lambda h: h.timestamp, reverse=True)
            if track_access and not db.read_only:
                tracked = [h.message for h in results if h.message is not None]
                if tracked:
                    with db.transaction():
                        self._track(tracked)
            return MessageResults(results, query=query, fallback_used=fallback)

    @property
    def search_threshold(self) -> float:
        """The vector similarity a message needs in :meth:`search`: ``forgetting.vector_threshold``, or
        when that is below 0 the embedder's own (``EmbedderProfile.kb_threshold``: 0.7 for sentence
        models, seed 003's value; 0.35 for the hashing embedder, whose similarities run lower)."""
        configured = self.kernel.config.forgetting.vector_threshold
        return configured if configured >= 0 else profile_of(self.kernel.embedder).kb_threshold

    # -- working memory (seed 001) ---------------------------------------------------------------

    def working_memory(self, session_id: str, *, summarize: bool = True) -> WorkingMemory:
        """What the model should see: the working summary and every message after it.

        With ``summarize=True`` (the default) the summary is brought up to date first when
        more than ``context.working_summarize_after`` (40) messages are outside it.
        """
        session_id = _session_id(session_id)
        if summarize:
            self.summarize_working(session_id)
        with self.kernel.session():
            summary = self._repo.latest_working(session_id)
            after = summary.last_seq if summary else 0
            messages = self._repo.session_messages(session_id, after_seq=after)
            total = self._repo.count(session_id)
            return WorkingMemory(session_id, summary, messages, total)

    def context(self, session_id: str, *, system: str | None = None) -> list[dict[str, Any]]:
        """``working_memory(session_id).to_messages(system)``: system + summary + recent messages."""
        return self.working_memory(session_id).to_messages(system)

    def summarize_working(self, session_id: str, *, force: bool = False) -> WorkingSummary | None:
        """Fold older messages into a new working summary when due (or, with ``force``, whenever
        more than ``working_keep`` messages are outside it); return the new summary, or None."""
        cfg = self.kernel.config.context
        session_id = _session_id(session_id)
        with self.kernel.session():
            session = self._repo.session(session_id)
            if session is None:
                return None
            latest = self._repo.latest_working(session_id)
            base = latest.last_seq if latest else 0
            outside = self._repo.session_messages(session_id, after_seq=base)
        due = len(outside) > cfg.working_summarize_after or (force and len(outside) > cfg.working_keep)
        if not due:
            return None
        fold = outside[: len(outside) - cfg.working_keep]
        text, method = summarize_messages(latest.summary if latest else None, fold,
                                          budget=cfg.summary_tokens, model=self.kernel.text_model)
        summary = WorkingSummary(
            id=f"wm_{fnv1a_64(session_id):016x}_{fold[-1].seq}", session_id=session_id, namespace=session.namespace,
            summary=text, first_seq=latest.first_seq if latest else fold[0].seq, last_seq=fold[-1].seq,
            message_count=(latest.message_count if latest else 0) + len(fold), token_count=count_tokens(text),
            method=method, created_at=self.kernel.clock.now(),
        )
        with self.kernel.session(write=True):
            now_latest = self._repo.latest_working(session_id)
            if (now_latest.last_seq if now_latest else 0) != base:
                return None  # another process summarised meanwhile, or a message was deleted
            still = self._repo.session_messages(session_id, after_seq=base, through_seq=summary.last_seq)
            if [m.message_id for m in still] != [m.message_id for m in fold]:
                return None  # the messages changed while summarising: try again next time
            self._repo.put_working(summary)
        return summary

    def working_summaries(self, session_id: str) -> list[WorkingSummary]:
        """Every working summary of a session, oldest first."""
        with self.kernel.session():
            return self._repo.working_history(_session_id(session_id))

    # -- transcripts -----------------------------------------------------------------------------

    def transcript(self, session_id: str) -> list[dict[str, Any]]:
        """The session's transcript file, parsed (one dict per line); [] when there is none."""
        tdir = self._dir()
        if tdir is None:
            return []
        session_id = _session_id(session_id)
        with self.kernel.session():
            _, recorded = self._repo.transcript_state(session_id)
        data = tdir.read(transcript_name(session_id)) or b""
        if recorded is not None:
            data = data[:recorded]  # a concurrent writer's uncommitted line is not part of it yet
        return [json.loads(line) for line in data.splitlines() if line.strip()]

    def reconcile(self, *, full: bool = False) -> ReconcileReport:
        """Make every transcript agree with the database; run on open, safe to run any time.

        Checks each session's file size against the recorded one (``full=True``: compares
        the bytes), repairs what differs, and removes transcripts of sessions that no longer
        exist and temporary files of interrupted rewrites.
        """
        report = ReconcileReport()
        tdir = self._dir()
        if tdir is None:
            return report
        with self.kernel.session() as db:
            rows = self._repo.sessions_with_transcripts()
            suspects = []
            for session_id, path, recorded in rows:
                name = transcript_name(session_id)
                report.checked += 1
                size = tdir.size(name)
                if path is None and recorded is None and size is None and self._repo.count(session_id) == 0:
                    continue  # a session row without messages or a file (e.g. made for a task): nothing to write
                if full or path != self._relative(name) or recorded is None or size != recorded:
                    suspects.append(session_id)
            stray = tdir.stray_files({transcript_name(r[0]) for r in rows})
            if not suspects and not stray:
                return report
            with db.transaction():  # waits for writers: their appends are complete or rolled back
                for session_id in suspects:
                    if self._repo.session(session_id) is not None and self._repair(session_id, full=full):
                        report.repaired.append(session_id)
                known = {transcript_name(s) for s in self._repo.session_ids(None)}
                for path in tdir.stray_files(known):
                    path.unlink(missing_ok=True)
                    report.removed.append(path.name)
        return report

    def _repair(self, session_id: str, *, full: bool = False) -> bool:
        """Inside a transaction: make the session's transcript match the rows; True if it changed."""
        tdir = self._dir()
        if tdir is None:
            return False
        name = transcript_name(session_id)
        path, recorded = self._repo.transcript_state(session_id)
        actual = tdir.size(name)
        if path == self._relative(name) and recorded is not None and actual is not None:
            if actual == recorded and not full:
                return False
            if actual > recorded and not full:
                tdir.truncate(name, recorded)  # a line written by a transaction that never committed
                if tdir.ends_cleanly(name):
                    return True
            if full:
                expected = b"".join(transcript_line(m) for m in self._repo.session_messages(session_id))
                if tdir.read(name) == expected:
                    return False
        self._rewrite_transcript(session_id)
        return True

    def _rewrite_transcript(self, session_id: str) -> None:
        tdir = self._dir()
        if tdir is None:
            self._repo.update_session(session_id, transcript_bytes=None)
            return
        name = transcript_name(session_id)
        size = tdir.rewrite(name, (transcript_line(m) for m in self._repo.session_messages(session_id)))
        self._repo.update_session(session_id, transcript_path=self._relative(name), transcript_bytes=size)

    # -- hooks for the core ----------------------------------------------------------------------

    def embedding_text(self, memory: Memory) -> str:
        """The embedding document of a message chunk (registered for ``store.reembed``)."""
        message = self._repo.message(memory.owner_id) if memory.owner_id else None
        if message is None:
            return memory.text
        return self.embedding_document(message, text=memory.text)

    def embedding_document(self, message: Message, *, text: str | None = None, tier: str | None = None) -> str:
        """Seed 003's embedding document of a stored message (``tier`` overrides its current tier)."""
        cfg = self.kernel.config.conversations
        return build_embedding_document(
            text if text is not None else (searchable_text(message) or ""), sent_at=message.sent_at,  # type: ignore[arg-type]
            tier=tier or message.tier, media=media_refs(message.attachments, message.content_blocks),
            dimensions=message.dimensions, metadata=message.metadata, max_chars=cfg.embedding_max_chars,
            window=cfg.embedding_boundary_window,
        )

    def erase(self, namespace: str) -> None:
        """``erase_namespace``: rows of every table of this layer, and the transcript files (after commit)."""
        ids = self._repo.session_ids(namespace)
        self._repo.erase_namespace(namespace)
        tdir = self._dir()
        if tdir is not None and ids:
            names = [transcript_name(i) for i in ids]

            def remove() -> None:
                for name in names:
                    tdir.remove(name)

            self.kernel.backend.after_commit(remove)

    @property
    def repository(self) -> MessageRepository:
        """The SQL of this layer (for lifecycle code such as the forgetting engine)."""
        return self._repo


# -- helpers -------------------------------------------------------------------------------------


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


def _session_id(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"a session id must be a non-empty string such as 'chat-42', got {value!r}")
    return check_text(value, "session id", max_len=512)


def _state(active: Any) -> bool | None:
    if active is not None and not isinstance(active, bool):
        raise TypeError(f"active must be True, False or None (all messages), got {active!r}")
    return active


def _count_arg(n: Any) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"n must be a non-negative whole number, got {n!r}")
    return n


def _message_id(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"a message id must be a non-empty string, got {value!r}")
    return check_text(value, "message id", max_len=512)


def _as_new_message(raw: NewMessage | Mapping[str, Any]) -> NewMessage:
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

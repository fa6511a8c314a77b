"""The context manager (seeds 000, 001, 004): write-then-compact for any list of chat messages.

``store.memory_manager.context_manager("fleet", namespace="user:priya")`` gives one; call
``manage(messages, session_id=...)`` before every model call and send ``result.messages``:

1. **status**: the messages' tokens (see :mod:`.messages`) against the policy's thresholds;
2. **flush** (when tokens reach ``flush_at`` of the window, seed 004): durable facts are
   extracted from the messages not read before and stored; the messages stay as they are;
3. **compact** (when tokens pass ``max_tokens``, or messages pass ``max_messages``):
   the leading system messages stay in front; the rest is split (the older ``split_ratio``,
   or all but the last ``keep_last``; never so that the recent part starts with a tool result
   whose call would be cut off); from the older part, **first** the facts of messages not read
   before are extracted and stored (database, then ``MEMORY.md`` when a workspace is set), the
   conversation summary is stored as a kind ``summary`` memory linked to the session (seed
   002), and the compaction is logged; **then** the result is
   ``[system prompts..., {"role": "system", "content": "[Compacted history]\\n<summary>"}, *recent]``
   (seed 000's form). A previous ``[Compacted history]`` message is folded into the new summary.

Nothing is discarded before its facts are stored: if storing fails, ``compact`` raises and the
caller still has its messages. The given message objects are returned as they are (dicts stay
dicts, framework objects stay themselves); ``result.kept`` lists their positions in the input.
"""

from __future__ import annotations

import html
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..embed import fnv1a_64
from .extraction import extract
from .messages import COMPACTED_HEADER, Turn, as_turns, batches, summary_message
from .policy import ContextPolicy
from .records import ContextEvent, Extraction, session_key

if TYPE_CHECKING:
    from ..workspace import Workspace
    from .facts import ConversationFacts, StoredFact

__all__ = ["ContextManager", "ContextStatus", "ContextResult", "FlushResult"]

logger = logging.getLogger("openkoi.context")


@dataclass(frozen=True)
class ContextStatus:
    """Where a message list stands against the policy."""

    tokens: int
    messages: int
    window_tokens: int
    compact_threshold: int
    flush_threshold: int | None
    unread: int  # messages whose facts were not taken yet
    flush_due: bool
    compact_due: bool

    @property
    def ratio(self) -> float:
        """Tokens as a share of the window."""
        return self.tokens / self.window_tokens


@dataclass
class FlushResult:
    """What a flush stored: facts from ``scanned`` messages not read before (``end`` adds the summary)."""

    facts: list[StoredFact] = field(default_factory=list)
    scanned: int = 0
    method: str = "rules"
    summary: str = ""
    summary_id: str | None = None


@dataclass
class ContextResult:
    """What to send to the model now, and what was stored on the way.

    ``action``: ``none`` (nothing due), ``flush`` (facts stored, messages unchanged) or
    ``compact``. ``messages``: the list to send. ``kept``: positions in the input of the
    messages in ``messages`` (the summary message is not one of them; it sits at
    ``summary_position``). ``summary_message`` is a plain dict; adapters may build their own
    system message from ``summary_message["content"]``.
    """

    messages: list[Any]
    action: str = "none"
    tokens_before: int = 0
    tokens_after: int = 0
    kept: list[int] = field(default_factory=list)
    compacted: int = 0
    summary: str | None = None
    summary_message: dict[str, str] | None = None
    summary_position: int | None = None
    summary_id: str | None = None
    facts: list[StoredFact] = field(default_factory=list)
    method: str | None = None
    compaction_id: str | None = None
    reason: str = ""

    def _repr_html_(self) -> str:
        rows = "".join(f"<tr><td>{html.escape(f.event)}</td><td style='text-align:left'>{html.escape(f.text)}</td></tr>"
                       for f in self.facts)
        head = (f"<caption>{self.action}: {self.tokens_before} -> {self.tokens_after} tokens, {self.compacted} "
                f"messages compacted, {len(self.facts)} facts stored</caption>")
        summary = f"<pre>{html.escape(self.summary)}</pre>" if self.summary else ""
        return f"<table>{head}{rows}</table>{summary}"


class ContextManager:
    """Keeps a conversation within its window; facts are always stored before anything is compacted.

    ``policy``: a :class:`ContextPolicy` (or a preset name). ``namespace``: where facts and
    summaries go. ``session_id``: the conversation (per call too). ``workspace``: a
    :class:`~shared_core.workspace.Workspace` whose ``MEMORY.md`` also receives the facts
    (``None``: database only).
    """

    def __init__(self, facts: ConversationFacts, policy: ContextPolicy, *, namespace: str,
                 session_id: str | None = None, workspace: Workspace | None = None) -> None:
        self.facts = facts
        self.kernel = facts.kernel
        self.policy = policy
        self.namespace = namespace
        self.session_id = session_id
        self.workspace = workspace

    def __repr__(self) -> str:
        return f"ContextManager({self.policy.describe()!r}, namespace={self.namespace!r})"

    # -- reading -------------------------------------------------------------------------------

    def _turns(self, messages: Sequence[Any]) -> list[Turn]:
        return as_turns(messages, self.kernel.config.context.message_overhead_tokens)

    def _parts(self, turns: list[Turn]) -> tuple[list[Turn], list[Turn], list[Turn]]:
        """(leading system prompts, previous compacted summaries, the conversation)."""
        prefix: list[Turn] = []
        summaries = [t for t in turns if t.is_summary]
        body: list[Turn] = []
        leading = self.policy.keep_system
        for turn in turns:
            if turn.is_summary:
                continue
            if leading and turn.role in ("system", "developer"):
                prefix.append(turn)
                continue
            leading = False
            body.append(turn)
        return prefix, summaries, body

    def _sid(self, session_id: str | None) -> str | None:
        return session_id if session_id is not None else self.session_id

    def _key(self, session_id: str | None) -> str:
        return session_key(self._sid(session_id), self.namespace)

    def _unread(self, key: str, turns: Sequence[Turn]) -> list[Turn]:
        with self.kernel.session():
            seen = self.facts.repository.extracted(key, [t.fingerprint for t in turns])
        return [t for t in turns if t.fingerprint not in seen]

    def status(self, messages: Sequence[Any], *, session_id: str | None = None) -> ContextStatus:
        """Tokens, thresholds and what is due for ``messages``."""
        turns = self._turns(messages)
        _, _, body = self._parts(turns)
        tokens = sum(t.tokens for t in turns)
        key = self._key(session_id)
        unread = len(self._unread(key, [t for t in body if t.role != "system"]))
        flush = self.policy.flush_threshold
        if flush is not None and tokens >= flush and unread:
            with self.kernel.session():
                if self.facts.repository.flushed_since_compaction(key):
                    flush = None  # one proactive flush per fill of the window; compaction reads the rest
        over_count = self.policy.max_messages is not None and len(body) > self.policy.max_messages
        compact = (tokens > self.policy.compact_threshold or over_count) and self.policy.split(len(body)) > 0
        return ContextStatus(
            tokens=tokens, messages=len(turns), window_tokens=self.policy.window_tokens,
            compact_threshold=self.policy.compact_threshold, flush_threshold=self.policy.flush_threshold,
            unread=unread, flush_due=flush is not None and tokens >= flush and unread > 0, compact_due=compact,
        )

    # -- acting --------------------------------------------------------------------------------

    def manage(self, messages: Sequence[Any], *, session_id: str | None = None) -> ContextResult:
        """Compact when due, else flush when due, else nothing; return what to send."""
        state = self.status(messages, session_id=session_id)
        if state.compact_due:
            compacted = self.compact(messages, session_id=session_id, force=True)
            if compacted.action == "compact" or not state.flush_due:
                return compacted
        result = ContextResult(list(messages), tokens_before=state.tokens, tokens_after=state.tokens,
                               kept=list(range(len(messages))))
        if state.flush_due:
            flushed = self.flush(messages, session_id=session_id)
            result.action, result.facts, result.method = "flush", flushed.facts, flushed.method
        return result

    def flush(self, messages: Sequence[Any], *, session_id: str | None = None) -> FlushResult:
        """Extract and store the facts of the messages not read before (seed 004's proactive flush)."""
        key = self._key(session_id)
        turns = self._turns(messages)
        _, _, body = self._parts(turns)
        unread = self._unread(key, [t for t in body if t.role != "system"])
        cfg = self.kernel.config.context
        result = FlushResult(scanned=len(unread))
        for batch in batches(unread, cfg.extract_batch_tokens):
            found = extract(batch, model=self.kernel.text_model, want_summary=False, budget=self.policy.summary_budget,
                            max_facts=cfg.max_facts, max_chars=cfg.fact_max_chars)
            result.facts += self._store_facts(found, self._sid(session_id), key, batch)
            result.method = found.method if found.method != "rules" else result.method
        tokens = sum(t.tokens for t in turns)
        now = self.kernel.clock.now()
        read = f"{fnv1a_64(chr(31).join(t.fingerprint for t in unread)):016x}"
        event = ContextEvent(
            id=f"flush_{fnv1a_64(key):016x}_{read}_{now.timestamp():.6f}", action="flush", session_key=key,
            namespace=self.namespace, policy=self.policy.name, created_at=now,
            messages_before=len(turns), messages_after=len(turns), compacted=0, tokens_before=tokens,
            tokens_after=tokens, fact_ids=[f.id for f in result.facts], method=result.method)
        with self.kernel.session(write=True):
            self.facts.repository.log(event)
        return result

    def end(self, messages: Sequence[Any], *, session_id: str | None = None) -> FlushResult:
        """The conversation ends: store the facts of messages not read before and its summary (seed 002).

        For a list held by the caller (a LangGraph thread); stored conversations use
        :meth:`MemoryManager.end_session`. Returns the facts; the summary id is ``result.summary_id``.
        """
        key = self._key(session_id)
        sid = self._sid(session_id)
        result = self.flush(messages, session_id=session_id)
        _, summaries, body = self._parts(self._turns(messages))
        if not body and not summaries:
            return result
        previous = "\n".join(t.text[len(COMPACTED_HEADER):].strip() for t in summaries) or None
        cfg = self.kernel.config.context
        found = extract(body, already={t.index for t in body}, previous=previous, model=self.kernel.text_model,
                        want_summary=True, budget=self.policy.summary_budget, max_facts=cfg.max_facts,
                        max_chars=cfg.fact_max_chars)
        result.summary = found.summary
        result.summary_id = self.facts.store_summary(
            found.summary, id=f"sessum_{fnv1a_64(key):016x}", namespace=self.namespace, session_id=sid,
            summary_type="session_end", message_count=len(body), method=found.method, policy=self.policy.name)
        return result

    def compact(self, messages: Sequence[Any], *, session_id: str | None = None, force: bool = False) -> ContextResult:
        """Store facts and a summary of the older messages, then return summary + recent (see the module docs).

        ``force``: compact even when the policy says it is not due yet.
        """
        key = self._key(session_id)
        sid = self._sid(session_id)
        turns = self._turns(messages)
        tokens_before = sum(t.tokens for t in turns)
        prefix, summaries, body = self._parts(turns)
        unchanged = ContextResult(list(messages), tokens_before=tokens_before, tokens_after=tokens_before,
                                  kept=list(range(len(messages))))
        if not force and not self.status(messages, session_id=session_id).compact_due:
            unchanged.reason = "not due"
            return unchanged
        cut = self.policy.split(len(body))
        while 0 < cut < len(body) and body[cut].role == "tool":
            cut -= 1  # a tool result stays with the call that asked for it
        if cut <= 0:
            unchanged.reason = "nothing old enough to compact"
            return unchanged
        old, recent = body[:cut], body[cut:]
        previous = "\n".join(t.text[len(COMPACTED_HEADER):].strip() for t in summaries) or None
        candidates = [t for t in old if t.role != "system"]
        read = {t.index for t in candidates} - {t.index for t in self._unread(key, candidates)}
        cfg = self.kernel.config.context
        found = extract(old, already=read, previous=previous, model=self.kernel.text_model, want_summary=True,
                        budget=self.policy.summary_budget, max_facts=cfg.max_facts, max_chars=cfg.fact_max_chars)
        # write first: facts, then the summary and the log; only then is anything left out
        facts = self._store_facts(found, sid, key, [t for t in candidates if t.index not in read])
        summary = found.summary
        fingerprint = f"{fnv1a_64(chr(31).join(t.fingerprint for t in old)):016x}"
        key_hash = f"{fnv1a_64(key):016x}"
        summary_id = self.facts.store_summary(
            summary, id=f"ctxsum_{key_hash}_{fingerprint}", namespace=self.namespace, session_id=sid,
            summary_type="compaction", message_count=len(old), method=found.method, policy=self.policy.name)
        message = summary_message(summary)
        out = [t.original for t in prefix] + [message] + [t.original for t in recent]
        kept = [t.index for t in prefix] + [t.index for t in recent]
        tokens_after = sum(t.tokens for t in self._turns(out))
        record = ContextEvent(
            id=f"cmp_{key_hash}_{fingerprint}", action="compact", session_key=key, namespace=self.namespace,
            policy=self.policy.name, created_at=self.kernel.clock.now(), messages_before=len(turns), messages_after=len(out),
            compacted=len(old) + len(summaries), tokens_before=tokens_before, tokens_after=tokens_after,
            fact_ids=[f.id for f in facts], summary_id=summary_id, summary=summary, method=found.method)
        with self.kernel.session(write=True):
            self.facts.repository.log(record)
        logger.info("compacted %s: %d messages into a summary, %d -> %d tokens, %d facts stored first", key,
                    len(old), tokens_before, tokens_after, len(facts))
        return ContextResult(
            out, action="compact", tokens_before=tokens_before, tokens_after=tokens_after, kept=kept,
            compacted=record.compacted, summary=summary, summary_message=message, summary_position=len(prefix),
            summary_id=summary_id, facts=facts, method=found.method, compaction_id=record.id,
        )

    def _store_facts(self, found: Extraction, session_id: str | None, key: str, read: Sequence[Turn]) -> list[Any]:
        """Store the facts, then mark the messages as read (a crash in between re-reads, never loses)."""
        facts = self.facts.store_facts(found.facts, namespace=self.namespace, session_id=session_id,
                                         workspace=self.workspace, method=found.method)
        with self.kernel.session(write=True):
            self.facts.repository.mark_extracted(key, self.namespace, [t.fingerprint for t in read],
                                              self.kernel.clock.now())
        return facts

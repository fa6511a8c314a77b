"""``store.memory_manager``: the conversation-memory API that agent middleware and memory blocks call.

One object per store (seed 001's MemoryManager, grown with seed 004's layers):

* :meth:`MemoryManager.context_manager` - write-then-compact for message lists (presets
  ``openkoi``, ``openmotoko``, ``fleet``);
* :meth:`MemoryManager.build_context` - the prompt addendum for a conversation;
* :meth:`MemoryManager.workspace` - the namespace's workspace folder;
* :meth:`MemoryManager.memory_save`, :meth:`record_error`, :meth:`record_correction` - what the
  memory tools and the middleware call after a turn;
* :meth:`MemoryManager.end_session` - facts and a summary when a conversation ends (seed 002);
* :meth:`MemoryManager.recall_facts` (three-tier, seed 004) and :meth:`search` (database and
  workspace together);
* :attr:`MemoryManager.categorizer` - auto-categorisation (also used by ``store.add``).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..categories import Categorizer
from ..category_search import CategorySearch
from ..conversations.service import Conversations
from ..embed import fnv1a_64
from ..items import ITEM_KIND
from ..learnings import Learnings
from ..memories import DEFAULT_NAMESPACE, Memory, check_namespace
from ..memories.service import MemoryService
from ..workspace import Workspace, Workspaces
from ..workspace.index import reindex
from .addendum import ContextAddendum, build_addendum
from .extraction import extract
from .facts import ConversationFacts, SalientFact, StoredFact, stamp
from .manager import ContextManager
from .messages import as_turns, batches
from .policy import ContextPolicy
from .records import ContextEvent, ExtractedFact, Extraction, session_key

if TYPE_CHECKING:
    from ..kernel import Kernel
    from ..search import SearchResults

__all__ = ["MemoryManager", "SavedMemory", "SessionEnd", "SEARCH_KINDS"]

# what memory_search looks through: the structured memory (LangGraph store items, LangMem's memories, among it)
# and the workspace, not raw messages
SEARCH_KINDS = ("fact", ITEM_KIND, "workspace", "learning", "episode", "summary", "procedure", "insight", "note",
                "document", "node")  # node: LlamaIndex's vector store


@dataclass(frozen=True)
class SavedMemory:
    """What :meth:`MemoryManager.memory_save` did: the fact, and the daily log it went to (if any)."""

    memory: Memory
    event: str
    daily_log: str | None = None


@dataclass
class SessionEnd:
    """What :meth:`MemoryManager.end_session` stored."""

    session_id: str
    facts: list[StoredFact] = field(default_factory=list)
    summary: str = ""
    summary_id: str | None = None
    method: str = "rules"


class MemoryManager:
    """Conversation memory over one store; reached as ``store.memory_manager``."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.facts = ConversationFacts(kernel)
        self.repository = self.facts.repository

    def __repr__(self) -> str:
        return f"MemoryManager({self.kernel.backend.path!r})"

    # -- categories (part 8) ----------------------------------------------------------------------

    @property
    def categorizer(self) -> Categorizer:
        """The categoriser the ``memory`` settings describe (rules, or ``store.text_model`` first)."""
        return self.kernel.categorizer

    def categorize(self, text: str) -> str | None:
        """The category a fact with this text gets on add."""
        return self.categorizer.categorize(text)

    # -- workspace (part 7) -----------------------------------------------------------------------

    def workspace(self, namespace: str = DEFAULT_NAMESPACE, *, path: str | Path | None = None) -> Workspace | None:
        """The namespace's workspace folder; None when workspaces are off for this store.

        ``path`` names the folder explicitly (always honoured); otherwise it is
        ``<workspace.root>/<namespace slug>``, ``workspace.root`` defaulting to
        ``<data dir>/workspaces`` for file stores. ``:memory:`` stores have none unless
        ``workspace.root`` or ``path`` is given (their ``data_dir`` is the user's real one).
        """
        return self.kernel.service(Workspaces).get(namespace, path=path)

    def workspace_folder(self, namespace: str = DEFAULT_NAMESPACE) -> Path | None:
        """Where :meth:`workspace` puts the namespace's folder when no ``path`` is given (None: no
        workspaces for this store); nothing is created."""
        return self.kernel.service(Workspaces).folder(namespace)

    # -- the context manager (part 4) -------------------------------------------------------------

    def context_manager(
        self,
        policy: str | ContextPolicy | None = None,
        *,
        namespace: str = DEFAULT_NAMESPACE,
        session_id: str | None = None,
        workspace: Workspace | bool | None = True,
        **overrides: Any,
    ) -> ContextManager:
        """A :class:`~shared_core.context.ContextManager` for ``namespace``.

        ``policy``: a preset name (``openkoi``, ``openmotoko``, ``fleet``; default
        ``context.preset``) or a :class:`ContextPolicy`; ``overrides`` change the preset's
        numbers (``window_tokens=8000``). ``workspace``: ``True`` (the namespace's workspace, if
        any, also gets the facts in ``MEMORY.md``), ``False``/``None`` (database only), or one.
        """
        check_namespace(namespace)
        if policy is None or isinstance(policy, str):
            chosen = ContextPolicy.preset(policy or self.kernel.config.context.preset, self.kernel.config.context,
                                          **overrides)
        elif isinstance(policy, ContextPolicy):
            if overrides:
                raise TypeError("overrides apply to presets; build the ContextPolicy with those values instead")
            chosen = policy
        else:
            raise TypeError(f"policy must be a preset name or a ContextPolicy, got {type(policy).__name__}")
        if workspace is True:
            space = self.workspace(namespace)
        elif workspace is False or workspace is None:
            space = None
        else:
            space = workspace
        return ContextManager(self.facts, chosen, namespace=namespace, session_id=session_id, workspace=space)

    def compactions(self, session_id: str | None, *, namespace: str = DEFAULT_NAMESPACE,
                    limit: int | None = None) -> list[ContextEvent]:
        """The compactions of a conversation, newest first."""
        with self.kernel.session():
            return self.repository.events(session_key(session_id, namespace), action="compact", limit=limit)

    def context_events(self, session_id: str | None, *, namespace: str = DEFAULT_NAMESPACE,
                       limit: int | None = None) -> list[ContextEvent]:
        """The flushes and compactions of a conversation, newest first."""
        with self.kernel.session():
            return self.repository.events(session_key(session_id, namespace), limit=limit)

    # -- facts and summaries (part 5) -------------------------------------------------------------

    def extract(self, messages: Sequence[Any], *, summary: bool = True, previous: str | None = None,
                use_model: bool = True) -> Extraction:
        """Facts (and a summary) of a message list, without storing anything."""
        cfg = self.kernel.config.context
        turns = as_turns(messages, cfg.message_overhead_tokens)
        return extract(turns, previous=previous, model=self.kernel.text_model if use_model else None,
                       want_summary=summary, budget=cfg.summary_tokens, max_facts=cfg.max_facts,
                       max_chars=cfg.fact_max_chars)

    # -- facts and summaries (part 5; see :class:`~shared_core.context.facts.ConversationFacts`) -----

    def store_facts(self, facts: Sequence[ExtractedFact | str], *, namespace: str = DEFAULT_NAMESPACE,
                    session_id: str | None = None, workspace: Workspace | None = None, method: str = "rules",
                    source: str = "extraction") -> list[StoredFact]:
        """Store facts through the core's fact add, then MEMORY.md (:meth:`ConversationFacts.store_facts`)."""
        return self.facts.store_facts(facts, namespace=namespace, session_id=session_id, workspace=workspace,
                                      method=method, source=source)

    def store_summary(self, text: str, *, id: str, namespace: str, session_id: str | None,  # noqa: A002
                      summary_type: str, message_count: int, method: str, policy: str | None = None) -> str:
        """Store a conversation summary: a kind ``summary`` memory linked to the session (seed 002)."""
        return self.facts.store_summary(text, id=id, namespace=namespace, session_id=session_id,
                                        summary_type=summary_type, message_count=message_count, method=method,
                                        policy=policy)

    def end_session(self, session_id: str, *, end: bool = True) -> SessionEnd:
        """A stored conversation ends: facts of messages not read before, then its summary (seed 002).

        The summary covers the working summary (seed 001) and the messages after it; facts come
        from every message not read before (by a flush or a compaction), in batches. ``end``:
        also mark the session ended (``conversations.end_session``).
        """
        convs = self.kernel.service(Conversations)
        session = convs.session(session_id)
        key = session_key(session.id, session.namespace)
        cfg = self.kernel.config.context
        messages = convs.messages(session.id)
        turns = as_turns(messages, cfg.message_overhead_tokens)
        with self.kernel.session():
            seen = self.repository.extracted(key, [t.fingerprint for t in turns])
        unread = [t for t in turns if t.fingerprint not in seen and t.role != "system"]
        facts: list[StoredFact] = []
        method = "rules"
        for batch in batches(unread, cfg.extract_batch_tokens):
            found = extract(batch, model=self.kernel.text_model, want_summary=False, budget=cfg.summary_tokens,
                            max_facts=cfg.max_facts, max_chars=cfg.fact_max_chars)
            method = found.method if found.method != "rules" else method
            facts += self.store_facts(found.facts, namespace=session.namespace, session_id=session.id,
                                      workspace=self.workspace(session.namespace), method=found.method)
            with self.kernel.session(write=True):
                self.repository.mark_extracted(key, session.namespace, [t.fingerprint for t in batch],
                                          self.kernel.clock.now())
        working = convs.working_memory(session.id, summarize=False)
        window = as_turns(working.messages, cfg.message_overhead_tokens)
        previous = working.summary.summary if working.summary else None
        result = SessionEnd(session.id, facts, method=method)
        if window or previous:
            found = extract(window, already={t.index for t in window}, previous=previous,
                            model=self.kernel.text_model, want_summary=True, budget=cfg.summary_tokens,
                            max_facts=cfg.max_facts, max_chars=cfg.fact_max_chars)
            result.summary = found.summary
            result.summary_id = self.store_summary(
                found.summary, id=f"sessum_{fnv1a_64(session.id):016x}", namespace=session.namespace,
                session_id=session.id, summary_type="session_end", message_count=len(messages), method=found.method)
        if end:
            convs.end_session(session.id)
        return result

    # -- what tools and middleware call after a turn (part 7) -------------------------------------

    def memory_save(self, content: str, *, namespace: str = DEFAULT_NAMESPACE, category: str | None = None,
                    tags: Sequence[str] | str | None = None, session_id: str | None = None) -> SavedMemory:
        """Seed 004's ``memory_save``: the fact goes to the structured DB **and** the day's log.

        Both or neither: the log line is appended inside the database transaction and cut back
        if the write fails. Without a workspace the fact goes to the database only.
        """
        memories = self.kernel.service(MemoryService)
        space = self.workspace(namespace)
        now = self.kernel.clock.now()
        name = space.daily_log(now) if space is not None else None
        before = space.size(name) if space is not None and name is not None else None
        try:
            with self.kernel.session(write=True):
                result = memories.add(content, namespace=namespace, category=category, tags=tags,
                                      source="memory_save", session_id=session_id)
                memory = memories.get(result.id)
                if space is not None:
                    space.log(memory.text, tag="memory_save", when=now)
        except BaseException:
            if space is not None and name is not None:
                space.restore_size(name, before)  # the line goes with the row: both or neither
            raise
        if space is not None and self.kernel.config.workspace.auto_sync and name is not None:
            reindex(space, name, space.read(name))
        return SavedMemory(memory, result.event, name)

    def record_error(self, tool: str, error: str | BaseException, *, namespace: str = DEFAULT_NAMESPACE,
                     context: str | None = None, session_id: str | None = None) -> str:
        """A tool failed: an entry in ``learnings/errors.md`` (auto-injected each session) and an
        AntiPattern learning (deduplicated: a repeated failure reinforces it). Returns the learning's id."""
        if not isinstance(tool, str) or not tool.strip():
            raise ValueError("record_error needs the tool's name")
        message = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
        message = " ".join(message.split())
        if not message:
            raise ValueError("record_error needs the error message")
        text = f"Tool {tool.strip()} failed: {message}" + (f" (context: {' '.join(context.split())})" if context else "")
        learning = self.kernel.service(Learnings).add(text[:1000], "AntiPattern", category=f"tool:{tool.strip()}",
                                                      namespace=namespace)
        space = self.workspace(namespace)
        if space is not None:
            space.add_learnings_entry("learnings/errors.md", f"{stamp(self.kernel)} · {tool.strip()}",
                                      [("error", message), ("context", context or ""), ("session", session_id or "")])
        return learning.id

    def record_correction(self, correction: str, *, namespace: str = DEFAULT_NAMESPACE, wrong: str | None = None,
                          supersedes: str | None = None, session_id: str | None = None) -> StoredFact:
        """The user corrected the agent: an entry in ``learnings/corrections.md`` (auto-injected each
        session) and a fact (source ``correction``; ``supersedes`` makes it the new version of that fact)."""
        if not isinstance(correction, str) or not correction.strip():
            raise ValueError("record_correction needs the corrected statement")
        memories = self.kernel.service(MemoryService)
        result = memories.add(correction, namespace=namespace, source="correction", session_id=session_id,
                              supersedes=supersedes, metadata={"correction": True})
        memory = memories.get(result.id)
        space = self.workspace(namespace)
        if space is not None:
            space.add_learnings_entry("learnings/corrections.md", stamp(self.kernel),
                                      [("correction", memory.text), ("instead of", wrong or "")])
        return StoredFact(memory.id, memory.text, result.event, memory.category, "correction", True,
                          getattr(result, "supersedes", None))

    # -- retrieval (parts 6, 8) -------------------------------------------------------------------

    def search(self, query: str, *, namespace: str = DEFAULT_NAMESPACE, limit: int = 10,
               kinds: Sequence[str] | None = None) -> SearchResults:
        """Seed 004's ``memory_search``: hybrid search over the database and the workspace files together
        (kinds :data:`SEARCH_KINDS` unless given; edited workspace files are re-indexed first)."""
        space = self.workspace(namespace)
        if space is not None and self.kernel.config.workspace.auto_sync:
            space.sync()
        return self.kernel.service(MemoryService).search(query, namespace=namespace, kind=list(kinds or SEARCH_KINDS),
                                                         limit=limit)

    def recall_facts(self, query: str, *, namespace: str = DEFAULT_NAMESPACE,
                     categories: Sequence[str] | str | None = None, limit: int | None = None,
                     track_access: bool = True, kinds: Sequence[str] = ("fact",)) -> CategorySearch:
        """Seed 004's ``memory_recall``: facts in the query's categories first, then a flat fallback
        (:meth:`ConversationFacts.recall_facts`)."""
        return self.facts.recall_facts(query, namespace=namespace, categories=categories, limit=limit,
                                       track_access=track_access, kinds=kinds)

    def salient_facts(self, namespace: str = DEFAULT_NAMESPACE, *, limit: int | None = None,
                      candidates: int = 200) -> list[SalientFact]:
        """Facts at or above ``context.salience_threshold``, most salient first; pinned facts always."""
        return self.facts.salient_facts(namespace, limit=limit, candidates=candidates)

    def known_facts(self, namespace: str = DEFAULT_NAMESPACE, *, limit: int | None = None,
                    kinds: Sequence[str] = ("fact",), exclude: Collection[str] = ()) -> list[SalientFact]:
        """The namespace's current facts that most belong in every prompt (:meth:`ConversationFacts.known_facts`)."""
        return self.facts.known_facts(namespace, limit=limit, kinds=kinds, exclude=exclude)

    def build_context(self, conversation_id: str | None, query: str | None = None, token_budget: int | None = None,
                      *, namespace: str | None = None, include_summary: bool = True,
                      extra_kinds: Sequence[str] = ()) -> ContextAddendum:
        """The prompt addendum for a conversation, within ``token_budget`` (see :mod:`.addendum`).

        It always carries the namespace's most salient current facts (``known_facts``, no query
        needed: "What do you know about me?" gets the user's profile), then the query's matches.
        ``include_summary=False``: leave out the conversation's own summary, when the messages sent
        with the prompt already hold it (a ``[Compacted history]`` message kept in the message list).
        ``extra_kinds``: memory kinds besides facts that the known and relevant facts also draw on,
        e.g. ``("langgraph_item",)`` for items written with LangGraph's ``OpenKoiStore.put``. With a
        ``namespace``, another namespace's conversation id is not this one's (its messages stay out).
        """
        return build_addendum(self.facts, conversation_id, query, token_budget, namespace=namespace,
                              include_summary=include_summary, extra_kinds=extra_kinds)

    def erase(self, namespace: str) -> None:
        """``erase_namespace``: the context bookkeeping rows (the workspace has its own eraser)."""
        self.repository.erase(namespace)

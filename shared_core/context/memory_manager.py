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

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from ..categories import Categorizer
from ..category_search import CategorySearch, search_by_category
from ..clock import days_between
from ..embed import fnv1a_64
from ..errors import ConfigError, NotFoundError
from ..items import ITEM_KIND
from ..memories import DEFAULT_NAMESPACE, Memory, check_namespace
from ..ranking import is_salient, salience, standing
from ..workspace import Workspace
from ..workspace.index import erase_namespace as erase_workspace
from ..workspace.index import register, reindex
from .addendum import ContextAddendum, build_addendum
from .corrections import corrected_fact
from .extraction import ExtractedFact, Extraction, extract
from .manager import ContextManager
from .messages import as_turns, batches
from .policy import ContextPolicy
from .state import ContextEvent, ContextState, session_key

if TYPE_CHECKING:
    from ..search import SearchResults
    from ..store import MemoryStore

__all__ = ["MemoryManager", "StoredFact", "SavedMemory", "SessionEnd", "SalientFact", "SEARCH_KINDS"]

# what memory_search looks through: the structured memory (LangGraph store items, LangMem's memories, among it)
# and the workspace, not raw messages
SEARCH_KINDS = ("fact", ITEM_KIND, "workspace", "learning", "episode", "summary", "procedure", "insight", "note",
                "document", "node")  # node: LlamaIndex's vector store


@dataclass(frozen=True)
class StoredFact:
    """A fact as stored: its id, text and category, and what the store did (created, reinforced, superseded)."""

    id: str
    text: str
    event: str
    category: str | None = None
    rule: str = "model"
    correction: bool = False
    supersedes: str | None = None


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


@dataclass(frozen=True)
class SalientFact:
    """A fact with its salience (seed 004; :func:`shared_core.ranking.salience`), or for
    :meth:`MemoryManager.known_facts` its standing (:func:`shared_core.ranking.standing`)."""

    memory: Memory
    salience: float


class MemoryManager:
    """Conversation memory over one store; reached as ``store.memory_manager``."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store
        self.state = ContextState(store.db)
        self._workspaces: dict[tuple[str, str], Workspace] = {}

    def __repr__(self) -> str:
        return f"MemoryManager({self.store!r})"

    # -- categories (part 8) ----------------------------------------------------------------------

    @property
    def categorizer(self) -> Categorizer:
        """The categoriser the ``memory`` settings describe (rules, or ``store.text_model`` first)."""
        return self.store.kernel.categorizer

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
        check_namespace(namespace)
        if path is not None:
            folder = Path(path).expanduser().resolve()
        else:
            default = self.workspace_folder(namespace)
            if default is None:
                return None
            folder = default
        cache_key = (namespace, str(folder))
        if cache_key not in self._workspaces:
            register(self.store, namespace, str(folder))
            self._workspaces = {k: v for k, v in self._workspaces.items() if k[0] != namespace}
            self._workspaces[cache_key] = Workspace(self.store, namespace, folder)
        return self._workspaces[cache_key]

    def workspace_folder(self, namespace: str = DEFAULT_NAMESPACE) -> Path | None:
        """Where :meth:`workspace` puts the namespace's folder when no ``path`` is given (None: no
        workspaces for this store); nothing is created."""
        cfg = self.store.config.workspace
        if cfg.enabled == "off":
            return None
        if cfg.root:
            root = Path(cfg.root).expanduser()
        elif self.store.path == ":memory:":
            if cfg.enabled == "on":
                raise ConfigError("workspace.enabled = 'on' for a ':memory:' store needs workspace.root (or pass "
                                  "path=): a ':memory:' store has no data directory of its own")
            return None
        else:
            root = self.store.data_dir / "workspaces"
        return (root / _folder_name(namespace)).resolve()

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
            chosen = ContextPolicy.preset(policy or self.store.config.context.preset, self.store.config.context,
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
        return ContextManager(self, chosen, namespace=namespace, session_id=session_id, workspace=space)

    def compactions(self, session_id: str | None, *, namespace: str = DEFAULT_NAMESPACE,
                    limit: int | None = None) -> list[ContextEvent]:
        """The compactions of a conversation, newest first."""
        with self.store.db.lock:
            return self.state.events(session_key(session_id, namespace), action="compact", limit=limit)

    def context_events(self, session_id: str | None, *, namespace: str = DEFAULT_NAMESPACE,
                       limit: int | None = None) -> list[ContextEvent]:
        """The flushes and compactions of a conversation, newest first."""
        with self.store.db.lock:
            return self.state.events(session_key(session_id, namespace), limit=limit)

    # -- facts and summaries (part 5) -------------------------------------------------------------

    def extract(self, messages: Sequence[Any], *, summary: bool = True, previous: str | None = None,
                use_model: bool = True) -> Extraction:
        """Facts (and a summary) of a message list, without storing anything."""
        cfg = self.store.config.context
        turns = as_turns(messages, cfg.message_overhead_tokens)
        return extract(turns, previous=previous, model=self.store.text_model if use_model else None,
                       want_summary=summary, budget=cfg.summary_tokens, max_facts=cfg.max_facts,
                       max_chars=cfg.fact_max_chars)

    def store_facts(
        self,
        facts: Sequence[ExtractedFact | str],
        *,
        namespace: str = DEFAULT_NAMESPACE,
        session_id: str | None = None,
        workspace: Workspace | None = None,
        method: str = "rules",
        source: str = "extraction",
    ) -> list[StoredFact]:
        """Store facts through the core's fact add (dedup, versioning, auto-category), then MEMORY.md.

        Each fact is ``store.add(text, source=..., session_id=...)``: ``source`` for the user's
        statements (default ``extraction``), ``tool_result`` for a tool's, ``agent_observation``
        for the assistant's. A fact that corrects a current fact of the namespace (a negation of
        it, or a correction or change of the same thing: :mod:`.corrections`) supersedes it, so
        the old one leaves search and the prompt (``store.history`` keeps both). A fact already
        known comes back ``reinforced`` (a tool or the assistant repeating it changes nothing).
        With a ``workspace``, new facts are appended to ``MEMORY.md`` and corrections to
        ``learnings/corrections.md``.
        """
        store = self.store
        stored: list[StoredFact] = []
        for fact in facts:
            item = fact if isinstance(fact, ExtractedFact) else ExtractedFact(str(fact), "given")
            metadata: dict[str, Any] = {"extracted_by": method, "rule": item.rule}
            if item.correction:
                metadata["correction"] = True
            if item.replaces:
                metadata["replaces"] = item.replaces
            origin = _SOURCES.get(item.origin, source)
            current = store.list(namespace=namespace, kind="fact", order_by="created_at", descending=True, limit=500)
            if item.origin != "user" and _known(item.text, current):
                continue  # an echo of what memory holds is no new evidence: not even a reinforcement
            old = corrected_fact(item, current)
            result = self._add_fact(item.text, namespace, origin, session_id, metadata, old)
            memory = store.get(result.id)
            stored.append(StoredFact(memory.id, memory.text, result.event, memory.category, item.rule,
                                     item.correction or old is not None, getattr(result, "supersedes", None)))
        if workspace is not None and stored:
            fresh = [f.text for f in stored if f.event != "reinforced"]
            label = f"From session {session_id}" if session_id else "Facts"
            workspace.append_memory(fresh, heading=f"{label} ({store.clock.now():%Y-%m-%d})")
            for fact in stored:
                if fact.correction:
                    workspace.add_learnings_entry("learnings/corrections.md", _stamp(store), [("correction", fact.text)])
        return stored

    def _add_fact(self, text: str, namespace: str, source: str, session_id: str | None, metadata: dict[str, Any],
                  old: Memory | None) -> Any:
        """``store.add``, as the new version of ``old`` when there is one (unless another writer replaced it first)."""
        if old is not None:
            try:
                return self.store.add(text, namespace=namespace, source=source, session_id=session_id,
                                      metadata={**metadata, "correction": True}, supersedes=old.id)
            except (NotFoundError, ValueError):  # superseded or deleted meanwhile: an ordinary add decides
                pass
        return self.store.add(text, namespace=namespace, source=source, session_id=session_id, metadata=metadata)

    def store_summary(self, text: str, *, id: str, namespace: str, session_id: str | None,  # noqa: A002
                      summary_type: str, message_count: int, method: str, policy: str | None = None) -> str:
        """Store a conversation summary: a kind ``summary`` memory linked to the session (seed 002)."""
        metadata = {"summary_type": summary_type, "message_count": message_count, "method": method}
        if policy:
            metadata["policy"] = policy
        return str(self.store.add(text, id=id, kind="summary", namespace=namespace, session_id=session_id,
                                  source="conversation", metadata=metadata, dedup=False))

    def end_session(self, session_id: str, *, end: bool = True) -> SessionEnd:
        """A stored conversation ends: facts of messages not read before, then its summary (seed 002).

        The summary covers the working summary (seed 001) and the messages after it; facts come
        from every message not read before (by a flush or a compaction), in batches. ``end``:
        also mark the session ended (``conversations.end_session``).
        """
        convs = self.store.conversations
        session = convs.session(session_id)
        key = session_key(session.id, session.namespace)
        cfg = self.store.config.context
        messages = convs.messages(session.id)
        turns = as_turns(messages, cfg.message_overhead_tokens)
        with self.store.db.lock:
            seen = self.state.extracted(key, [t.fingerprint for t in turns])
        unread = [t for t in turns if t.fingerprint not in seen and t.role != "system"]
        facts: list[StoredFact] = []
        method = "rules"
        for batch in batches(unread, cfg.extract_batch_tokens):
            found = extract(batch, model=self.store.text_model, want_summary=False, budget=cfg.summary_tokens,
                            max_facts=cfg.max_facts, max_chars=cfg.fact_max_chars)
            method = found.method if found.method != "rules" else method
            facts += self.store_facts(found.facts, namespace=session.namespace, session_id=session.id,
                                      workspace=self.workspace(session.namespace), method=found.method)
            with self.store.db.lock, self.store.db.transaction():
                self.state.mark_extracted(key, session.namespace, [t.fingerprint for t in batch], self.store.clock.now())
        working = convs.working_memory(session.id, summarize=False)
        window = as_turns(working.messages, cfg.message_overhead_tokens)
        previous = working.summary.summary if working.summary else None
        result = SessionEnd(session.id, facts, method=method)
        if window or previous:
            found = extract(window, already={t.index for t in window}, previous=previous,
                            model=self.store.text_model, want_summary=True, budget=cfg.summary_tokens,
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
        store = self.store
        space = self.workspace(namespace)
        now = store.clock.now()
        name = space.daily_log(now) if space is not None else None
        before = space.size(name) if space is not None and name is not None else None
        try:
            with store.transaction():
                result = store.add(content, namespace=namespace, category=category, tags=tags, source="memory_save",
                                   session_id=session_id)
                memory = store.get(result.id)
                if space is not None:
                    space.log(memory.text, tag="memory_save", when=now)
        except BaseException:
            if space is not None and name is not None:
                space.restore_size(name, before)  # the line goes with the row: both or neither
            raise
        if space is not None and store.config.workspace.auto_sync and name is not None:
            self._index_file(space, name)
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
        learning = self.store.learnings.add(text[:1000], "AntiPattern", category=f"tool:{tool.strip()}",
                                            namespace=namespace)
        space = self.workspace(namespace)
        if space is not None:
            space.add_learnings_entry("learnings/errors.md", f"{_stamp(self.store)} · {tool.strip()}",
                                      [("error", message), ("context", context or ""), ("session", session_id or "")])
        return learning.id

    def record_correction(self, correction: str, *, namespace: str = DEFAULT_NAMESPACE, wrong: str | None = None,
                          supersedes: str | None = None, session_id: str | None = None) -> StoredFact:
        """The user corrected the agent: an entry in ``learnings/corrections.md`` (auto-injected each
        session) and a fact (source ``correction``; ``supersedes`` makes it the new version of that fact)."""
        if not isinstance(correction, str) or not correction.strip():
            raise ValueError("record_correction needs the corrected statement")
        result = self.store.add(correction, namespace=namespace, source="correction", session_id=session_id,
                                supersedes=supersedes, metadata={"correction": True})
        memory = self.store.get(result.id)
        space = self.workspace(namespace)
        if space is not None:
            space.add_learnings_entry("learnings/corrections.md", _stamp(self.store),
                                      [("correction", memory.text), ("instead of", wrong or "")])
        return StoredFact(memory.id, memory.text, result.event, memory.category, "correction", True,
                          getattr(result, "supersedes", None))

    # -- retrieval (parts 6, 8) -------------------------------------------------------------------

    def recall_facts(self, query: str, *, namespace: str = DEFAULT_NAMESPACE, categories: Sequence[str] | str | None = None,
                     limit: int | None = None, track_access: bool = True,
                     kinds: Sequence[str] = ("fact",)) -> CategorySearch:
        """Seed 004's ``memory_recall``: facts in the query's categories first, then a flat fallback.

        ``kinds``: the memory kinds searched (facts; add others, such as ``langgraph_item``, to
        recall them the same way)."""
        cfg = self.store.config.context
        limit = cfg.relevant_facts if limit is None else limit
        return search_by_category(self.store, query, categories=categories, namespace=namespace, limit=limit,
                                  kind=list(_kinds(kinds)), min_results=min(cfg.category_min_results, limit),
                                  max_categories=cfg.max_query_categories, categorizer=self.categorizer,
                                  track_access=track_access)

    def search(self, query: str, *, namespace: str = DEFAULT_NAMESPACE, limit: int = 10,
               kinds: Sequence[str] | None = None) -> SearchResults:
        """Seed 004's ``memory_search``: hybrid search over the database and the workspace files together
        (kinds :data:`SEARCH_KINDS` unless given; edited workspace files are re-indexed first)."""
        space = self.workspace(namespace)
        if space is not None and self.store.config.workspace.auto_sync:
            space.sync()
        return self.store.search(query, namespace=namespace, kind=list(kinds or SEARCH_KINDS), limit=limit)

    def salient_facts(self, namespace: str = DEFAULT_NAMESPACE, *, limit: int | None = None,
                      candidates: int = 200) -> list[SalientFact]:
        """Facts at or above ``context.salience_threshold``, most salient first; pinned facts always.

        Reading them does not count as an access (that would keep them salient for ever).
        """
        cfg = self.store.config.context
        limit = cfg.salient_facts if limit is None else limit
        if limit <= 0:
            return []
        now = self.store.clock.now()
        pool = {m.id: m for m in self.store.list(namespace=namespace, kind="fact", order_by="access_count",
                                                   descending=True, limit=candidates)}
        pool.update({m.id: m for m in self.store.list(namespace=namespace, kind="fact", where={"@pinned": 1},
                                                        limit=candidates)})
        out = []
        weight = self.store.config.ranking.score_weight
        for memory in pool.values():
            last = max((t for t in (memory.last_access_at, memory.last_hit_at, memory.created_at) if t is not None),
                       default=now)
            value = salience(memory.access_count, days_between(last, now), memory.score,
                             half_life_days=cfg.salience_half_life_days, score_weight=weight)
            if memory.pinned or is_salient(value, cfg.salience_threshold):
                out.append(SalientFact(memory, value))
        out.sort(key=lambda s: (not s.memory.pinned, -s.salience, s.memory.id))
        return out[:limit]

    def known_facts(self, namespace: str = DEFAULT_NAMESPACE, *, limit: int | None = None,
                    kinds: Sequence[str] = ("fact",), exclude: Collection[str] = ()) -> list[SalientFact]:
        """The namespace's current facts that most belong in every prompt, best first (no threshold).

        Pinned facts first, then by :func:`shared_core.ranking.standing` (importance, accesses,
        feedback, recency); superseded and expired facts never. ``kinds``: also memories of these
        kinds (``("fact", "langgraph_item")``). ``exclude``: ids already shown elsewhere. Reading
        them is not an access.
        """
        store = self.store
        limit = store.config.context.known_facts if limit is None else limit
        if limit <= 0:
            return []
        kind = list(_kinds(kinds))
        now = store.clock.now()
        pool: dict[str, Memory] = {}
        wide = max(50, 5 * limit)
        for order_by, where in (("access_count", None), ("created_at", None), ("score", None),
                                ("created_at", {"@pinned": 1}), ("created_at", {"@importance": {"$gte": 0.7}})):
            for memory in store.list(namespace=namespace, kind=kind, order_by=order_by, descending=True, where=where,
                                     limit=wide):
                if memory.id not in exclude:
                    pool[memory.id] = memory
        ranking = store.config.ranking
        out = []
        for memory in pool.values():
            last = max((t for t in (memory.last_access_at, memory.last_hit_at, memory.created_at) if t is not None),
                       default=now)
            out.append(SalientFact(memory, standing(memory.access_count, days_between(last, now), memory.score,
                                                    memory.importance, score_weight=ranking.score_weight,
                                                    recency_rate=ranking.recency_rate)))
        out.sort(key=lambda s: (not s.memory.pinned, -s.salience, s.memory.id))
        return out[:limit]

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
        return build_addendum(self, conversation_id, query, token_budget, namespace=namespace,
                              include_summary=include_summary, extra_kinds=extra_kinds)

    # -- internals --------------------------------------------------------------------------------

    def _index_file(self, space: Workspace, name: str) -> None:
        reindex(space, name, space.read(name))

    def erase(self, namespace: str) -> None:
        """``erase_namespace`` hook: bookkeeping rows, workspace rows and (after commit) workspace files."""
        self.state.erase(namespace)
        erase_workspace(self.store, namespace)
        self._workspaces = {k: v for k, v in self._workspaces.items() if k[0] != namespace}


def _kinds(kinds: Sequence[str]) -> tuple[str, ...]:
    """Memory kinds as given (a string is one kind), checked: non-empty strings, each once."""
    chosen = (kinds,) if isinstance(kinds, str) else tuple(kinds)
    if not chosen or not all(isinstance(k, str) and k.strip() for k in chosen):
        raise ValueError(f"kinds must be one or more memory kinds such as 'fact' or 'langgraph_item', got {kinds!r}")
    return tuple(dict.fromkeys(chosen))


_SOURCES = {"tool": "tool_result", "assistant": "agent_observation"}  # a user's statement keeps the caller's source


def _known(text: str, current: Sequence[Memory]) -> bool:
    said = " ".join(text.split()).casefold().rstrip(" .!")
    return any(" ".join(m.text.split()).casefold().rstrip(" .!") == said for m in current)


def _folder_name(namespace: str) -> str:
    """A safe folder name for a namespace: itself when it is ``[a-z0-9._-]``, else a slug plus a hash."""
    if re.fullmatch(r"[a-z0-9][a-z0-9._-]{0,63}", namespace) and not namespace.endswith("."):
        return namespace
    slug = re.sub(r"[^a-z0-9]+", "-", namespace.casefold()).strip("-")[:40] or "namespace"
    return f"{slug}-{fnv1a_64(namespace):016x}"


def _stamp(store: Any) -> str:
    tz = store.config.workspace.timezone
    return f"{store.clock.now().astimezone(ZoneInfo(tz)):%Y-%m-%d %H:%M} {tz}"

"""The prompt addendum (seeds 001, 004): what memory adds to the system prompt, within a token budget.

``store.memory_manager.build_context(conversation_id, query, token_budget)`` gathers, for the
conversation's namespace:

================= ============================================================== =========
section           content                                                        seed
================= ============================================================== =========
system_files      AGENTS.md, SOUL.md, USER.md of the workspace                   004
working_summary   the conversation's newest summary: its last compaction, or     001, 000
                  its working-memory summary, whichever is newer
salient_facts     facts at or above the salience threshold, pinned facts first   004
                  (no query needed)
known_facts       always: the namespace's other current facts that most belong   004,
                  in a prompt (pinned, importance, accesses, feedback, recency;  issue 21
                  ``MemoryManager.known_facts``), up to ``context.known_facts``,
                  so a generic question ("What do you know about me?") still
                  gets the user's profile; the query's matches are left to the
                  next section
relevant_facts    three-tier retrieval for the query (categories -> scoped ->    004
                  flat), salient facts left out
learnings         the newest entries of learnings/errors.md and corrections.md,  004, 000
                  then ``store.recall(query)`` (anti-patterns, skills,
                  heuristics, similar tasks) in what is left of the share
episodes          recent episodes and other sessions' end-of-session summaries   001
================= ============================================================== =========

Without a ``query``, the conversation's last user message is the query (none: the query-based
parts are skipped). Superseded facts never appear: not as facts, and not as lines of a summary or
episode that state one word for word. ``extra_kinds`` (say ``("langgraph_item",)``) lets the
known and relevant facts draw on memories of those kinds too. The budget (default ``recall.budget_fraction x recall.task_token_budget``,
seed 000's 20,000 tokens) is filled in that order in two passes: first each section up to its
share (``context.addendum_shares``), then, with what is left, each section again in order.
Items are whole lines (a file or summary is taken line by line); a section stops at the first
line that does not fit. Every token is counted with :func:`shared_core.tokens.count_tokens` on
the line as rendered, headers included, and the rendered text never exceeds the budget.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..clock import to_iso
from ..conversations.service import Conversations
from ..episodes import Episodes
from ..errors import NotFoundError
from ..memories import DEFAULT_NAMESPACE, check_namespace
from ..memories.service import MemoryService
from ..recall import Historian
from ..summarize import split_sentences
from ..tokens import count_tokens
from ..workspace import Workspaces
from .facts import ConversationFacts
from .records import session_key

if TYPE_CHECKING:
    from ..kernel import Kernel
    from ..recall import Recall

__all__ = ["ContextAddendum", "AddendumItem", "build_addendum", "SECTIONS"]

SECTIONS = ("system_files", "working_summary", "salient_facts", "known_facts", "relevant_facts", "learnings",
            "episodes")
MEMORY_TITLE = "## Memory"
_HEADERS = {
    "working_summary": "### Summary of this conversation so far",
    "salient_facts": "### Keep in mind",
    "known_facts": "### Known facts",
    "relevant_facts": "### Relevant facts",
    "learnings": "### Learnings",
    "episodes": "### Recent episodes",
}
_GROUPS = {
    "learnings/errors.md": "#### Tool errors to avoid (learnings/errors.md)",
    "learnings/corrections.md": "#### Corrections from the user (learnings/corrections.md)",
}
_EPISODE_CHARS = 600  # one episode line at most (a session summary can be long)


@dataclass(frozen=True)
class AddendumItem:
    """One line of the addendum: its section, the group it belongs to (a file), its text and cost."""

    section: str
    text: str
    tokens: int
    group: str | None = None  # "## AGENTS.md", "#### Tool errors ..." (rendered before the group's first line)
    id: str | None = None  # the memory's id, for feedback (facts, episodes, summaries)
    score: float | None = None
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass
class ContextAddendum:
    """The addendum as data (items per section) and as text (:meth:`render`)."""

    conversation_id: str | None
    namespace: str
    query: str | None
    token_budget: int
    tokens_used: int = 0
    system_files: list[AddendumItem] = field(default_factory=list)
    working_summary: list[AddendumItem] = field(default_factory=list)
    salient_facts: list[AddendumItem] = field(default_factory=list)
    known_facts: list[AddendumItem] = field(default_factory=list)
    relevant_facts: list[AddendumItem] = field(default_factory=list)
    learnings: list[AddendumItem] = field(default_factory=list)
    episodes: list[AddendumItem] = field(default_factory=list)
    recall: Recall | None = None
    categories: tuple[str, ...] = ()
    left_out: dict[str, int] = field(default_factory=dict)  # lines that did not fit, per section

    @property
    def items(self) -> list[AddendumItem]:
        return [item for section in SECTIONS for item in getattr(self, section)]

    @property
    def ids(self) -> list[str]:
        """Memory ids shown (facts, episodes, summaries, recalled learnings): for ``store.recall.mark_useful``."""
        ids = [i.id for i in self.items if i.id]
        return list(dict.fromkeys([*ids, *(self.recall.ids if self.recall else [])]))

    @property
    def system_prompt(self) -> str:
        """The workspace files for the system prompt ("" when there are none)."""
        return _render_lines(self.system_files)

    @property
    def memory_prompt(self) -> str:
        """Everything else, under ``## Memory`` ("" when there is nothing)."""
        parts = []
        for section in SECTIONS[1:]:
            items: list[AddendumItem] = getattr(self, section)
            recall = self.recall.render() if section == "learnings" and self.recall else ""
            if items or recall:
                block = [_HEADERS[section]]
                if items:
                    block.append(_render_lines(items))
                if recall:
                    block.append(recall)
                parts.append("\n".join(block))
        return "\n".join([MEMORY_TITLE, *parts]) if parts else ""

    def render(self) -> str:
        """The whole addendum as Markdown: system files, then ``## Memory`` ("" when empty)."""
        return "\n\n".join(p for p in (self.system_prompt, self.memory_prompt) if p)

    def __str__(self) -> str:
        return self.render()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"conversation_id": self.conversation_id, "namespace": self.namespace,
                               "query": self.query, "token_budget": self.token_budget,
                               "tokens_used": self.tokens_used, "categories": list(self.categories),
                               "left_out": dict(self.left_out)}
        for section in SECTIONS:
            out[section] = [{"text": i.text, "tokens": i.tokens, "group": i.group, "id": i.id, "score": i.score,
                             **i.detail} for i in getattr(self, section)]
        out["recall"] = self.recall.render() if self.recall else ""
        out["text"] = self.render()
        return out

    def _repr_html_(self) -> str:
        rows = "".join(f"<tr><td>{html.escape(i.section)}</td><td>{i.tokens}</td>"
                       f"<td style='text-align:left'>{html.escape(i.text)}</td></tr>" for i in self.items)
        caption = (f"<caption>context for {html.escape(str(self.conversation_id))}: {self.tokens_used} of "
                   f"{self.token_budget} tokens</caption>")
        return f"<table>{caption}<tr><th>section</th><th>tokens</th><th>line</th></tr>{rows}</table>"


def _render_lines(items: list[AddendumItem]) -> str:
    lines: list[str] = []
    group: str | None = None
    for item in items:
        if item.group is not None and item.group != group:
            if lines and item.group.startswith("## "):
                lines.append("")
            lines.append(item.group)
            group = item.group
        lines.append(item.text)
    return "\n".join(lines)


class _Budget:
    """Charges lines (and the headers they open) against the total, never going past it."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.used = 0
        self.opened: set[str] = set()

    def cost(self, item: AddendumItem) -> int:
        extra = 0
        if item.section != "system_files":
            if "title" not in self.opened:
                extra += count_tokens(MEMORY_TITLE + "\n") + 1  # + the blank line before it
            if item.section not in self.opened:
                extra += count_tokens(_HEADERS[item.section] + "\n")
        if item.group is not None and (item.section, item.group) not in self.opened:
            extra += count_tokens(item.group + "\n") + 1
        return item.tokens + extra

    def take(self, item: AddendumItem, limit: int) -> bool:
        cost = self.cost(item)
        if self.used + cost > min(limit, self.total):
            return False
        self.used += cost
        if item.section != "system_files":
            self.opened.update(("title", item.section))
        if item.group is not None:
            self.opened.add((item.section, item.group))  # type: ignore[arg-type]
        return True


def _line(section: str, text: str, **kw: Any) -> AddendumItem:
    return AddendumItem(section, text, count_tokens(text + "\n"), **kw)


def build_addendum(facts: ConversationFacts, conversation_id: str | None, query: str | None,
                   token_budget: int | None, *, namespace: str | None = None,
                   include_summary: bool = True, extra_kinds: Sequence[str] = ()) -> ContextAddendum:
    """See the module docs. ``include_summary=False`` leaves out the conversation's summary (for callers
    whose messages already carry it as a ``[Compacted history]`` message). ``extra_kinds``: memory
    kinds besides facts that the known and relevant facts draw on (``("langgraph_item",)``)."""
    if isinstance(extra_kinds, str):
        extra_kinds = (extra_kinds,)
    if not all(isinstance(k, str) and k.strip() for k in extra_kinds):
        raise ValueError(f"extra_kinds must be memory kinds such as 'langgraph_item', got {extra_kinds!r}")
    kinds = tuple(dict.fromkeys(("fact", *extra_kinds)))
    kernel = facts.kernel
    cfg = kernel.config.context
    if token_budget is None:
        token_budget = int(kernel.config.recall.task_token_budget * kernel.config.recall.budget_fraction)
    if isinstance(token_budget, bool) or not isinstance(token_budget, int) or token_budget < 0:
        raise ValueError(f"token_budget must be a non-negative whole number of tokens, got {token_budget!r}")
    if query is not None and not isinstance(query, str):
        raise TypeError(f"query must be a string or None, got {type(query).__name__}")
    session = None
    conversations = kernel.service(Conversations)
    if conversation_id is not None:
        try:  # with a namespace, another namespace's conversation is none of this one's (its messages stay out)
            session = conversations.session(conversation_id, namespace=namespace)
        except NotFoundError:
            session = None  # a conversation kept elsewhere (a LangGraph thread): only compactions know it
    ns = check_namespace(namespace or (session.namespace if session else DEFAULT_NAMESPACE))
    if (query is None or not query.strip()) and session is not None:
        last = [m for m in conversations.messages(session.id, last=20) if m.role == "user" and m.content.strip()]
        query = last[-1].content if last else None
    query = query.strip() if query and query.strip() else None
    result = ContextAddendum(conversation_id, ns, query, token_budget)
    space = kernel.service(Workspaces).get(ns)
    if space is not None and kernel.config.workspace.auto_sync and not kernel.backend.read_only:
        space.sync()

    # candidate lines per section, in the order they are taken
    candidates: dict[str, list[AddendumItem]] = {name: [] for name in SECTIONS}
    if space is not None:
        for file in space.system_files():
            for line in file.text.splitlines():
                candidates["system_files"].append(_line("system_files", line, group=f"## {file.name}"))
    stale = _superseded(kernel, ns)
    summary = _working_summary(facts, session, conversation_id, ns) if include_summary else None
    if summary is not None:
        text, summary_id = summary
        for line in text.splitlines():
            for piece in (split_sentences(line) if len(line) > 400 else [line]):
                if _normal(piece) not in stale:  # a fact the summary kept that was corrected since
                    candidates["working_summary"].append(_line("working_summary", piece, id=summary_id))
    salient = facts.salient_facts(ns)
    shown = set()
    for fact in salient:
        shown.add(fact.memory.id)
        candidates["salient_facts"].append(_line("salient_facts", f"- {fact.memory.text}", id=fact.memory.id,
                                                 score=fact.salience, detail={"category": fact.memory.category}))
    if query is not None and cfg.relevant_facts > 0:
        found = facts.recall_facts(query, namespace=ns, limit=cfg.relevant_facts + len(shown), kinds=kinds)
        result.categories = found.categories
        for hit in found.hits:
            if hit.id in shown or len(candidates["relevant_facts"]) >= cfg.relevant_facts:
                continue
            candidates["relevant_facts"].append(_line(
                "relevant_facts", f"- {hit.text}", id=hit.id, score=hit.score,
                detail={"category": hit.memory.category, "tier": found.tier_of(hit.id), **_kind(hit.memory)}))
    # the query's matches are listed as relevant; the known facts are the others (and come first), less
    # those the conversation's summary already states
    stated = {_normal(i.text) for i in candidates["working_summary"]}
    for fact in facts.known_facts(ns, kinds=kinds, exclude=shown | {i.id for i in candidates["relevant_facts"] if i.id is not None}):
        if _normal(fact.memory.text) in stated:
            continue
        candidates["known_facts"].append(_line("known_facts", f"- {fact.memory.text}", id=fact.memory.id,
                                               score=fact.salience,
                                               detail={"category": fact.memory.category, **_kind(fact.memory)}))
    if space is not None and cfg.learnings_entries > 0:
        for name in kernel.config.workspace.learnings_files:
            for entry in space.learnings(name, limit=cfg.learnings_entries):
                candidates["learnings"].append(_line("learnings", entry.render(), group=_GROUPS.get(name, f"#### {name}")))
    for when, text, memory_id in _episodes(kernel, ns, conversation_id, stale)[: cfg.recent_episodes]:
        candidates["episodes"].append(_line("episodes", text, id=memory_id, detail={"at": to_iso(when)}))

    budget = _Budget(token_budget)
    shares = cfg.addendum_shares
    taken: dict[str, int] = {name: 0 for name in SECTIONS}

    def fill(section: str, limit: int) -> None:
        items = candidates[section]
        while taken[section] < len(items) and budget.take(items[taken[section]], limit):
            getattr(result, section).append(items[taken[section]])
            taken[section] += 1

    for section in SECTIONS:  # pass 1: each section up to its share
        limit = budget.used + int(shares[section] * token_budget)
        fill(section, limit)
        if section == "learnings" and query is not None:
            result.recall = _recall(kernel, query, ns, budget, limit - budget.used)
    for section in SECTIONS:  # pass 2: what is left, in the same order
        fill(section, token_budget)
    result.left_out = {s: len(candidates[s]) - taken[s] for s in SECTIONS if len(candidates[s]) > taken[s]}
    _fit(result, token_budget)
    return result


def _recall(kernel: Kernel, query: str, namespace: str, budget: _Budget, allowance: int) -> Any:
    """``store.recall`` within what the learnings share has left (its own headers counted by it)."""
    extra = 0 if "learnings" in budget.opened else count_tokens(_HEADERS["learnings"] + "\n")
    if "title" not in budget.opened:
        extra += count_tokens(MEMORY_TITLE + "\n") + 1
    room = min(allowance, budget.total - budget.used) - extra - 1
    if room <= 0:
        return None
    recall = kernel.service(Historian)(query, token_budget=room, namespace=namespace)
    if not recall:
        return None
    budget.used += recall.tokens_used + extra + 1
    budget.opened.update(("title", "learnings"))
    return recall


def _fit(result: ContextAddendum, budget: int) -> None:
    """Count the rendered text; in the rare case that tokenising it whole costs more than its parts, drop lines."""
    used = count_tokens(result.render())
    order = [s for s in reversed(SECTIONS)]
    while used > budget:
        for section in order:
            items = getattr(result, section)
            if items:
                items.pop()
                result.left_out[section] = result.left_out.get(section, 0) + 1
                break
        else:
            if result.recall is None:
                break
            result.recall = None
        used = count_tokens(result.render())
    result.tokens_used = used


def _working_summary(facts: ConversationFacts, session: Any, conversation_id: str | None,
                     namespace: str) -> tuple[str, str | None] | None:
    """(text, memory id) of the newest summary of the conversation: its last compaction or working summary."""
    if conversation_id is None:
        return None
    found: list[tuple[datetime, str, str | None]] = []
    with facts.kernel.session():
        compactions = facts.repository.events(session_key(conversation_id, namespace), action="compact", limit=1)
    if compactions and compactions[0].summary.strip():
        found.append((compactions[0].created_at, compactions[0].summary, compactions[0].summary_id))
    if session is not None:
        working = facts.kernel.service(Conversations).working_memory(session.id, summarize=False)
        if working.summary is not None and working.summary.created_at is not None:
            found.append((working.summary.created_at, working.summary.summary, None))
    if not found:
        return None
    found.sort(key=lambda f: f[0])
    return found[-1][1], found[-1][2]


def _kind(memory: Any) -> dict[str, str]:
    """``{"kind": ...}`` for a memory that is not a fact (an extra kind), else nothing."""
    return {} if memory.kind == "fact" else {"kind": memory.kind}


def _normal(line: str) -> str:
    """A line as a fact's text: list marker, case, spacing and the final full stop do not count."""
    return " ".join(line.strip().removeprefix("- ").split()).casefold().rstrip(" .!")


def _superseded(kernel: Kernel, namespace: str, limit: int = 1000) -> frozenset[str]:
    """The texts of the namespace's superseded facts (the newest ``limit``), as :func:`_normal` has them,
    less those a current fact still says (a fact corrected back to what it was)."""
    memories = kernel.service(MemoryService)
    old = memories.list(namespace=namespace, kind="fact", where={"@valid_to": {"$exists": True}},
                        include_superseded=True, order_by="updated_at", descending=True, limit=limit)
    if not old:
        return frozenset()
    texts = {_normal(m.text) for m in old if m.valid_to is not None}
    current = memories.list(namespace=namespace, kind="fact", where={"@text": {"$in": [m.text for m in old]}})
    return frozenset(texts - {_normal(m.text) for m in current})


def _episodes(kernel: Kernel, namespace: str, conversation_id: str | None,
              stale: frozenset[str] = frozenset()) -> list[tuple[datetime, str, str]]:
    """Recent episodes and other conversations' end-of-session summaries, newest first, as lines."""
    limit = kernel.config.context.recent_episodes
    if limit <= 0:
        return []
    out: list[tuple[datetime, str, str]] = []
    for episode in kernel.service(Episodes).recent(limit, namespace=namespace):
        where = f" ({episode.channel})" if episode.channel else ""
        out.append((episode.occurred_at, _clip(f"- {episode.occurred_at:%Y-%m-%d}{where}: {episode.summary}"),
                    episode.id))
    for memory in kernel.service(MemoryService).list(namespace=namespace, kind="summary",
                                                     where={"summary_type": "session_end"}, order_by="created_at",
                                                     descending=True, limit=limit + 1):
        if conversation_id is not None and memory.session_id == conversation_id:
            continue
        assert memory.created_at is not None
        text = " ".join(line.removeprefix("- ").strip() for line in memory.text.splitlines()
                        if line.strip() and _normal(line) not in stale)
        out.append((memory.created_at, _clip(f"- {memory.created_at:%Y-%m-%d} (session {memory.session_id}): {text}"),
                    memory.id))
    out.sort(key=lambda e: e[0], reverse=True)
    return out


def _clip(text: str, limit: int = _EPISODE_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."

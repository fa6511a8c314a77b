"""Memory tools for agents (seed 002's five, seed 004's three), bound to a store and a namespace.

The model drives recall (seed 002): it stores facts, queries with its own keywords and
synonyms, and reinforces (+3) what helped or demotes (-1) what was wrong or stale; results
show ``[id:...]`` so it can. Seed 004 adds ``memory_save`` (the fact in the database and the
workspace's daily log: ``store.memory_manager.memory_save``), ``memory_recall`` (facts,
category first with a flat fallback: ``recall_facts``) and ``memory_search`` (the database and
the workspace files together: ``memory_manager.search``, plus LangGraph store items).
Failures come back to the model as error tool messages, never as exceptions in the agent loop.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool, ToolException
from pydantic import BaseModel, Field

from shared_core import Memory, MemoryStore, OpenKoiError
from shared_core.context.memory_manager import SEARCH_KINDS
from shared_core.memories import DEFAULT_NAMESPACE
from shared_core.search import Hit

from ._core import core_store
from .langgraph_store import ITEM_KIND, encode_namespace

__all__ = ["create_memory_tools", "TOOL_NAMES", "format_hits"]

TOOL_NAMES = (
    "memory_store", "memory_query", "memory_reinforce", "memory_demote", "memory_update",
    "memory_recall", "memory_search", "memory_save",
)
_MAX_LIMIT = 50


class _StoreArgs(BaseModel):
    content: str = Field(description="One self-contained fact, decision or preference, written clearly and correctly spelled.")
    tags: str = Field(default="", description="Comma-separated keywords that help find it later, e.g. 'payments, hmac, api'.")


class _QueryArgs(BaseModel):
    query: str = Field(description="Keywords and natural synonyms, not a question: e.g. 'payment HMAC signature api auth'.")
    limit: int = Field(default=5, ge=1, le=_MAX_LIMIT, description="How many memories to return at most.")


class _IdArgs(BaseModel):
    id: str = Field(description="The memory's id, as shown in [id:...] in search results.")


class _UpdateArgs(BaseModel):
    id: str = Field(description="The memory's id, as shown in [id:...] in search results.")
    content: str = Field(description="The corrected content, replacing the old text.")
    tags: str | None = Field(default=None, description="New comma-separated tags; leave out to keep the old ones.")


class _RecallArgs(BaseModel):
    query: str = Field(description="What to recall, e.g. 'name of the user's cat'.")
    category: str | None = Field(default=None, description="A category to look in first, e.g. 'pets' or 'work'; leave out to let the search pick.")
    limit: int = Field(default=5, ge=1, le=_MAX_LIMIT, description="How many facts to return at most.")


class _SaveArgs(BaseModel):
    content: str = Field(description="The fact to keep across sessions, e.g. \"The user's cat is called Whiskerino\".")
    category: str | None = Field(default=None, description="A short category such as 'pets', 'work', 'preferences'.")
    tags: str = Field(default="", description="Optional comma-separated keywords.")


def create_memory_tools(
    store: Any,
    namespace: str | Sequence[str] = DEFAULT_NAMESPACE,
    *,
    include: Sequence[str] | None = None,
    on_save: Callable[[Memory], None] | None = None,
    categorize: Callable[[str], str | None] | None = None,
) -> list[BaseTool]:
    """The memory tools, bound to ``store`` and ``namespace`` (a core namespace, or a LangGraph tuple).

    ``include``: the tool names to build (default: all of :data:`TOOL_NAMES`). ``on_save(memory)``
    runs after ``memory_save`` wrote its fact (and the workspace's daily log line).
    ``categorize(text)`` picks a category for saved facts that come without one.
    """
    core = core_store(store)
    bound = namespace if isinstance(namespace, str) else encode_namespace(namespace)
    core.count(namespace=bound)  # validates the namespace now
    chosen = TOOL_NAMES if include is None else tuple(include)
    unknown = sorted(set(chosen) - set(TOOL_NAMES))
    if unknown:
        raise ValueError(f"unknown memory tools {unknown}; choose from {', '.join(TOOL_NAMES)}")
    tools = _Tools(core, bound, on_save, categorize)
    return [tools.build(name) for name in chosen]


class _Tools:
    def __init__(self, store: MemoryStore, namespace: str, on_save: Any, categorize: Any) -> None:
        self.store = store
        self.namespace = namespace
        self.on_save = on_save
        self.categorize = categorize

    def build(self, name: str) -> BaseTool:
        func, schema, description = _SPECS[name]

        def run(**kwargs: Any) -> str:
            try:
                return func(self, **kwargs)
            except (OpenKoiError, ValueError, TypeError, KeyError) as exc:
                raise ToolException(f"Error: {exc}") from exc

        return StructuredTool.from_function(
            func=run, name=name, description=description, args_schema=schema, handle_tool_error=True,
        )

    # -- seed 002 ---------------------------------------------------------------------------

    def memory_store(self, content: str, tags: str = "") -> str:
        result = self.store.add(content, tags=tags, namespace=self.namespace, source="agent")
        if result.event == "reinforced":
            existing = self.store.get(result.id)
            return f"Already remembered, reinforced instead: [id:{result.id}] {existing.text}"
        return f"Stored [id:{result.id}]"

    def memory_query(self, query: str, limit: int = 5) -> str:
        hits = self.store.search(query, namespace=self.namespace, kind="fact", limit=limit)
        return format_hits(hits) or "No memories matched. Try other keywords or synonyms (up to 3 rounds)."

    def memory_reinforce(self, id: str) -> str:  # noqa: A002 - the tool's argument name
        memory = self.store.reinforce(_bare_id(id), namespace=self.namespace)
        return f"Reinforced [id:{memory.id}]: score now {memory.score:+g}"

    def memory_demote(self, id: str) -> str:  # noqa: A002
        memory = self.store.demote(_bare_id(id), namespace=self.namespace)
        return f"Demoted [id:{memory.id}]: score now {memory.score:+g}"

    def memory_update(self, id: str, content: str, tags: str | None = None) -> str:  # noqa: A002
        memory = self.store.update(_bare_id(id), content, tags=tags, namespace=self.namespace)
        return f"Updated [id:{memory.id}] {memory.text}"

    # -- seed 004 ---------------------------------------------------------------------------

    def memory_recall(self, query: str, category: str | None = None, limit: int = 5) -> str:
        found = self.store.memory_manager.recall_facts(
            query, namespace=self.namespace, categories=[category] if category else None, limit=limit,
        )
        return format_hits(found.hits) or "No facts matched. Try other words, or memory_search for everything."

    def memory_search(self, query: str, limit: int = 5) -> str:
        # the core's memory_search kinds (database and workspace files), plus this adapter's LangGraph store items
        hits = self.store.memory_manager.search(query, namespace=self.namespace, limit=limit,
                                                kinds=(*SEARCH_KINDS, ITEM_KIND))
        return format_hits(hits) or "Nothing matched in memory."

    def memory_save(self, content: str, category: str | None = None, tags: str = "") -> str:
        if not category and self.categorize is not None:
            category = self.categorize(content)
        saved = self.store.memory_manager.memory_save(content, namespace=self.namespace, category=category or None,
                                                      tags=tags)
        memory = saved.memory
        if self.on_save is not None:
            self.on_save(memory)
        if saved.event == "reinforced":
            return f"Already known, reinforced: [id:{memory.id}] {memory.text}"
        where = f" in {memory.category}" if memory.category else ""
        return f"Saved [id:{memory.id}]{where}"


_SPECS: dict[str, tuple[Callable[..., str], type[BaseModel], str]] = {
    "memory_store": (_Tools.memory_store, _StoreArgs, (
        "Remember one fact, decision, preference or piece of context for later sessions. Write it clean and "
        "self-contained; add tags with keywords. Returns its [id:...].")),
    "memory_query": (_Tools.memory_query, _QueryArgs, (
        "Search long-term memory by keywords. Pass key nouns and natural synonyms, not a question "
        "(e.g. 'api auth authentication signature hmac'). Query again with other words if results are thin "
        "(up to 3 rounds). Results show [id:...] for memory_reinforce, memory_demote and memory_update.")),
    "memory_reinforce": (_Tools.memory_reinforce, _IdArgs, (
        "Mark a memory as useful (score +3) after it helped you answer; it will rank higher next time.")),
    "memory_demote": (_Tools.memory_demote, _IdArgs, (
        "Mark a memory as wrong, stale or irrelevant (score -1); it will rank lower. "
        "Use memory_update instead when you know the correct content.")),
    "memory_update": (_Tools.memory_update, _UpdateArgs, (
        "Correct a memory in place (keeps its score, refreshes it). Give the id and the corrected content.")),
    "memory_recall": (_Tools.memory_recall, _RecallArgs, (
        "Recall stored facts about the user or the task by meaning, e.g. after a restart "
        "('what is my cat called?'). Optionally name a category to look in first; "
        "falls back to all facts when the category has too few.")),
    "memory_search": (_Tools.memory_search, _QueryArgs, (
        "Search everything remembered in this memory (facts, learnings, documents, notes, workspace files) "
        "with keyword and semantic matching together.")),
    "memory_save": (_Tools.memory_save, _SaveArgs, (
        "Save a fact worth keeping across sessions and restarts (e.g. names, preferences, decisions), "
        "optionally with a category. Returns its [id:...].")),
}


def format_hits(hits: Sequence[Hit]) -> str:
    """One line per hit: ``[id:...] text (kind; category; tags; score)``, best first."""
    lines = []
    for hit in hits:
        memory = hit.memory
        details = [memory.kind]
        if memory.category:
            details.append(f"category {memory.category}")
        if memory.tags:
            details.append("tags " + ", ".join(memory.tags))
        details.append(f"score {hit.score:.3f}")
        lines.append(f"[id:{memory.id}] {memory.text} ({'; '.join(details)})")
    return "\n".join(lines)


def _bare_id(value: str) -> str:
    """Accept ``abc``, ``id:abc`` and ``[id:abc]`` alike: models copy the id as they saw it."""
    text = value.strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1].strip()
    if text.startswith("id:"):
        text = text[3:].strip()
    return text

"""The tools an agent calls, framework-free: memory (seeds 002 and 004) and knowledge base (seed 003).

Each tool is a :class:`ToolSpec` (name, description, parameters with a JSON schema) and a
method of :class:`MemoryTools` that takes plain arguments and returns text for the model.
The LangChain tools (``langchain_openkoi.create_memory_tools``) and the MCP server
(``openkoi-memory mcp``) are thin wrappers over this module; neither re-implements a tool.

* seed 002: ``memory_store``, ``memory_query`` (keywords the model picks), ``memory_reinforce``
  (+3), ``memory_demote`` (-1), ``memory_update`` (in place); results show ``[id:...]`` so the
  model can give feedback;
* seed 004: ``memory_save`` (a fact, then the ``on_save`` hook: a workspace appends it to its
  daily log there), ``memory_recall`` (facts, category first, flat fallback), ``memory_search``
  (every kind of memory in the namespace);
* seed 003: ``searchKnowledgeBase(query, limit, documentIds?)``, ``getFullDocumentContent(documentId)``,
  ``listKnowledgeBaseDocuments(limit)``.

A model is given a small set without overlap by default (:data:`DEFAULT_TOOL_NAMES` in LangChain,
:data:`MCP_DEFAULT_TOOL_NAMES` over MCP); :func:`tool_names` reads a choice such as ``"all"``.

>>> from shared_core import MemoryStore
>>> with MemoryStore.open(":memory:") as store:
...     tools = MemoryTools(store, namespace="user:alice")
...     print(tools.call("memory_store", {"content": "Alice drinks oolong", "tags": "tea"})[:10])
...     print(tools.call("memory_query", {"query": "oolong tea"}).split("] ")[1][:19])
Stored [id
Alice drinks oolong
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from .context.memory_manager import SEARCH_KINDS
from .memories import DEFAULT_NAMESPACE, Memory, check_namespace
from .search import Hit

if TYPE_CHECKING:
    from .store import MemoryStore

__all__ = [
    "MemoryTools",
    "ToolParam",
    "ToolSpec",
    "TOOL_SPECS",
    "MEMORY_TOOL_NAMES",
    "DEFAULT_TOOL_NAMES",
    "KNOWLEDGE_BASE_TOOL_NAMES",
    "MCP_DEFAULT_TOOL_NAMES",
    "tool_names",
    "format_hits",
    "bare_id",
]

MEMORY_TOOL_NAMES = (
    "memory_store", "memory_query", "memory_reinforce", "memory_demote", "memory_update",
    "memory_recall", "memory_search", "memory_save",
)
# what a model is given by default: one tool that writes, one that reads, without overlap (LangMem gives two,
# manage and search). memory_save's fact goes through the core's write rule (a restatement reinforces, a new
# value of a known fact supersedes it), so a correction is saved like any fact; memory_search reads every kind
# of memory in the namespace. The other tools stay available by name.
DEFAULT_TOOL_NAMES = ("memory_save", "memory_search")
KNOWLEDGE_BASE_TOOL_NAMES = ("searchKnowledgeBase", "getFullDocumentContent", "listKnowledgeBaseDocuments")
# what an MCP host's model is given by default: the same two, plus what only the knowledge base does for a user
# who uploaded documents (list them, read one whole). memory_search already finds their passages, each naming its
# [doc:...], so searchKnowledgeBase would be a second search; it stays available by name.
MCP_DEFAULT_TOOL_NAMES = (*DEFAULT_TOOL_NAMES, "listKnowledgeBaseDocuments", "getFullDocumentContent")
MAX_LIMIT = 50
MAX_QUERY = 10_000  # characters of a query: longer ones say nothing more and cost the search its speed
MAX_CONTENT = 100_000  # characters of a memory written by a tool
MAX_TAGS = 100  # comma-separated tags of one memory
MAX_NAME = 200  # an id, a category, a tag
# Kinds whose vectors are placeholders, not content (LangGraph items put with index=False):
# searches over "every kind" leave them out.

_REQUIRED: Any = object()
_JSON_TYPES = {"string": str, "integer": int, "boolean": bool, "array": list}


@dataclass(frozen=True)
class ToolParam:
    """One argument of a tool: a JSON-schema type, a description, a default (absent: required)."""

    name: str
    type: str  # string | integer | boolean | array (of strings)
    description: str
    default: Any = _REQUIRED
    nullable: bool = False
    minimum: int | None = None
    maximum: int | None = None
    min_length: int | None = None
    max_length: int | None = None  # characters of a string, items of an array
    max_items: int | None = None  # comma-separated items of a string (tags)

    @property
    def required(self) -> bool:
        return self.default is _REQUIRED

    def schema(self) -> dict[str, Any]:
        """This argument as a JSON schema."""
        out: dict[str, Any] = {"type": [self.type, "null"] if self.nullable else self.type,
                               "description": self.description}
        if self.type == "array":
            out["items"] = {"type": "string"}
        if self.minimum is not None:
            out["minimum"] = self.minimum
        if self.maximum is not None:
            out["maximum"] = self.maximum
        if self.min_length is not None:
            out["minLength"] = self.min_length
        if self.max_length is not None:
            out["maxItems" if self.type == "array" else "maxLength"] = self.max_length
        if not self.required:
            out["default"] = self.default
        return out

    def check(self, value: Any) -> Any:
        """``value`` if it fits this argument, else a ``ValueError`` that says what fits."""
        if value is None:
            if self.nullable or (not self.required and self.default is None):
                return None
            raise ValueError(f"{self.name} must not be null")
        expected = _JSON_TYPES[self.type]
        fits = isinstance(value, expected)  # kept apart from the test: value stays Any for the checks below
        if isinstance(value, bool) and self.type != "boolean" or not fits:
            raise ValueError(f"{self.name} must be a{'n' if self.type[0] in 'aeiou' else ''} {self.type}, "
                             f"got {type(value).__name__}")
        if self.type == "array" and not all(isinstance(item, str) for item in value):
            raise ValueError(f"{self.name} must be a list of strings")
        for text in value if self.type == "array" else [value] if self.type == "string" else []:
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:  # a lone surrogate: it must not reach the store (nor its caches)
                raise ValueError(f"{self.name} is not valid Unicode (it holds a lone surrogate such as \\ud800); "
                                 "send UTF-8 text") from None
        if self.minimum is not None and value < self.minimum:
            raise ValueError(f"{self.name} must be at least {self.minimum}, got {value}")
        if self.maximum is not None and value > self.maximum:
            raise ValueError(f"{self.name} must be at most {self.maximum}, got {value}")
        if self.min_length is not None and len(value) < self.min_length:
            raise ValueError(f"{self.name} must not be empty")
        if self.max_length is not None and len(value) > self.max_length:
            unit = "items" if self.type == "array" else "characters"
            raise ValueError(f"{self.name} has {len(value):,} {unit}; at most {self.max_length:,} are accepted"
                             + (" (use fewer, more specific keywords)" if "query" in self.name.lower() else ""))
        if self.type == "array" and any(len(item) > MAX_NAME for item in value):
            raise ValueError(f"{self.name}: each item has at most {MAX_NAME} characters")
        if self.max_items is not None and isinstance(value, str):
            count = sum(1 for part in value.split(",") if part.strip())
            if count > self.max_items:
                raise ValueError(f"{self.name} has {count:,} comma-separated items; at most {self.max_items} are "
                                 "accepted")
        return value


@dataclass(frozen=True)
class ToolSpec:
    """A tool: its name, what it does (for the model), its arguments, and whether it only reads."""

    name: str
    description: str
    params: tuple[ToolParam, ...]
    read_only: bool = False

    def input_schema(self, extra: Sequence[ToolParam] = ()) -> dict[str, Any]:
        """The JSON schema of the arguments (an object; unknown arguments are refused)."""
        params = (*self.params, *extra)
        return {
            "type": "object",
            "properties": {p.name: p.schema() for p in params},
            "required": [p.name for p in params if p.required],
            "additionalProperties": False,
        }

    def bind(self, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
        """Checked arguments with defaults filled in; a ``ValueError`` naming what is wrong otherwise."""
        given = dict(arguments or {})
        known = {p.name: p for p in self.params}
        unknown = sorted(set(given) - set(known))
        if unknown:
            raise ValueError(f"{self.name} has no argument {unknown[0]!r}; its arguments: {', '.join(known) or 'none'}")
        bound: dict[str, Any] = {}
        for param in self.params:
            if param.name in given:
                bound[param.name] = param.check(given[param.name])
            elif param.required:
                raise ValueError(f"{self.name} needs the argument {param.name!r} ({param.description})")
            else:
                bound[param.name] = param.default
        return bound


_ID = ToolParam("id", "string", "The memory's id, as shown in [id:...] in search results.", min_length=1,
                max_length=MAX_NAME)
_QUERY: dict[str, Any] = {"min_length": 1, "max_length": MAX_QUERY}
_CONTENT: dict[str, Any] = {"min_length": 1, "max_length": MAX_CONTENT}
_TAGS: dict[str, Any] = {"max_length": MAX_TAGS * (MAX_NAME + 2), "max_items": MAX_TAGS}
_LIMIT = ToolParam("limit", "integer", "How many memories to return at most.", default=5, minimum=1, maximum=MAX_LIMIT)

TOOL_SPECS: dict[str, ToolSpec] = {spec.name: spec for spec in (
    ToolSpec("memory_store", (
        "Remember one fact, decision, preference or piece of context for later sessions. Write it clean and "
        "self-contained; add tags with keywords. Returns its [id:...]."), (
        ToolParam("content", "string", "One self-contained fact, decision or preference, written clearly and "
                  "correctly spelled.", **_CONTENT),
        ToolParam("tags", "string", "Comma-separated keywords that help find it later, e.g. 'payments, hmac, api' "
                  f"(at most {MAX_TAGS}).", default="", **_TAGS),
    )),
    ToolSpec("memory_query", (
        "Search long-term memory by keywords. Pass key nouns and natural synonyms, not a question "
        "(e.g. 'api auth authentication signature hmac'). Query again with other words if results are thin "
        "(up to 3 rounds). Results show [id:...] for memory_reinforce, memory_demote and memory_update."), (
        ToolParam("query", "string", "Keywords and natural synonyms, not a question: e.g. 'payment HMAC signature "
                  "api auth'.", **_QUERY),
        _LIMIT,
    ), read_only=True),
    ToolSpec("memory_reinforce", (
        "Mark a memory as useful (score +3) after it helped you answer; it will rank higher next time."), (_ID,)),
    ToolSpec("memory_demote", (
        "Mark a memory as wrong, stale or irrelevant (score -1); it will rank lower. "
        "Use memory_update instead when you know the correct content."), (_ID,)),
    ToolSpec("memory_update", (
        "Correct a memory in place (keeps its score, refreshes it). Give the id and the corrected content."), (
        _ID,
        ToolParam("content", "string", "The corrected content, replacing the old text.", **_CONTENT),
        ToolParam("tags", "string", "New comma-separated tags; leave out to keep the old ones.", default=None,
                  nullable=True, **_TAGS),
    )),
    ToolSpec("memory_recall", (
        "Recall stored facts about the user or the task by meaning, e.g. after a restart "
        "('what is my cat called?'). Optionally name a category to look in first; "
        "falls back to all facts when the category has too few."), (
        ToolParam("query", "string", "What to recall, e.g. 'name of the user's cat'.", **_QUERY),
        ToolParam("category", "string", "A category to look in first, e.g. 'pets' or 'work'; leave out to let "
                  "the search pick.", default=None, nullable=True, max_length=MAX_NAME),
        replace(_LIMIT, description="How many facts to return at most."),
    ), read_only=True),
    ToolSpec("memory_search", (
        "Search everything remembered in this memory (facts, learnings, documents, notes, workspace files) with "
        "keyword and semantic matching together."), (
        ToolParam("query", "string", "Keywords and natural synonyms, not a question: e.g. 'payment HMAC signature "
                  "api auth'.", **_QUERY),
        _LIMIT,
    ), read_only=True),
    ToolSpec("memory_save", (
        "Save a fact worth keeping across sessions and restarts (e.g. names, preferences, decisions), "
        "optionally with a category. Returns its [id:...]."), (
        ToolParam("content", "string", "The fact to keep across sessions, e.g. \"The user's cat is called "
                  "Whiskerino\".", **_CONTENT),
        ToolParam("category", "string", "A short category such as 'pets', 'work', 'preferences'.", default=None,
                  nullable=True, max_length=MAX_NAME),
        ToolParam("tags", "string", "Optional comma-separated keywords.", default="", **_TAGS),
    )),
    ToolSpec("searchKnowledgeBase", (
        "Search the user's uploaded documents (PDF, Word, spreadsheets, slides, text) for passages about a "
        "question. Returns the best chunks with their document id [doc:...], file name and location; read a "
        "whole document with getFullDocumentContent."), (
        ToolParam("query", "string", "What to look for, in words likely to appear in the documents.", **_QUERY),
        ToolParam("limit", "integer", "How many chunks to return at most.", default=5, minimum=1,
                  maximum=MAX_LIMIT),
        ToolParam("documentIds", "array", "Only search these documents (ids from listKnowledgeBaseDocuments or "
                  "earlier results); leave out to search them all.", default=None, nullable=True, max_length=1000),
    ), read_only=True),
    ToolSpec("getFullDocumentContent", (
        "Read the complete extracted text of one knowledge-base document, by its id [doc:...]."), (
        ToolParam("documentId", "string", "The document's id, as shown in [doc:...].", min_length=1,
                  max_length=MAX_NAME),
    ), read_only=True),
    ToolSpec("listKnowledgeBaseDocuments", (
        "List the most recently uploaded knowledge-base documents with their ids, file names and sizes."), (
        ToolParam("limit", "integer", "How many documents to list at most.", default=20, minimum=1,
                  maximum=200),
    ), read_only=True),
)}


@dataclass
class MemoryTools:
    """The tools bound to a store and a namespace. ``call(name, arguments)`` runs one.

    ``on_save(memory)`` runs after ``memory_save`` wrote its fact (a workspace appends it to the
    daily log there); ``categorize(text)`` picks a category for saved facts that come without one;
    ``extra_kinds`` are searched by ``memory_search`` besides the core's memory kinds (an adapter's
    own, such as LangGraph store items). Errors (unknown ids, bad arguments) raise
    ``OpenKoiError``/``ValueError`` with a message meant for the model; adapters turn them into
    error results.
    """

    store: MemoryStore
    namespace: str = DEFAULT_NAMESPACE
    on_save: Callable[[Memory], None] | None = None
    categorize: Callable[[str], str | None] | None = None
    extra_kinds: tuple[str, ...] = ()
    _methods: dict[str, Callable[..., str]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        check_namespace(self.namespace)
        self._methods = {name: getattr(self, name) for name in TOOL_SPECS}

    def for_namespace(self, namespace: str) -> MemoryTools:
        """The same tools bound to another namespace (for servers that take it per call)."""
        return self if namespace == self.namespace else replace(self, namespace=namespace)

    def call(self, name: str, arguments: Mapping[str, Any] | None = None) -> str:
        """Check ``arguments`` against the tool's spec and run it."""
        spec = TOOL_SPECS.get(name)
        if spec is None:
            raise ValueError(f"there is no tool {name!r}; the tools are {', '.join(TOOL_SPECS)}")
        return self._methods[name](**spec.bind(arguments))

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
        memory = self.store.reinforce(bare_id(id), namespace=self.namespace)
        return f"Reinforced [id:{memory.id}]: score now {memory.score:+g}"

    def memory_demote(self, id: str) -> str:  # noqa: A002
        memory = self.store.demote(bare_id(id), namespace=self.namespace)
        return f"Demoted [id:{memory.id}]: score now {memory.score:+g}"

    def memory_update(self, id: str, content: str, tags: str | None = None) -> str:  # noqa: A002
        memory = self.store.update(bare_id(id), content, tags=tags, namespace=self.namespace)
        return f"Updated [id:{memory.id}] {memory.text}"

    # -- seed 004 ---------------------------------------------------------------------------

    def memory_recall(self, query: str, category: str | None = None, limit: int = 5) -> str:
        """Seed 004: facts, the query's categories first, then a flat search if too few come back."""
        found = self.store.memory_manager.recall_facts(
            query, namespace=self.namespace, categories=[category] if category else None, limit=limit,
        )
        return format_hits(found.hits) or "No facts matched. Try other words, or memory_search for everything."

    def memory_search(self, query: str, limit: int = 5) -> str:
        """Seed 004: the database and the workspace files together (plus ``extra_kinds``)."""
        hits = self.store.memory_manager.search(query, namespace=self.namespace, limit=limit,
                                                kinds=(*SEARCH_KINDS, *self.extra_kinds))
        return format_hits(hits) or "Nothing matched in memory."

    def memory_save(self, content: str, category: str | None = None, tags: str = "") -> str:
        """Seed 004's ``memory_save``: the fact in the database and the workspace's daily log, then ``on_save``."""
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

    # -- seed 003: the knowledge base ---------------------------------------------------------

    def searchKnowledgeBase(self, query: str, limit: int = 5,  # noqa: N802 - the seed's tool names
                            documentIds: list[str] | None = None) -> str:  # noqa: N803
        ids = None if documentIds is None else [bare_id(d, prefix="doc") for d in documentIds]
        hits = self.store.documents.search_knowledge_base(query, limit, ids, namespace=self.namespace)
        if not hits:
            return "No document passage matched. Try other words, or listKnowledgeBaseDocuments to see what is there."
        blocks = []
        for hit in hits:
            where = _location(hit.metadata)
            details = "; ".join([*([where] if where else []), f"score {hit.score:.3f}"])
            blocks.append(f"[doc:{hit.document_id}] {hit.file_name}, chunk {hit.chunk_index} ({details})\n{hit.text}")
        return "\n\n".join(blocks)

    def getFullDocumentContent(self, documentId: str) -> str:  # noqa: N802, N803
        document_id = bare_id(documentId, prefix="doc")
        document = self.store.documents.get_document(document_id, namespace=self.namespace)
        text = self.store.documents.get_full_document(document_id, namespace=self.namespace)
        return f"[doc:{document.id}] {document.file_name}\n\n{text}"

    def listKnowledgeBaseDocuments(self, limit: int = 20) -> str:  # noqa: N802
        documents = self.store.documents.list_documents(limit, namespace=self.namespace)
        if not documents:
            return "The knowledge base is empty."
        return "\n".join(
            f"[doc:{d.id}] {d.file_name} ({d.content_type}; {d.size_bytes:,} bytes; {d.total_chunks} chunks; "
            f"uploaded {d.uploaded_at.isoformat(timespec='seconds')})"
            for d in documents
        )


def tool_names(choice: str | Sequence[str] | None, default: Sequence[str] = MCP_DEFAULT_TOOL_NAMES) -> tuple[str, ...]:
    """The tool names a choice stands for, checked: ``None`` or ``"default"`` is ``default``, ``"all"``
    every tool (:data:`TOOL_SPECS`), else names (a sequence, or one string of comma-separated names).

    >>> tool_names("memory_save, memory_query")
    ('memory_save', 'memory_query')
    >>> len(tool_names("all")), tool_names(None) == MCP_DEFAULT_TOOL_NAMES
    (11, True)
    """
    if choice is None:
        return tuple(default)
    if isinstance(choice, str):
        word = choice.strip()
        if word in ("all", "default"):
            return tuple(TOOL_SPECS) if word == "all" else tuple(default)
        choice = [part.strip() for part in word.split(",") if part.strip()]
    if not all(isinstance(name, str) for name in choice):
        raise ValueError(f"tools must be tool names, got {choice!r}")
    chosen = tuple(dict.fromkeys(choice))
    if not chosen:
        raise ValueError("choose at least one tool: 'default', 'all', or names such as 'memory_save,memory_search'")
    unknown = [name for name in chosen if name not in TOOL_SPECS]
    if unknown:
        raise ValueError(f"unknown tool{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}; "
                         f"choose 'default', 'all' or from {', '.join(TOOL_SPECS)}")
    return chosen


def format_hits(hits: Sequence[Hit]) -> str:
    """One line per hit: ``[id:...] text (kind; category; tags; score)``, best first.

    A knowledge-base passage names its document (``document [doc:...] file name, chunk n``), the id
    ``getFullDocumentContent`` takes.
    """
    lines = []
    for hit in hits:
        memory = hit.memory
        details = [memory.kind]
        document_id = memory.metadata.get("document_id") if memory.kind == "document" else None
        if isinstance(document_id, str) and document_id:
            details = [f"document [doc:{document_id}] {memory.metadata.get('file_name', '')}, chunk "
                       f"{memory.metadata.get('chunk_index', 0)}"]
        if memory.category:
            details.append(f"category {memory.category}")
        if memory.tags:
            details.append("tags " + ", ".join(memory.tags))
        details.append(f"score {hit.score:.3f}")
        lines.append(f"[id:{memory.id}] {memory.text} ({'; '.join(details)})")
    return "\n".join(lines)


def bare_id(value: str, *, prefix: str = "id") -> str:
    """Accept ``abc``, ``id:abc`` and ``[id:abc]`` alike: models copy the id as they saw it."""
    text = value.strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1].strip()
    if text.startswith(f"{prefix}:"):
        text = text[len(prefix) + 1:].strip()
    return text


def _location(metadata: Mapping[str, Any]) -> str:
    for key, label in (("page", "page"), ("slide", "slide"), ("row", "row"), ("heading", "under")):
        if metadata.get(key) not in (None, ""):
            sheet = f"sheet {metadata['sheet']}, " if key == "row" and metadata.get("sheet") else ""
            return f"{sheet}{label} {metadata[key]}"
    return ""

"""Memory tools for agents (seeds 002, 003, 004), bound to a store and a namespace.

The tools themselves live in the core (:mod:`shared_core.tools`: argument handling, ``[id:...]``
formatting, category-scoped recall, the save hook); this module turns each into a LangChain
``StructuredTool`` whose argument model is built from the core's spec. Failures come back to the
model as error tool messages, never as exceptions in the agent loop.

A namespace template (``("memories", "{user_id}")``) is filled on every call from the run's
config and context (the tool receives the run's ``RunnableConfig``), so one set of tools
serves every user of an agent and never mixes their memories.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from pydantic import BaseModel, Field, create_model

from shared_core import Memory, OpenKoiError
from shared_core.memories import DEFAULT_NAMESPACE
from shared_core.tools import (
    DEFAULT_TOOL_NAMES,
    KNOWLEDGE_BASE_TOOL_NAMES,
    MEMORY_TOOL_NAMES,
    TOOL_SPECS,
    MemoryTools,
    ToolSpec,
    format_hits,
)

from ._core import core_store
from ._run import RunNamespace

__all__ = ["create_memory_tools", "TOOL_NAMES", "DEFAULT_TOOLS", "format_hits"]

TOOL_NAMES = MEMORY_TOOL_NAMES
DEFAULT_TOOLS = DEFAULT_TOOL_NAMES
_PY_TYPES: dict[str, Any] = {"string": str, "integer": int, "boolean": bool, "array": list[str]}


def create_memory_tools(
    store: Any,
    namespace: str | Sequence[str] = DEFAULT_NAMESPACE,
    *,
    include: Sequence[str] | None = None,
    on_save: Callable[[Memory], None] | None = None,
    categorize: Callable[[str], str | None] | None = None,
) -> list[BaseTool]:
    """The memory tools, bound to ``store`` and ``namespace``.

    ``namespace``: a core namespace (``"user:alice"``), a LangGraph tuple (``("memories",
    "alice")``, the namespace ``OpenKoiStore`` uses), or a template filled per call from the
    run's ``configurable`` and context (``("memories", "{user_id}")``, LangMem's
    ``"{langgraph_user_id}"``); a call whose run lacks the value gets an error message.
    ``include``: the tool names to build. By default a model gets two tools that do not
    overlap, :data:`DEFAULT_TOOLS`: ``memory_save`` (write) and ``memory_search`` (read everything
    in the namespace). Name any of :data:`TOOL_NAMES` (``memory_store``, ``memory_query``,
    ``memory_reinforce``, ``memory_demote``, ``memory_update``, ``memory_recall``...) or seed
    003's knowledge-base tools (``searchKnowledgeBase``, ``getFullDocumentContent``,
    ``listKnowledgeBaseDocuments``) to get them. ``on_save(memory)`` runs after ``memory_save``
    wrote its fact (a workspace appends it to the daily log there). ``categorize(text)`` picks a
    category for saved facts that come without one.
    """
    core = core_store(store)
    scope = RunNamespace(namespace)
    if scope.fixed is not None:
        core.count(namespace=scope.fixed)  # validates the namespace now
    chosen = DEFAULT_TOOLS if include is None else tuple(include)
    unknown = sorted(set(chosen) - set(TOOL_NAMES) - set(KNOWLEDGE_BASE_TOOL_NAMES))
    if unknown:
        raise ValueError(f"unknown memory tools {unknown}; choose from "
                         f"{', '.join((*TOOL_NAMES, *KNOWLEDGE_BASE_TOOL_NAMES))}")
    tools = MemoryTools(core, scope.fixed or DEFAULT_NAMESPACE, on_save=on_save, categorize=categorize)
    return [_structured_tool(tools, TOOL_SPECS[name], scope) for name in chosen]


def _structured_tool(tools: MemoryTools, spec: ToolSpec, scope: RunNamespace) -> BaseTool:
    def run(config: RunnableConfig, **kwargs: Any) -> str:
        try:
            return tools.for_namespace(scope.resolve(config)).call(spec.name, kwargs)
        except (OpenKoiError, ValueError, TypeError, KeyError) as exc:
            raise ToolException(f"Error: {exc}") from exc

    return StructuredTool.from_function(
        func=run, name=spec.name, description=spec.description, args_schema=_args_model(spec),
        handle_tool_error=True,
    )


def _args_model(spec: ToolSpec) -> type[BaseModel]:
    """A pydantic model of the spec's arguments (LangChain shows it to the model as the tool schema)."""
    fields: dict[str, Any] = {}
    for param in spec.params:
        kind = _PY_TYPES[param.type]
        if param.nullable or (not param.required and param.default is None):
            kind = kind | None
        default = ... if param.required else param.default
        fields[param.name] = (kind, Field(default, description=param.description, ge=param.minimum, le=param.maximum))
    return create_model(f"{spec.name}_args", **fields)

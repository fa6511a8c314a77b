"""Memory tools for agents (seed 002's five, seed 004's three), bound to a store and a namespace.

The tools themselves live in the core (:mod:`shared_core.tools`: argument handling, ``[id:...]``
formatting, category-scoped recall, the save hook); this module turns each into a LangChain
``StructuredTool`` whose argument model is built from the core's spec. Failures come back to the
model as error tool messages, never as exceptions in the agent loop.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool, ToolException
from pydantic import BaseModel, Field, create_model

from shared_core import Memory, OpenKoiError
from shared_core.memories import DEFAULT_NAMESPACE
from shared_core.tools import (
    KNOWLEDGE_BASE_TOOL_NAMES,
    MEMORY_TOOL_NAMES,
    TOOL_SPECS,
    MemoryTools,
    ToolSpec,
    format_hits,
)

from ._core import core_store
from .langgraph_store import ITEM_KIND, encode_namespace

__all__ = ["create_memory_tools", "TOOL_NAMES", "format_hits"]

TOOL_NAMES = MEMORY_TOOL_NAMES
_PY_TYPES: dict[str, Any] = {"string": str, "integer": int, "boolean": bool, "array": list[str]}


def create_memory_tools(
    store: Any,
    namespace: str | Sequence[str] = DEFAULT_NAMESPACE,
    *,
    include: Sequence[str] | None = None,
    on_save: Callable[[Memory], None] | None = None,
    categorize: Callable[[str], str | None] | None = None,
) -> list[BaseTool]:
    """The memory tools, bound to ``store`` and ``namespace`` (a core namespace, or a LangGraph tuple).

    ``include``: the tool names to build (default: all of :data:`TOOL_NAMES`; seed 003's
    knowledge-base tools ``searchKnowledgeBase``, ``getFullDocumentContent`` and
    ``listKnowledgeBaseDocuments`` can be named too). ``on_save(memory)`` runs after
    ``memory_save`` wrote its fact (a workspace appends it to the daily log there).
    ``categorize(text)`` picks a category for saved facts that come without one.
    """
    core = core_store(store)
    bound = namespace if isinstance(namespace, str) else encode_namespace(namespace)
    core.count(namespace=bound)  # validates the namespace now
    chosen = TOOL_NAMES if include is None else tuple(include)
    unknown = sorted(set(chosen) - set(TOOL_NAMES) - set(KNOWLEDGE_BASE_TOOL_NAMES))
    if unknown:
        raise ValueError(f"unknown memory tools {unknown}; choose from "
                         f"{', '.join((*TOOL_NAMES, *KNOWLEDGE_BASE_TOOL_NAMES))}")
    tools = MemoryTools(core, bound, on_save=on_save, categorize=categorize, extra_kinds=(ITEM_KIND,))
    return [_structured_tool(tools, TOOL_SPECS[name]) for name in chosen]


def _structured_tool(tools: MemoryTools, spec: ToolSpec) -> BaseTool:
    def run(**kwargs: Any) -> str:
        try:
            return tools.call(spec.name, kwargs)
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
        constraints = {k: v for k, v in (("ge", param.minimum), ("le", param.maximum)) if v is not None}
        default = ... if param.required else param.default
        fields[param.name] = (kind, Field(default=default, description=param.description, **constraints))
    return create_model(f"{spec.name}_args", **fields)

"""Namespaces as every LangChain/LangGraph door takes them: fixed, or a template filled per run.

A namespace is read by :mod:`shared_core.namespaces` (a string as given, a tuple encoded:
``("memories", "alice")`` is ``"memories.alice."``). A template such as
``("memories", "{user_id}")`` (LangMem's ``{langgraph_user_id}`` works too) is filled from the
run: the ``RunnableConfig``'s ``configurable`` (and ``metadata``), and the LangGraph runtime's
``context`` (``create_agent(..., context_schema=...)``, ``invoke(..., context=...)``). A run that
lacks a value is refused with :class:`~shared_core.namespaces.NamespaceTemplateError`; a template is
never stored under literally.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import ensure_config

from shared_core.namespaces import as_namespace, is_template, resolve_namespace, values_from_config

__all__ = ["RunNamespace", "run_values"]

_RUNTIME_KEY = "__pregel_runtime"  # where LangGraph keeps a node's Runtime in its config (CONFIG_KEY_RUNTIME)


def run_values(config: RunnableConfig | Mapping[str, Any] | None = None, runtime: Any = None) -> dict[str, Any]:
    """The values a template may use in this run: ``configurable``, ``metadata`` and the runtime context.

    ``config``: the run's config (default: the current run's, read from LangChain's context, empty
    outside a run). ``runtime``: a LangGraph ``Runtime``/``ToolRuntime`` (default: the one LangGraph
    put in the config); its ``context`` wins over the config.
    """
    config = ensure_config(cast(RunnableConfig | None, config if isinstance(config, dict) or config is None else dict(config)))
    if runtime is None:
        runtime = (config.get("configurable") or {}).get(_RUNTIME_KEY)
    context = getattr(runtime, "context", None)
    values = values_from_config(config, context)
    values.pop(_RUNTIME_KEY, None)
    return values


class RunNamespace:
    """A namespace given to an adapter: fixed (resolved once, now) or a template (filled per run)."""

    __slots__ = ("given", "fixed")

    def __init__(self, namespace: str | Sequence[str]) -> None:
        self.given = tuple(namespace) if isinstance(namespace, list) else namespace
        self.fixed: str | None = None if is_template(self.given) else as_namespace(self.given)

    @property
    def is_template(self) -> bool:
        return self.fixed is None

    def resolve(self, config: RunnableConfig | Mapping[str, Any] | None = None, runtime: Any = None) -> str:
        """The core namespace for this run (a template filled from ``config``/``runtime``, see :func:`run_values`)."""
        if self.fixed is not None:
            return self.fixed
        return resolve_namespace(self.given, run_values(config, runtime))

    def __repr__(self) -> str:
        return repr(self.given)

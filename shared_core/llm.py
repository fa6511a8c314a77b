"""Optional text models: a tiny protocol, and tolerant parsing of their JSON answers.

Summaries, fact extraction, learning and insight extraction can use a text model; without
one a rule-based path runs. Framework models are wrapped by the adapters (any LangChain
chat model, any LlamaIndex LLM); tests and users can wrap a plain function with
:class:`FunctionModel`. A model's bad output (not JSON, wrong shape, empty) never loses
the input: callers catch :class:`ModelOutputError` and fall back to the rules.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

__all__ = ["TextModel", "FunctionModel", "ModelOutputError", "parse_json_output", "logger"]

logger = logging.getLogger("openkoi.llm")


@runtime_checkable
class TextModel(Protocol):
    """Anything that completes a prompt into text within a token budget."""

    def complete(self, prompt: str, *, max_tokens: int = 500) -> str: ...


class FunctionModel:
    """A text model from a function ``(prompt, max_tokens) -> str``."""

    def __init__(self, function: Callable[[str, int], str], name: str = "function") -> None:
        self._function = function
        self.name = name

    def complete(self, prompt: str, *, max_tokens: int = 500) -> str:
        return self._function(prompt, max_tokens)

    def __repr__(self) -> str:
        return f"FunctionModel({self.name!r})"


class ModelOutputError(ValueError):
    """The model's answer could not be used (callers fall back to the rule-based path)."""


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)


def parse_json_output(text: Any) -> Any:
    """The JSON value in a model's answer: bare, in a code fence, or the first {...}/[...] span."""
    if not isinstance(text, str) or not text.strip():
        raise ModelOutputError("the model returned nothing")
    candidates = [text.strip()]
    candidates += [m.strip() for m in _FENCE.findall(text)]
    for opener, closer in (("{", "}"), ("[", "]")):
        start, end = text.find(opener), text.rfind(closer)
        if 0 <= start < end:
            candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except json.JSONDecodeError:
            continue
    raise ModelOutputError(f"the model's answer is not JSON: {text[:120]!r}")

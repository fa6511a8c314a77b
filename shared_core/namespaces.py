"""Namespaces: how every door reads one, and templates filled per run.

A core namespace is a string (``"user:alice"``). LangGraph's are tuples of labels; a tuple
becomes the string with every label followed by a dot (``("users", "alice")`` ->
``"users.alice."``), so each adapter and the core read a namespace the same way.

A namespace may be a **template**: ``"user:{user_id}"`` or LangMem's
``("memories", "{langgraph_user_id}")``. A template is never taken literally (that would put
every user in one namespace); it is filled per run from the values a framework passes (a
LangChain ``RunnableConfig``'s ``configurable``, a LangGraph runtime's context), and a run
that lacks a value is refused with an error that says what to pass.

>>> as_namespace(("users", "alice"))
'users.alice.'
>>> resolve_namespace(("memories", "{user_id}"), {"user_id": "bob"})
'memories.bob.'
>>> is_template("user:{user_id}")
True
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping, Sequence
from typing import Any

from .errors import InputError, OpenKoiError
from .validation import check_name

__all__ = [
    "Namespace",
    "NamespaceTemplateError",
    "as_namespace",
    "check_labels",
    "encode_namespace",
    "decode_namespace",
    "is_template",
    "template_fields",
    "resolve_namespace",
    "check_namespace",
    "values_from_config",
]

Namespace = str | Sequence[str]
_FIELD = re.compile(r"\{([^{}]*)\}")


class NamespaceTemplateError(OpenKoiError, ValueError):
    """A namespace template used without the values it needs."""


def check_namespace(value: Any) -> str:
    """A core namespace string, or a ``ValueError`` saying what one looks like."""
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"namespace must be a non-empty string such as 'user:alice', got {value!r}")
    check_name(value, "namespace")
    if "{" in value and _FIELD.search(value):
        raise NamespaceTemplateError(
            f"namespace {value!r} is a template ({', '.join(template_fields(value))}); fill it per run "
            "(resolve_namespace(namespace, values), or an adapter given the run's config), never store under it"
        )
    return value


def check_labels(labels: Sequence[str]) -> None:
    """Refuse labels a namespace tuple cannot hold (a ``ValueError`` naming the label): each a
    non-empty string without '.' or NUL (``()`` passes: a prefix of everything)."""
    if isinstance(labels, str):
        raise ValueError(f"a namespace tuple is a sequence of labels such as ('users', 'alice'), got {labels!r}")
    for label in labels:
        if not isinstance(label, str) or not label:
            raise ValueError(f"namespace labels must be non-empty strings, got {label!r} in {tuple(labels)!r}")
        if "." in label or "\x00" in label:
            raise ValueError(f"namespace labels cannot contain '.' or NUL, got {label!r} in {tuple(labels)!r}")


def encode_namespace(labels: Sequence[str]) -> str:
    """``("users", "alice")`` -> ``"users.alice."``: the core namespace of a tuple of labels."""
    check_labels(labels)
    if not labels:
        raise ValueError("a namespace tuple cannot be empty; use e.g. ('memories', user_id)")
    return "".join(f"{label}." for label in labels)


def decode_namespace(text: str) -> tuple[str, ...]:
    """The inverse of :func:`encode_namespace`."""
    if not text.endswith(".") or ".." in text or text.startswith("."):
        raise ValueError(f"{text!r} is not a namespace tuple's string (those look like 'users.alice.')")
    return tuple(text[:-1].split("."))


def template_fields(namespace: Namespace) -> tuple[str, ...]:
    """The placeholders of a namespace template, in order (``()`` for a plain namespace)."""
    parts = [namespace] if isinstance(namespace, str) else list(namespace)
    fields: list[str] = []
    for part in parts:
        if not isinstance(part, str):
            continue
        for _, name, _, _ in string.Formatter().parse(part) if "{" in part else ():
            if name is not None and name not in fields:
                fields.append(name)
    return tuple(fields)


def is_template(namespace: Any) -> bool:
    """Whether ``namespace`` (a string or a tuple) holds ``{placeholders}`` to fill per run."""
    if isinstance(namespace, str):
        return bool(_FIELD.search(namespace))
    if isinstance(namespace, (list, tuple)):
        return any(isinstance(part, str) and _FIELD.search(part) for part in namespace)
    return False


def as_namespace(namespace: Namespace) -> str:
    """The core namespace of a string (as given) or a tuple (encoded); templates are refused."""
    if is_template(namespace):
        raise NamespaceTemplateError(
            f"namespace {namespace!r} is a template; fill {', '.join(template_fields(namespace)) or 'it'} first "
            "(resolve_namespace(namespace, values)), or pass it where a run's config fills it"
        )
    if isinstance(namespace, str):
        return check_namespace(namespace)
    if isinstance(namespace, (list, tuple)):
        return encode_namespace(namespace)
    raise ValueError(f"namespace must be a string such as 'user:alice' or a tuple such as ('users', 'alice'), "
                     f"got {type(namespace).__name__}")


def resolve_namespace(namespace: Namespace, values: Mapping[str, Any] | None = None) -> str:
    """The core namespace of ``namespace``, its placeholders filled from ``values``.

    A placeholder with no value (or an empty one) is a :class:`NamespaceTemplateError` that
    names it: a template is never taken literally.
    """
    if not is_template(namespace):
        return as_namespace(namespace)
    values = values or {}
    missing = [name for name in template_fields(namespace) if _value(values, name) is None]
    if missing:
        raise NamespaceTemplateError(
            f"namespace {namespace!r} needs {', '.join(repr(m) for m in missing)} for this run; pass it in the run's "
            f"config (config={{'configurable': {{{missing[0]!r}: ...}}}}) or context, or give a fixed namespace"
        )
    filled = {name: str(_value(values, name)) for name in template_fields(namespace)}
    if isinstance(namespace, str):
        return as_namespace(_fill(namespace, filled))
    return as_namespace(tuple(_fill(part, filled) for part in namespace))


def values_from_config(config: Any = None, context: Any = None) -> dict[str, Any]:
    """The values a template may use: a ``RunnableConfig``'s ``configurable`` and a runtime context
    (a mapping, or an object whose attributes are read), the context winning."""
    values: dict[str, Any] = {}
    if isinstance(config, Mapping):
        configurable = config.get("configurable")
        if isinstance(configurable, Mapping):
            values.update({str(k): v for k, v in configurable.items()})
        metadata = config.get("metadata")
        if isinstance(metadata, Mapping):
            for key, value in metadata.items():
                values.setdefault(str(key), value)
    if isinstance(context, Mapping):
        values.update({str(k): v for k, v in context.items()})
    elif context is not None:
        for name in dir(context):
            if not name.startswith("_"):
                value = getattr(context, name, None)
                if not callable(value):
                    values[name] = value
    return values


def _value(values: Mapping[str, Any], name: str) -> Any:
    value = values.get(name)
    if value is None and name.startswith("langgraph_"):  # LangMem's names for LangGraph's config keys
        value = values.get(name[len("langgraph_"):])
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    return value


def _fill(part: str, values: Mapping[str, str]) -> str:
    return _FIELD.sub(lambda match: values[match.group(1)], part)

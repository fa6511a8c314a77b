"""The text a message is embedded as (seed 003's ``buildMemoryRecordEmbeddingDocument``).

::

    Text: <content, whitespace collapsed, at most 8000 characters>
    Time: <unix ms when sent>
    Tier: <short | mid | long>
    Media: <media refs joined by ", " or "none">
    Dimensions: platform: <v>; channel: <v>; person: <v>; botId: <v>
    Metadata: <key: value pairs joined by "; ", two levels deep, or "none">

Rules (each has a hand-computed test in tests/core/test_embedding_doc.py):

* whitespace: every run of ``\\s`` becomes one space, ends trimmed (also inside
  dimension and metadata values, so the document keeps one field per line);
* truncation: text longer than ``max_chars`` is cut at the last boundary that falls in
  the final ``window`` (25 %) of the first ``max_chars`` characters, trying a newline
  first, then ". ", then "; ", then a space; the punctuation of ". " / "; " is kept and
  the trailing space dropped. With no boundary there, the cut is at ``max_chars``;
* dimensions: in the order platform, channel, person, botId; absent ones left out;
* metadata: keys sorted at each level; level-1 dicts flattened to ``parent.child``;
  anything deeper, and lists, rendered as compact JSON with sorted keys; keys starting
  with ``__`` left out at every depth; strings as they are, ``true``/``false``/``null``
  and numbers as JSON writes them.

The document's FNV-64a hash (``shared_core.embed.content_hash``, prefix
``memory-record-embedding-text-v1:``) is what ``reembed()`` compares to decide
whether a message needs a new vector.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

__all__ = [
    "build_embedding_document",
    "collapse_whitespace",
    "truncate_at_boundary",
    "flatten_metadata",
    "format_dimensions",
    "unix_ms",
    "BOUNDARIES",
]

BOUNDARIES = ("\n", ". ", "; ", " ")
_WS = re.compile(r"\s+")


def collapse_whitespace(text: str) -> str:
    """``/\\s+/g`` -> one space, trimmed."""
    return _WS.sub(" ", text).strip()


def truncate_at_boundary(text: str, max_chars: int = 8000, window: float = 0.25) -> str:
    """``text`` if it fits, else cut at the strongest boundary within the final ``window`` of ``max_chars``.

    >>> truncate_at_boundary("aaaa. bbbb cc", max_chars=10)
    'aaaa. bbbb'
    >>> truncate_at_boundary("aaaaaaa. bbbbbb", max_chars=10)
    'aaaaaaa.'
    """
    if len(text) <= max_chars:
        return text
    head = text[:max_chars]
    earliest = max_chars - int(max_chars * window)  # boundaries must start at or after this index
    for boundary in BOUNDARIES:
        at = head.rfind(boundary)
        if at >= earliest and at > 0:
            keep = at + len(boundary.rstrip())  # keep "." / ";", drop the space or newline
            return head[:keep].rstrip()
    return head


def unix_ms(when: datetime) -> int:
    """Milliseconds since the epoch of an aware datetime (exact integer arithmetic)."""
    delta = when.astimezone(timezone.utc) - datetime(1970, 1, 1, tzinfo=timezone.utc)
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


_DIMENSIONS = (("platform", "platform"), ("channel", "channel"), ("person", "person"), ("bot_id", "botId"))


def format_dimensions(dimensions: Mapping[str, Any]) -> str:
    """``platform: slack; channel: eng; ...`` in the seed's order, absent ones left out, else ``none``."""
    parts = []
    for key, label in _DIMENSIONS:
        value = dimensions.get(key)
        if value is None or value == "":
            continue
        parts.append(f"{label}: {collapse_whitespace(str(value))}")
    return "; ".join(parts) if parts else "none"


def _strip_private(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _strip_private(v) for k, v in value.items() if not str(k).startswith("__")}
    if isinstance(value, (list, tuple)):
        return [_strip_private(v) for v in value]
    return value


def _render(value: Any) -> str:
    if isinstance(value, str):
        return collapse_whitespace(value)
    if isinstance(value, (Mapping, list, tuple)):
        text = json.dumps(_strip_private(value), ensure_ascii=False, sort_keys=True, separators=(",", ":"))
        return collapse_whitespace(text)
    return json.dumps(value, ensure_ascii=False)


def flatten_metadata(metadata: Mapping[str, Any] | None, depth: int = 2) -> list[tuple[str, str]]:
    """``(key, rendered value)`` pairs: sorted, at most ``depth`` levels, ``__`` keys left out.

    >>> flatten_metadata({"b": 1, "a": {"y": True, "x": {"k": "v"}}, "__raw": "secret"})
    [('a.x', '{"k":"v"}'), ('a.y', 'true'), ('b', '1')]
    """
    out: list[tuple[str, str]] = []

    def walk(prefix: str, value: Mapping[str, Any], level: int) -> None:
        for key in sorted(value, key=str):
            name = str(key)
            if name.startswith("__"):
                continue
            child = value[key]
            path = f"{prefix}.{name}" if prefix else name
            if isinstance(child, Mapping) and level < depth:
                walk(path, child, level + 1)
            else:
                out.append((path, _render(child)))

    walk("", metadata or {}, 1)
    return out


def build_embedding_document(
    text: str,
    *,
    sent_at: datetime,
    tier: str,
    media: Sequence[str] = (),
    dimensions: Mapping[str, Any] | None = None,
    metadata: Mapping[str, Any] | None = None,
    max_chars: int = 8000,
    window: float = 0.25,
) -> str:
    """Seed 003's embedding document of one message (see the module docstring for the rules)."""
    body = truncate_at_boundary(collapse_whitespace(text), max_chars, window)
    refs = [collapse_whitespace(str(ref)) for ref in media if str(ref).strip()]
    pairs = flatten_metadata(metadata)
    return "\n".join([
        f"Text: {body}",
        f"Time: {unix_ms(sent_at)}",
        f"Tier: {tier}",
        f"Media: {', '.join(refs) if refs else 'none'}",
        f"Dimensions: {format_dimensions(dimensions or {})}",
        f"Metadata: {'; '.join(f'{k}: {v}' for k, v in pairs) if pairs else 'none'}",
    ])

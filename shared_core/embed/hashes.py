"""Content hashing (seed 003): FNV-64a over a versioned prefix decides re-embedding."""

from __future__ import annotations

__all__ = ["fnv1a_64", "fnv1a_64_many", "content_hash", "content_hashes", "EMBEDDING_TEXT_VERSION"]

try:  # the byte loop compiled (setup.py builds it where a C compiler is); else the Python loop below
    from .._speedups import fnv1a_64 as _compiled_fnv
except ImportError:  # pragma: no cover - exercised by the tests that force the Python loop
    _compiled_fnv = None

EMBEDDING_TEXT_VERSION = "memory-record-embedding-text-v1:"

_FNV_OFFSET = 0xCBF29CE484222325
_FNV_PRIME = 0x100000001B3
_MASK = 0xFFFFFFFFFFFFFFFF


def fnv1a_64(data: bytes | str) -> int:
    """64-bit FNV-1a of ``data`` (UTF-8 for text).

    >>> hex(fnv1a_64(b""))
    '0xcbf29ce484222325'
    >>> hex(fnv1a_64(b"a"))
    '0xaf63dc4c8601ec8c'
    """
    return _fnv1a_from(_FNV_OFFSET, data)


def _fnv1a_from(value: int, data: bytes | str) -> int:
    """FNV-1a of ``data`` continued from the state ``value`` (the hash of what came before it)."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    if _compiled_fnv is not None:
        return _compiled_fnv(data, value)
    for byte in data:
        value ^= byte
        value = (value * _FNV_PRIME) & _MASK
    return value


def fnv1a_64_many(items: list[bytes], *, _start: int = _FNV_OFFSET) -> list[int]:
    """``fnv1a_64`` of many byte strings at once: one numpy step per byte position, across all items."""
    import numpy as np

    if not items:
        return []
    lengths = np.fromiter((len(b) for b in items), dtype=np.int64, count=len(items))
    width = int(lengths.max())
    padded = np.zeros((len(items), max(width, 1)), dtype=np.uint8)
    for row, data in enumerate(items):
        padded[row, : len(data)] = np.frombuffer(data, dtype=np.uint8)
    value = np.full(len(items), _start, dtype=np.uint64)
    prime = np.uint64(_FNV_PRIME)
    for column in range(width):
        live = lengths > column  # items shorter than this column are finished
        mixed = (value ^ padded[:, column].astype(np.uint64)) * prime  # uint64 arithmetic wraps, as FNV wants
        value = np.where(live, mixed, value)
    return [int(v) for v in value]


def content_hashes(embedding_texts: list[str]) -> list[str]:
    """``content_hash`` of many texts, vectorised (bulk loads hash thousands at once)."""
    if _compiled_fnv is not None or len(embedding_texts) < 16:  # numpy's per-call overhead outweighs a few loops
        return [content_hash(text) for text in embedding_texts]
    return [f"{v:016x}" for v in fnv1a_64_many([t.encode("utf-8") for t in embedding_texts], _start=_AFTER_PREFIX)]


def content_hash(embedding_text: str) -> str:
    """The stored hash of a text as embedded: 16 hex digits of FNV-64a over the versioned prefix.

    Changing the prefix version (the way a record becomes text) changes every hash, so
    ``reembed()`` redoes everything after an encoding change, and only what changed otherwise.
    """
    return f"{_fnv1a_from(_AFTER_PREFIX, embedding_text):016x}"


_AFTER_PREFIX = fnv1a_64(EMBEDDING_TEXT_VERSION)  # every hash starts with the prefix: hashed once

"""Content hashing (seed 003): FNV-64a over a versioned prefix decides re-embedding."""

from __future__ import annotations

__all__ = ["fnv1a_64", "content_hash", "EMBEDDING_TEXT_VERSION"]

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
    if isinstance(data, str):
        data = data.encode("utf-8")
    value = _FNV_OFFSET
    for byte in data:
        value ^= byte
        value = (value * _FNV_PRIME) & _MASK
    return value


def content_hash(embedding_text: str) -> str:
    """The stored hash of a text as embedded: 16 hex digits of FNV-64a over the versioned prefix.

    Changing the prefix version (the way a record becomes text) changes every hash, so
    ``reembed()`` redoes everything after an encoding change, and only what changed otherwise.
    """
    return f"{fnv1a_64(EMBEDDING_TEXT_VERSION + embedding_text):016x}"

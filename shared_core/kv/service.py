"""``store.kv``: JSON values by (namespace, collection, key); the SQL is the repository's."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..memories import DEFAULT_NAMESPACE, check_namespace
from .repository import KeyValueRepository

if TYPE_CHECKING:
    from ..kernel import Kernel

__all__ = ["KeyValueStore", "DEFAULT_COLLECTION"]

DEFAULT_COLLECTION = "default"


class KeyValueStore:
    """Put, get, list and delete JSON values by (namespace, collection, key). Thread-safe."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self._repo = KeyValueRepository(kernel.backend)

    # -- writing ---------------------------------------------------------------------------

    def put(self, key: str, value: Any, *, collection: str = DEFAULT_COLLECTION,
            namespace: str = DEFAULT_NAMESPACE) -> None:
        """Store ``value`` under ``key`` (replacing what was there)."""
        self.put_many([(key, value)], collection=collection, namespace=namespace)

    def put_many(self, items: Mapping[str, Any] | Iterable[tuple[str, Any]], *,
                 collection: str = DEFAULT_COLLECTION, namespace: str = DEFAULT_NAMESPACE) -> int:
        """Store several values in one transaction; return how many were written."""
        pairs = list(items.items()) if isinstance(items, Mapping) else list(items)
        _check_place(collection, namespace)
        entries = []
        now = self.kernel.clock.now()
        for pair in pairs:
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise TypeError(f"put_many takes (key, value) pairs or a dict, got {pair!r}")
            key, value = pair
            entries.append((_check_key(key), _dump(key, value)))
        if not entries:
            return 0
        with self.kernel.session(write=True):
            self._repo.put_many(namespace, collection, entries, now)
        return len(entries)

    def delete(self, key: str, *, collection: str = DEFAULT_COLLECTION, namespace: str = DEFAULT_NAMESPACE) -> bool:
        """Remove ``key``; return whether it was there."""
        return self.delete_many([key], collection=collection, namespace=namespace) == 1

    def delete_many(self, keys: Sequence[str], *, collection: str = DEFAULT_COLLECTION,
                    namespace: str = DEFAULT_NAMESPACE) -> int:
        """Remove several keys in one transaction; return how many existed."""
        _check_place(collection, namespace)
        wanted = list(dict.fromkeys(_check_key(k) for k in keys))
        with self.kernel.session(write=True):
            return self._repo.delete_keys(namespace, collection, wanted)

    def delete_collection(self, collection: str, *, namespace: str = DEFAULT_NAMESPACE) -> int:
        """Remove every key of a collection; return how many."""
        _check_place(collection, namespace)
        with self.kernel.session(write=True):
            return self._repo.delete_collection(namespace, collection)

    def erase(self, namespace: str) -> int:
        """Remove every entry of a namespace (``MemoryStore.erase_namespace`` calls this)."""
        check_namespace(namespace)
        with self.kernel.session(write=True):
            return self._repo.erase(namespace)

    # -- reading ---------------------------------------------------------------------------

    def get(self, key: str, default: Any = None, *, collection: str = DEFAULT_COLLECTION,
            namespace: str = DEFAULT_NAMESPACE) -> Any:
        """The value under ``key``, or ``default``."""
        found = self.get_many([key], collection=collection, namespace=namespace)
        return found.get(key, default)

    def get_many(self, keys: Sequence[str], *, collection: str = DEFAULT_COLLECTION,
                 namespace: str = DEFAULT_NAMESPACE) -> dict[str, Any]:
        """The values that exist among ``keys`` (missing keys are left out)."""
        _check_place(collection, namespace)
        wanted = list(dict.fromkeys(_check_key(k) for k in keys))
        with self.kernel.session():
            found = self._repo.values(namespace, collection, wanted)
        return {k: json.loads(found[k]) for k in wanted if k in found}

    def items(self, *, collection: str = DEFAULT_COLLECTION, namespace: str = DEFAULT_NAMESPACE) -> dict[str, Any]:
        """Every key of a collection and its value, in key order."""
        _check_place(collection, namespace)
        with self.kernel.session():
            rows = self._repo.items(namespace, collection)
        return {key: json.loads(value) for key, value in rows}

    def keys(self, *, collection: str = DEFAULT_COLLECTION, namespace: str = DEFAULT_NAMESPACE) -> list[str]:
        _check_place(collection, namespace)
        with self.kernel.session():
            return self._repo.keys(namespace, collection)

    def collections(self, *, namespace: str = DEFAULT_NAMESPACE) -> dict[str, int]:
        """Every collection of a namespace and how many keys it holds."""
        check_namespace(namespace)
        with self.kernel.session():
            return self._repo.collections(namespace)


def _check_place(collection: Any, namespace: Any) -> None:
    check_namespace(namespace)
    if not isinstance(collection, str) or not collection:
        raise ValueError(f"collection must be a non-empty string such as 'docstore/data', got {collection!r}")


def _check_key(key: Any) -> str:
    if not isinstance(key, str):
        raise TypeError(f"keys must be strings, got {type(key).__name__}")
    return key


def _dump(key: str, value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        kind = "contains NaN or infinity" if isinstance(exc, ValueError) else "is not JSON-serialisable"
        raise ValueError(f"the value for key {key!r} {kind} ({exc}); store plain JSON data") from None


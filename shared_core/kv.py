"""A namespaced key-value table of JSON values, in the same file as the memories.

Frameworks keep state beside their vectors (LlamaIndex's document store, index store and
ingestion dedup hashes); this keeps it in the one database, isolated by the same
namespaces as memories (so ``erase_namespace`` removes it too) and grouped in
collections. Values are anything JSON can hold; every read returns a fresh copy.

>>> from shared_core import MemoryStore
>>> with MemoryStore.open(":memory:") as store:
...     store.kv.put("doc-1", {"hash": "ab12"}, collection="docstore/metadata")
...     store.kv.get("doc-1", collection="docstore/metadata")
{'hash': 'ab12'}
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .clock import to_iso
from .memories import DEFAULT_NAMESPACE, check_namespace

if TYPE_CHECKING:
    from .kernel import Kernel

__all__ = ["KeyValueStore", "DEFAULT_COLLECTION"]

DEFAULT_COLLECTION = "default"
_BATCH = 500


class KeyValueStore:
    """Put, get, list and delete JSON values by (namespace, collection, key). Thread-safe."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel

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
        rows = []
        now = to_iso(self.kernel.clock.now())
        for pair in pairs:
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise TypeError(f"put_many takes (key, value) pairs or a dict, got {pair!r}")
            key, value = pair
            rows.append((namespace, collection, _check_key(key), _dump(key, value), now))
        if not rows:
            return 0
        with self.kernel.session(write=True) as db:
            db.executemany(
                "INSERT INTO kv_entries (namespace, collection, key, value, updated_at) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (namespace, collection, key) DO UPDATE SET value = excluded.value, "
                "updated_at = excluded.updated_at",
                rows,
            )
        return len(rows)

    def delete(self, key: str, *, collection: str = DEFAULT_COLLECTION, namespace: str = DEFAULT_NAMESPACE) -> bool:
        """Remove ``key``; return whether it was there."""
        return self.delete_many([key], collection=collection, namespace=namespace) == 1

    def delete_many(self, keys: Sequence[str], *, collection: str = DEFAULT_COLLECTION,
                    namespace: str = DEFAULT_NAMESPACE) -> int:
        """Remove several keys in one transaction; return how many existed."""
        _check_place(collection, namespace)
        wanted = list(dict.fromkeys(_check_key(k) for k in keys))
        deleted = 0
        with self.kernel.session(write=True) as db:
            for start in range(0, len(wanted), _BATCH):
                part = wanted[start : start + _BATCH]
                cursor = db.execute(
                    f"DELETE FROM kv_entries WHERE namespace = ? AND collection = ? "
                    f"AND key IN ({', '.join('?' for _ in part)})",
                    (namespace, collection, *part),
                )
                deleted += max(cursor.rowcount, 0)
        return deleted

    def delete_collection(self, collection: str, *, namespace: str = DEFAULT_NAMESPACE) -> int:
        """Remove every key of a collection; return how many."""
        _check_place(collection, namespace)
        with self.kernel.session(write=True) as db:
            cursor = db.execute(
                "DELETE FROM kv_entries WHERE namespace = ? AND collection = ?", (namespace, collection)
            )
            return max(cursor.rowcount, 0)

    def erase(self, namespace: str) -> int:
        """Remove every entry of a namespace (``MemoryStore.erase_namespace`` calls this)."""
        check_namespace(namespace)
        with self.kernel.session(write=True) as db:
            cursor = db.execute("DELETE FROM kv_entries WHERE namespace = ?", (namespace,))
            return max(cursor.rowcount, 0)

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
        out: dict[str, Any] = {}
        with self.kernel.session() as db:
            for start in range(0, len(wanted), _BATCH):
                part = wanted[start : start + _BATCH]
                for key, value in db.query(
                    f"SELECT key, value FROM kv_entries WHERE namespace = ? AND collection = ? "
                    f"AND key IN ({', '.join('?' for _ in part)})",
                    (namespace, collection, *part),
                ):
                    out[key] = json.loads(value)
        return {k: out[k] for k in wanted if k in out}

    def items(self, *, collection: str = DEFAULT_COLLECTION, namespace: str = DEFAULT_NAMESPACE) -> dict[str, Any]:
        """Every key of a collection and its value, in key order."""
        _check_place(collection, namespace)
        with self.kernel.session() as db:
            rows = db.query(
                "SELECT key, value FROM kv_entries WHERE namespace = ? AND collection = ? ORDER BY key",
                (namespace, collection),
            )
        return {key: json.loads(value) for key, value in rows}

    def keys(self, *, collection: str = DEFAULT_COLLECTION, namespace: str = DEFAULT_NAMESPACE) -> list[str]:
        _check_place(collection, namespace)
        with self.kernel.session() as db:
            rows = db.query(
                "SELECT key FROM kv_entries WHERE namespace = ? AND collection = ? ORDER BY key",
                (namespace, collection),
            )
        return [r[0] for r in rows]

    def collections(self, *, namespace: str = DEFAULT_NAMESPACE) -> dict[str, int]:
        """Every collection of a namespace and how many keys it holds."""
        check_namespace(namespace)
        with self.kernel.session() as db:
            rows = db.query(
                "SELECT collection, count(*) FROM kv_entries WHERE namespace = ? GROUP BY collection ORDER BY collection",
                (namespace,),
            )
        return {c: int(n) for c, n in rows}


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


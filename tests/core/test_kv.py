"""The namespaced key-value table (shared_core/kv/, migration 0040)."""

from __future__ import annotations

import pytest

from shared_core import MemoryStore


def test_put_get_replace_and_copies(store):
    store.kv.put("k", {"a": [1, 2]}, collection="c")
    value = store.kv.get("k", collection="c")
    assert value == {"a": [1, 2]}
    value["a"].append(3)  # a fresh copy each read
    assert store.kv.get("k", collection="c") == {"a": [1, 2]}
    store.kv.put("k", {"a": "new"}, collection="c")
    assert store.kv.get("k", collection="c") == {"a": "new"}
    assert store.kv.get("missing", collection="c") is None
    assert store.kv.get("missing", "fallback", collection="c") == "fallback"


def test_collections_and_namespaces_are_separate(store):
    store.kv.put("k", 1, collection="one")
    store.kv.put("k", 2, collection="two")
    store.kv.put("k", 3, collection="one", namespace="user:bob")
    assert store.kv.get("k", collection="one") == 1
    assert store.kv.get("k", collection="two") == 2
    assert store.kv.get("k", collection="one", namespace="user:bob") == 3
    assert store.kv.collections() == {"one": 1, "two": 1}
    assert store.kv.collections(namespace="user:bob") == {"one": 1}


def test_put_many_items_keys_delete(store):
    assert store.kv.put_many({"b": {"n": 2}, "a": {"n": 1}, "c": None}, collection="c") == 3
    assert store.kv.items(collection="c") == {"a": {"n": 1}, "b": {"n": 2}, "c": None}
    assert store.kv.keys(collection="c") == ["a", "b", "c"]
    assert store.kv.get_many(["c", "zz", "a"], collection="c") == {"c": None, "a": {"n": 1}}
    assert store.kv.delete("a", collection="c") is True
    assert store.kv.delete("a", collection="c") is False
    assert store.kv.delete_many(["b", "nope"], collection="c") == 1
    assert store.kv.delete_collection("c") == 1
    assert store.kv.items(collection="c") == {}


def test_bad_input_is_a_clear_error(store):
    with pytest.raises(ValueError, match="not JSON-serialisable"):
        store.kv.put("k", {"when": object()})
    with pytest.raises(ValueError, match="NaN"):
        store.kv.put("k", float("nan"))
    with pytest.raises(TypeError, match="keys must be strings"):
        store.kv.put(3, {})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="collection"):
        store.kv.put("k", {}, collection="")
    with pytest.raises(ValueError, match="namespace"):
        store.kv.put("k", {}, namespace=" ")
    with pytest.raises(TypeError, match="pairs"):
        store.kv.put_many(["just-a-key"])  # type: ignore[list-item]


def test_a_failed_batch_writes_nothing(store):
    with pytest.raises(ValueError):
        store.kv.put_many([("good", 1), ("bad", object())])
    assert store.kv.items() == {}
    with pytest.raises(RuntimeError), store.transaction():
        store.kv.put("inside", 1)
        raise RuntimeError("roll back")
    assert store.kv.get("inside") is None


def test_values_persist_across_opens(tmp_path, clock):
    path = tmp_path / "kv.db"
    with MemoryStore.open(path, clock=clock) as first:
        first.kv.put("doc", {"hash": "ab"}, collection="docstore/metadata", namespace="user:alice")
    with MemoryStore.open(path, clock=clock) as second:
        assert second.kv.get("doc", collection="docstore/metadata", namespace="user:alice") == {"hash": "ab"}


def test_erase_namespace_removes_entries(file_store):
    file_store.kv.put("k", {"secret": "alice's"}, namespace="user:alice")
    file_store.kv.put("k", {"kept": True}, namespace="user:bob")
    file_store.erase_namespace("user:alice")
    assert file_store.kv.get("k", namespace="user:alice") is None
    assert file_store.kv.get("k", namespace="user:bob") == {"kept": True}


def test_erase_namespace_reaches_entries_of_a_fresh_store_object(tmp_path, clock):
    path = tmp_path / "erase.db"
    with MemoryStore.open(path, clock=clock) as first:
        first.kv.put("k", {"secret": 1}, namespace="user:alice")
    with MemoryStore.open(path, clock=clock) as second:  # .kv never touched before the erase
        second.erase_namespace("user:alice")
    with MemoryStore.open(path, clock=clock) as third:
        assert third.kv.items(namespace="user:alice") == {}

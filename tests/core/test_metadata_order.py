"""Metadata round-trips as the JSON it was given, key order included."""

from __future__ import annotations


def test_metadata_keeps_key_order_and_types(store):
    metadata = {"zeta": 1, "alpha": {"y": [1, 2.5, None, True], "b": "x"}, "mid": "é"}
    mid = store.add("ordered metadata", metadata=metadata)
    got = store.get(mid).metadata
    assert got == metadata
    assert list(got) == ["zeta", "alpha", "mid"] and list(got["alpha"]) == ["y", "b"]
    store.update(mid, metadata={"b": 2, "a": 1})
    assert list(store.get(mid).metadata) == ["b", "a"]

"""``namespaces()`` restricted to kinds and to live memories."""

from __future__ import annotations


def test_namespaces_by_kind_and_liveness(store, clock):
    store.add("a fact", namespace="team.a")
    store.add("a note", namespace="team.b", kind="note")
    store.add("a short-lived note", namespace="team.c", kind="note", ttl=60)
    store.add("elsewhere", namespace="other")
    assert store.namespaces("team.") == {"team.a": 1, "team.b": 1, "team.c": 1}
    assert store.namespaces("team.", kind="note") == {"team.b": 1, "team.c": 1}
    assert store.namespaces(kind=["note", "fact"]) == {"other": 1, "team.a": 1, "team.b": 1, "team.c": 1}
    clock.advance(minutes=2)
    assert store.namespaces("team.", kind="note") == {"team.b": 1, "team.c": 1}  # default: expired still counted
    assert store.namespaces("team.", kind="note", include_expired=False) == {"team.b": 1}
    assert store.namespaces(include_expired=False) == {"other": 1, "team.a": 1, "team.b": 1}

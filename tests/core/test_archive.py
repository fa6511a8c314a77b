"""The archive: out of the live index, still keyword-searchable, restorable (seed 002)."""

from __future__ import annotations

import pytest

from shared_core import NotFoundError


def test_archive_leaves_live_index_and_stays_keyword_searchable(store, clock):
    keep = store.add("kiwi smoothie recipe with banana")
    old = store.add("kiwi orchard visit in the autumn", tags=["travel"])
    store.reinforce(old)
    assert store.archive(old, reason="size-prune") == 1
    assert store.search("kiwi", fusion="keyword").ids == [keep]
    assert store.search("kiwi orchard visit in the autumn", fusion="vector").ids == [keep]
    assert store.db.scalar("SELECT count(*) FROM memory_vec") == 1
    with_archive = store.search("kiwi orchard", include_archive=True)
    assert set(with_archive.ids) == {keep, old}
    archived_hit = next(h for h in with_archive if h.id == old)
    assert archived_hit.memory.archived_at is not None and archived_hit.parts.fusion == "archive"
    only = store.archive.search("orchard")
    assert only.ids == [old] and only[0].memory.archive_reason == "size-prune"
    with pytest.raises(NotFoundError):
        store.get(old)
    assert store.archive.get(old).score == 3


def test_restore_brings_back_feedback_and_dates(store, clock):
    mid = store.add("the quarterly report is due on Friday", tags=["work"], metadata={"q": 3})
    store.reinforce(mid)
    created = store.get(mid).created_at
    store.archive(mid, reason="decayed")
    clock.advance(days=3)
    (restored,) = store.archive.restore(mid)
    assert restored.id == mid and restored.score == 3 and restored.created_at == created
    assert restored.tags == ["work"] and restored.metadata == {"q": 3}
    assert store.search("quarterly report", fusion="keyword").ids == [mid]
    assert store.search("the quarterly report is due on Friday", fusion="vector").ids == [mid]
    with pytest.raises(NotFoundError):
        store.archive.get(mid)


def test_archive_unknown_ids_are_errors(store):
    with pytest.raises(NotFoundError):
        store.archive("nope")
    with pytest.raises(NotFoundError):
        store.archive.restore("nope")


def test_archive_respects_namespaces(store):
    a = store.add("secret plan alpha", namespace="user:a")
    store.archive(a)
    assert store.archive.search("secret plan", namespace="user:b").ids == []
    assert store.archive.search("secret plan", namespace="user:a").ids == [a]

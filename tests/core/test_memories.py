"""Add, get, update, delete, dedup and feedback on memories."""

from __future__ import annotations

import re
import time

import pytest

from shared_core import AddResult, MemoryStore, NotFoundError
from shared_core.memories import new_id, new_ids


def test_add_returns_id_and_get_round_trips(store):
    mid = store.add(
        "The production server runs on Fly.io in Frankfurt",
        namespace="user:alice", tags=["infra", "deploy"], category="infrastructure",
        source="conversation", metadata={"project": "atlas", "nested": {"level": 2}},
        importance=0.7, confidence=0.9, pinned=True, session_id="s1", task_id="t1",
    )
    assert isinstance(mid, AddResult) and isinstance(mid, str) and mid.event == "created"
    memory = store.get(mid)
    assert memory.text == "The production server runs on Fly.io in Frankfurt"
    assert memory.kind == "fact"
    assert memory.namespace == "user:alice"
    assert memory.tags == ["infra", "deploy"]
    assert memory.category == "infrastructure"
    assert memory.source == "conversation"
    assert memory.metadata == {"project": "atlas", "nested": {"level": 2}}
    assert (memory.importance, memory.confidence, memory.pinned) == (0.7, 0.9, True)
    assert (memory.session_id, memory.task_id) == ("s1", "t1")
    assert memory.score == 0 and memory.access_count == 0 and memory.last_hit_at is None
    assert memory.created_at.isoformat() == "2026-01-01T00:00:00+00:00"


def test_generated_ids_are_unique_and_ordered_by_time(store):
    batch = new_ids(5000)
    assert len(set(batch)) == 5000 and all(re.fullmatch(r"[0-9a-f]{24}", i) for i in batch)
    time.sleep(0.002)
    later = new_id()
    assert later[:12] > batch[0][:12]  # the millisecond comes first: new ids sort after older ones
    first, second = store.add("Alpha fact about zebras"), store.add("Beta fact about walruses")
    assert re.fullmatch(r"[0-9a-f]{24}", first) and first[:12] <= second[:12]


def test_caller_given_id_upserts_and_keeps_feedback(store):
    assert store.add("first version", id="doc-1").event == "created"
    store.reinforce("doc-1")
    result = store.add("second version", id="doc-1", tags=["v2"])
    assert result == "doc-1" and result.event == "updated"
    memory = store.get("doc-1")
    assert memory.text == "second version" and memory.tags == ["v2"] and memory.score == 3
    assert store.count() == 1
    assert store.search("second", fusion="keyword").ids == ["doc-1"]
    assert store.search("first", fusion="keyword").ids == []


def test_caller_given_id_in_another_namespace_is_refused(store):
    store.add("alice's note", id="n1", namespace="user:alice")
    with pytest.raises(ValueError, match="already belongs to namespace 'user:alice'"):
        store.add("bob's note", id="n1", namespace="user:bob")
    assert store.get("n1").text == "alice's note"


def test_near_duplicate_fact_reinforces_existing(store):
    first = store.add("The production server runs on Fly.io in Frankfurt", namespace="ops")
    again = store.add("the production server runs on fly.io in Frankfurt.", namespace="ops")
    assert again == first and again.event == "reinforced"
    memory = store.get(first)
    assert memory.score == 3 and memory.last_hit_at is not None
    assert store.count(namespace="ops") == 1


def test_dedup_is_per_namespace_and_only_for_facts(store):
    a = store.add("User prefers dark mode interfaces", namespace="user:a")
    b = store.add("User prefers dark mode interfaces", namespace="user:b")
    assert a != b and b.event == "created"
    c = store.add("User prefers dark mode interfaces", namespace="user:a", kind="note")
    assert c.event == "created"
    d = store.add("User prefers dark mode interfaces", namespace="user:a", dedup=False)
    assert d.event == "created" and store.count(namespace="user:a", kind="fact") == 2


def test_distinct_facts_are_not_merged(store):
    a = store.add("The production server runs on Fly.io in Frankfurt")
    b = store.add("User's timezone is Europe/Berlin")
    assert a != b and b.event == "created"


def test_reinforce_demote_and_update_follow_seed_002(store, clock):
    mid = store.add("Payment API HMAC signature must not include a trailing empty string", tags="payments, hmac")
    assert store.get(mid).tags == ["payments", "hmac"]
    clock.advance(days=2)
    m = store.reinforce(mid)
    assert m.score == 3 and m.last_hit_at == clock.now()
    clock.advance(days=1)
    m = store.demote(mid)
    assert m.score == 2 and m.last_hit_at != clock.now()  # demote does not refresh the hit time
    clock.advance(days=1)
    m = store.update(mid, "Payment API HMAC: no trailing empty string when the body is empty", tags=["payments"])
    assert m.score == 2  # update preserves the score ...
    assert m.last_hit_at == clock.now()  # ... and refreshes last_hit_at
    assert m.text.startswith("Payment API HMAC: no trailing") and m.tags == ["payments"]
    assert store.search("trailing body empty", fusion="keyword").ids == [mid]


def test_feedback_weights_are_configurable(clock):
    with MemoryStore.open(":memory:", clock=clock, config={"memory": {"reinforce_weight": 5, "demote_weight": 2}}) as s:
        mid = s.add("x marks the spot")
        assert s.reinforce(mid).score == 5
        assert s.demote(mid).score == 3
        assert s.reinforce(mid, weight=1).score == 4


def test_delete_removes_row_index_and_vector(store):
    mid = store.add("ephemeral secret zebra")
    assert store.search("zebra", fusion="keyword").ids == [mid]
    assert store.delete(mid) == 1
    with pytest.raises(NotFoundError):
        store.get(mid)
    assert store.search("zebra", fusion="keyword").ids == []
    assert store.search("ephemeral secret zebra", fusion="vector").ids == []
    assert store.db.scalar("SELECT count(*) FROM memory_vec") == 0


def test_delete_unknown_id_is_a_clear_error(store):
    with pytest.raises(NotFoundError, match="no memory with id 'nope'"):
        store.delete("nope")
    assert store.delete(["nope"], missing_ok=True) == 0


def test_unknown_ids_are_clear_errors(store):
    for call in (store.get, store.reinforce, store.demote, lambda i: store.update(i, "x")):
        with pytest.raises(NotFoundError, match="no memory with id 'missing'"):
            call("missing")


def test_namespace_guard_on_id_operations(store):
    mid = store.add("alice only", namespace="user:alice")
    with pytest.raises(NotFoundError, match="in namespace 'user:bob'"):
        store.get(mid, namespace="user:bob")
    with pytest.raises(NotFoundError):
        store.reinforce(mid, namespace="user:bob")
    assert store.get(mid, namespace="user:alice").id == mid


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"text": ""}, "empty"),
        ({"text": "   \n"}, "empty"),
        ({"text": "x", "namespace": ""}, "namespace"),
        ({"text": "x", "kind": "Not A Kind"}, "kind"),
        ({"text": "x", "importance": 2}, "between 0 and 1"),
        ({"text": "x", "metadata": {"bad": float("nan")}}, "NaN"),
        ({"text": "x", "ttl": -5}, "positive"),
        ({"text": "x", "ttl": 5, "expires_at": "2030-01-01"}, "either"),
        ({"text": "x", "vector": [1.0, 2.0]}, "dimensions"),
        ({"text": "x", "vector": float("nan")}, "NaN"),  # a number: that value in every dimension
        ({"text": "x", "vector": 0.0}, "zeros"),
        ({"text": "x", "expires_at": "not a date"}, "ISO-8601"),
    ],
)
def test_bad_input_is_refused_and_nothing_is_written(store, kwargs, message):
    if isinstance(kwargs.get("vector"), float):
        kwargs = {**kwargs, "vector": [kwargs["vector"]] * store.embedder.dims}
    with pytest.raises((ValueError, TypeError), match=message):
        store.add(**kwargs)
    assert store.db.scalar("SELECT count(*) FROM memory_chunks") == 0
    assert store.db.scalar("SELECT count(*) FROM memory_vec") == 0


def test_text_must_be_a_string(store):
    with pytest.raises(TypeError, match="text must be a string"):
        store.add(42)  # type: ignore[arg-type]


def test_add_many_batches_and_reports_ids(store):
    progress = []
    results = store.add_many(
        ["alpha one", {"text": "beta two", "tags": ["b"]}, {"text": "gamma three", "id": "g"}],
        namespace="bulk", batch_size=2, progress=lambda done, total: progress.append((done, total)),
    )
    assert [r.event for r in results] == ["created"] * 3 and results[2] == "g"
    assert store.count(namespace="bulk") == 3
    assert progress == [(2, 3), (3, 3)]
    assert store.get(results[1]).tags == ["b"]


def test_add_many_writes_the_batches_before_a_bad_one(store):
    """Batches are prepared a step ahead on another thread; a bad item still stops the load at its
    own batch, after every batch before it was written, and the thread is gone afterwards."""
    import threading

    texts = [f"bulk note {i}" for i in range(25)]
    texts[22] = "   "  # the third batch cannot be prepared
    progress = []
    with pytest.raises(ValueError, match="empty"):
        store.add_many(texts, namespace="bulk", batch_size=10, progress=lambda done, total: progress.append(done))
    assert store.count(namespace="bulk") == 20 and progress == [10, 20]
    store.add("first", id="taken-elsewhere", namespace="other")
    clash = [{"text": f"row {i}"} for i in range(15)] + [{"text": "clash", "id": "taken-elsewhere"}] + [{"text": "z"}] * 9
    with pytest.raises(ValueError, match="already belongs to namespace"):  # a failed write, not preparation
        store.add_many(clash, namespace="rows", batch_size=10)
    assert store.count(namespace="rows") == 10
    assert not [t for t in threading.enumerate() if t.name.startswith("openkoi-prepare")]


def test_add_many_pauses_the_cyclic_gc_and_restores_it(store):
    """A bulk load runs with Python's cyclic GC off (its full passes cost seconds per 100k) and
    leaves it as it found it, after a failure too."""
    import gc

    seen = []
    assert gc.isenabled()
    store.add_many([f"gc note {i}" for i in range(30)], batch_size=10, progress=lambda *_: seen.append(gc.isenabled()))
    assert seen == [False, False, False] and gc.isenabled()
    with pytest.raises(ValueError, match="empty"):
        store.add_many(["fine"] * 10 + ["  "], batch_size=10)
    assert gc.isenabled()
    gc.disable()
    try:
        store.add_many([f"more gc notes {i}" for i in range(30)], batch_size=10)
        assert not gc.isenabled()  # the caller's choice stays
    finally:
        gc.enable()
    store.add_many(["one small batch"], progress=lambda *_: seen.append(gc.isenabled()))
    assert seen[-1] is True  # a single batch is left alone


def test_add_many_merges_the_keyword_index_after_a_load_that_doubles_it(store, monkeypatch):
    """FTS5 would otherwise rewrite a bulk load's postings during the single adds after it."""
    merges = []
    keyword = store.kernel.keyword
    monkeypatch.setattr(keyword, "optimize", lambda: merges.append(store.count(namespace="load")))
    store.add_many([f"first load {i}" for i in range(1200)], namespace="load", batch_size=500)
    assert merges == [1200]
    store.add_many([f"second load {i}" for i in range(1100)], namespace="load")  # 1,100 of 2,300: not double
    store.add_many([f"a few more {i}" for i in range(20)], namespace="load")
    assert merges == [1200]
    store.add_many([f"third load {i}" for i in range(2400)], namespace="load", batch_size=800)
    assert merges == [1200, 4720]


def test_add_many_rejects_unknown_fields(store):
    with pytest.raises(ValueError, match="unknown memory fields"):
        store.add_many([{"text": "x", "colour": "red"}])


def test_metadata_with_a_nul_character_is_refused(store):
    """PostgreSQL's jsonb cannot hold NUL: refused on every backend, so files stay portable and a
    metadata filter never meets a row it cannot read."""
    for metadata in ({"note": "a\x00b"}, {"k\x00": 1}, {"deep": [{"x": "\x00"}]}):
        with pytest.raises(ValueError, match="metadata contains a NUL character"):
            store.add("a fact with odd metadata", metadata=metadata)
    kept = store.add("a fact with a backslash", metadata={"pattern": "\\u0000"})  # the six characters, no NUL
    assert store.get(kept).metadata == {"pattern": "\\u0000"}
    assert store.search("backslash", where={"pattern": "\\u0000"}).ids == [kept]
    with pytest.raises(ValueError, match="metadata contains a NUL character"):
        store.update(kept, metadata={"pattern": "\x00"})
    assert store.get(kept).metadata == {"pattern": "\\u0000"}


def test_ttl_expiry_hides_then_sweep_deletes(store, clock):
    mid = store.add("short lived reminder", ttl=3600)
    assert store.search("reminder", fusion="keyword").ids == [mid]
    clock.advance(hours=2)
    assert store.search("reminder", fusion="keyword").ids == []
    assert store.search("reminder", fusion="keyword", include_expired=True).ids == [mid]
    assert store.search("short lived reminder", fusion="vector").ids == []
    assert store.sweep_expired() == 1
    assert store.count(include_expired=True) == 0


def test_list_and_count_and_namespaces(store):
    for i in range(5):
        store.add(f"note number {i}", namespace="a" if i % 2 else "b", dedup=False)
    assert store.count(namespace="a") == 2 and store.count(namespace="b") == 3
    assert store.namespaces() == {"a": 2, "b": 3}
    listed = store.list(namespace="b", order_by="created_at")
    assert [m.text for m in listed] == ["note number 0", "note number 2", "note number 4"]
    assert len(store.list(namespace_prefix="", limit=2)) == 2


def test_store_is_closed_after_context(clock):
    from shared_core import StoreClosedError

    with MemoryStore.open(":memory:", clock=clock) as s:
        s.add("x")
    with pytest.raises(StoreClosedError):
        s.add("y")


def test_add_many_over_several_statements_indexes_every_row(store):
    # 1,234 rows of 21 columns: several multi-row INSERT statements per transaction
    texts = [f"bulk note {i} about {'zebras' if i % 100 == 7 else 'horses'}" for i in range(1234)]
    results = store.add_many(texts, namespace="bulk", batch_size=1000)
    assert len(set(results)) == 1234 and all(r.created for r in results)
    assert store.count(namespace="bulk") == 1234
    zebras = store.search("zebras", namespace="bulk", limit=50, fusion="keyword")
    assert sorted(h.memory.text for h in zebras) == sorted(t for t in texts if "zebras" in t)
    assert store.get(results[-1]).text == texts[-1]
    assert store.search(vector=store.embedder.embed([texts[500]])[0], namespace="bulk", limit=1,
                        fusion="vector")[0].memory.text == texts[500]


def test_add_many_is_all_or_nothing_per_batch(store):
    store.add("first", id="taken-elsewhere", namespace="other")
    with pytest.raises(ValueError, match="already belongs to namespace"):
        store.add_many([{"text": f"row {i}"} for i in range(700)] + [{"text": "clash", "id": "taken-elsewhere"}],
                       namespace="bulk")
    assert store.count(namespace="bulk") == 0
    assert store.search("row", namespace="bulk", fusion="keyword").ids == []

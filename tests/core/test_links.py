"""Hebbian links (seed 002 v2): co-recalled memories link, links strengthen, searches can expand."""

from __future__ import annotations

import pytest

from shared_core import MemoryStore
from shared_core.ranking import feedback_weight, link_strength_after, link_weight, recency_weight


def test_formulas():
    assert link_strength_after(None) == 1.0  # seed 002: strength REAL DEFAULT 1.0
    assert link_strength_after(1.0) == 2.0  # "increment strength" on each co-recall
    assert link_strength_after(2.0, initial=0.5, increment=0.25) == 2.25
    assert link_weight(3.0) == 0.5
    assert link_weight(9.0) == 0.75
    assert link_weight(0.0) == 0.0
    assert link_weight(1.0, half_strength=1.0) == 0.5


def _three(store, namespace="default"):
    a = store.add("payment api hmac signature bug", namespace=namespace)
    b = store.add("payment onboarding checklist for the api", namespace=namespace)
    c = store.add("hmac debugging session notes", namespace=namespace)
    return a, b, c


def test_returned_together_means_linked_and_each_co_recall_strengthens(store):
    a, b, c = _three(store)
    hits = store.search("payment api hmac", fusion="keyword")
    assert set(hits.ids) == {a, b, c}
    assert store.links.count() == 3
    assert store.links.strength(a, b) == store.links.strength(b, c) == link_strength_after(None)
    store.search("payment api hmac", fusion="keyword")
    assert store.links.strength(b, a) == link_strength_after(link_strength_after(None))
    neighbours = store.links.neighbours(a)
    assert {n.other for n in neighbours} == {b, c} and all(n.memory_id == a for n in neighbours)


def test_only_the_top_hits_are_linked(clock):
    with MemoryStore.open(":memory:", clock=clock, config={"links": {"max_linked_hits": 4}}) as store:
        store.add_many([f"shared keyword item {i}" for i in range(12)])
        assert len(store.search("shared keyword", fusion="keyword", limit=12)) == 12
        assert store.links.count() == 6  # 4 choose 2


def test_switched_off_and_untracked_searches_link_nothing(clock):
    with MemoryStore.open(":memory:", clock=clock, config={"links": {"enabled": False}}) as store:
        _three(store)
        store.search("payment api hmac")
        assert store.links.count() == 0
    with MemoryStore.open(":memory:", clock=clock) as store:
        _three(store)
        store.search("payment api hmac", track_access=False)
        assert store.links.count() == 0


def test_links_stay_within_a_namespace(store):
    a = store.add("kiwi orchard", namespace="user:a")
    b = store.add("kiwi smoothie", namespace="user:b")
    a2 = store.add("kiwi jam", namespace="user:a")
    store.search("kiwi", namespace=["user:a", "user:b"], fusion="keyword")
    assert store.links.count("user:a") == 1 and store.links.count("user:b") == 0
    assert store.links.strength(a, a2) == 1.0 and store.links.strength(a, b) is None


def test_expansion_adds_strongly_linked_neighbours(store, clock):
    a = store.add("payment api hmac signature")
    b = store.add("onboarding of the payment partner")
    store.add("unrelated gardening note")
    for _ in range(2):
        store.search("payment", fusion="keyword")
    assert store.links.strength(a, b) == 2.0
    # below links.expand_min_strength (3): no expansion
    assert store.search("hmac", fusion="keyword", expand_links=True).ids == [a]
    store.search("payment", fusion="keyword")
    clock.advance(days=10)
    hits = store.search("hmac", fusion="keyword", expand_links=True)
    assert hits.ids == [a, b]
    direct, linked = hits
    assert linked.parts.fusion == "link" and linked.parts.linked_from == a and linked.parts.link_strength == 3.0
    assert linked.parts.bm25 is None and linked.parts.similarity is None
    expected = direct.parts.relevance * link_weight(3.0) * feedback_weight(0) * recency_weight(10)
    assert linked.score == pytest.approx(expected)
    assert "linked from" in linked.explain()
    # an expansion hit is returned (access counted) but not linked: no rich-get-richer loop
    assert store.get(b).access_count == 4
    assert store.links.strength(a, b) == 3.0
    # without expand_links nothing is added
    assert store.search("hmac", fusion="keyword").ids == [a]


def test_expansion_respects_the_search_scope_and_limits(clock):
    cfg = {"links": {"expand_min_strength": 1.0, "expand_limit": 1}}
    with MemoryStore.open(":memory:", clock=clock, config=cfg) as store:
        a = store.add("alpha topic", kind="fact", tags=["x"])
        b = store.add("alpha detail", kind="episode", tags=["x"])
        c = store.add("alpha extra", kind="fact", tags=["y"])
        store.search("alpha", fusion="keyword")
        hits = store.search("topic", fusion="keyword", expand_links=True)
        assert len(hits) == 2 and hits[1].id in (b, c)  # expand_limit 1
        assert store.search("topic", fusion="keyword", kind="fact", expand_links=True).ids == [a, c]
        assert store.search("topic", fusion="keyword", tags="x", expand_links=True).ids == [a, b]
        assert store.search("topic", fusion="keyword", namespace="other", expand_links=True).ids == []


def test_expand_by_default_setting(clock):
    cfg = {"links": {"expand_by_default": True, "expand_min_strength": 1.0}}
    with MemoryStore.open(":memory:", clock=clock, config=cfg) as store:
        a = store.add("alpha topic")
        b = store.add("alpha detail")
        store.search("alpha", fusion="keyword")
        assert store.search("topic", fusion="keyword").ids == [a, b]
        assert store.search("topic", fusion="keyword", expand_links=False).ids == [a]


def test_links_follow_archive_restore_and_go_with_delete(store):
    a, b, c = _three(store)
    store.search("payment api hmac", fusion="keyword")
    store.archive(a, reason="manual")
    assert store.links.strength(a, b) == 1.0  # archived, not gone
    store.archive.restore(a)
    assert store.links.strength(a, b) == 1.0
    store.delete(a)
    assert store.links.strength(a, b) is None and store.links.strength(a, c) is None
    assert store.links.strength(b, c) == 1.0
    store.archive(b, reason="manual")
    store.db.execute("DELETE FROM memory_archive WHERE id = ?", (b,))  # gone from the archive for good
    assert store.links.count() == 0


def test_archived_hits_are_not_linked(store):
    a, b, c = _three(store)
    store.archive([b, c], reason="manual")
    hits = store.search("payment api hmac", fusion="keyword", include_archive=True)
    assert set(hits.ids) == {a, b, c}
    assert store.links.count() == 0


def test_erase_namespace_removes_links_even_from_a_fresh_store(tmp_path, clock):
    path = tmp_path / "mem.db"
    with MemoryStore.open(path, clock=clock) as store:
        _three(store, "user:a")
        _three(store, "user:b")
        store.search("payment api hmac", namespace="user:a", fusion="keyword")
        store.search("payment api hmac", namespace="user:b", fusion="keyword")
        assert store.links.count() == 6
    with MemoryStore.open(path, clock=clock) as other:  # never touched .links before erasing
        other.erase_namespace("user:a")
        assert other.links.count("user:a") == 0 and other.links.count("user:b") == 3


def test_manual_link_unlink_and_read_only(tmp_path, clock):
    path = tmp_path / "mem.db"
    with MemoryStore.open(path, clock=clock) as store:
        a, b, c = _three(store)
        assert store.links.link([a, b]) == 1
        assert store.links.strength(a, b) == 1.0
        assert store.links.unlink(b, a) and not store.links.unlink(b, a)
        assert store.links.neighbours("nope") == []
    with MemoryStore.open(path, clock=clock, read_only=True) as reader:
        assert len(reader.search("payment api hmac", fusion="keyword")) == 3
        assert reader.links.count() == 0


def test_clock_going_backwards(store, clock):
    a, b, _ = _three(store)
    store.search("payment", fusion="keyword")
    clock.advance(days=-30)
    store.search("payment", fusion="keyword")
    assert store.links.strength(a, b) == 2.0
    (link,) = [n for n in store.links.neighbours(a) if n.other == b]
    assert link.updated_at == clock.now()


def test_cli_links(tmp_path):
    from click.testing import CliRunner

    from shared_core.cli import main

    db = str(tmp_path / "cli.db")
    runner = CliRunner()
    ids = [runner.invoke(main, ["--db", db, "add", text]).output.strip()
           for text in ("kiwi orchard visit", "kiwi smoothie recipe")]
    runner.invoke(main, ["--db", db, "search", "kiwi"])
    out = runner.invoke(main, ["--db", db, "links", ids[0]])
    assert out.exit_code == 0 and f"[id:{ids[1]}] strength 1" in out.output

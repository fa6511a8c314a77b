"""Searching messages with seed 003's query flow: threshold, scan limit, and the summary fallback."""

from __future__ import annotations

import pytest

from shared_core import HashingEmbedder, MemoryStore
from shared_core.conversations import MessageResults


def _old_group(convs, words, day, session="s"):
    return [convs.append(session, "user", f"{w} chatter number {i}", platform="slack", channel="eng",
                         sent_at=f"2026-01-{day:02d}T10:0{i}:00Z") for i, w in enumerate(words)]


def test_keyword_matches_come_back_with_their_messages(store):
    convs = store.conversations
    hit = convs.append("s", "user", "The invoice number is INV-2291")
    convs.append("s", "user", "Something unrelated about gardening")
    results = convs.search("invoice INV-2291")
    assert isinstance(results, MessageResults) and results.ids == [hit.message_id]
    (first,) = results
    assert first.kind == "message" and first.keyword_match and first.message.content == hit.content
    assert first.text == hit.content and first.timestamp == hit.sent_at and not results.fallback_used
    assert "<table>" in results._repr_html_()


def test_threshold_is_per_embedder_and_overridable(store, clock, fake_embedder):
    convs = store.conversations
    convs.append("s", "user", "alpha beta gamma")
    # no keyword in common with the stored text, so only the vector side can find it
    assert convs.search("Tier short", threshold=0.0, include_summaries=False).ids != []
    assert convs.search("Tier short", threshold=0.99, include_summaries=False).ids == []
    assert convs.search_threshold == 0.65  # the default static embedder's own (EmbedderProfile.kb_threshold)
    with MemoryStore.open(":memory:", clock=clock, embedder=HashingEmbedder()) as hashing:
        assert hashing.conversations.search_threshold == 0.35
    with MemoryStore.open(":memory:", clock=clock, config={"forgetting": {"vector_threshold": 0.99}}) as strict:
        strict.conversations.append("s", "user", "alpha beta gamma")
        assert strict.conversations.search_threshold == 0.99
        assert strict.conversations.search("Tier short", include_summaries=False).ids == []
        assert strict.conversations.search("alpha", include_summaries=False).ids != []  # keywords bypass it
    with MemoryStore.open(":memory:", clock=clock, embedder=fake_embedder) as other:
        assert other.conversations.search_threshold == 0.7  # sentence-model default, as in the seed


def test_scan_limit_is_limit_times_ten(store, monkeypatch):
    convs = store.conversations
    for i in range(30):
        convs.append("s", "user", f"apple note {i}")
    seen = {}
    original = store.memories.search

    def spy(*args, **kwargs):
        seen["limit"] = kwargs["limit"]
        return original(*args, **kwargs)

    monkeypatch.setattr(store.memories, "search", spy)
    assert len(convs.search("apple", limit=2)) == 2 and seen["limit"] == 20


def test_session_and_time_filters(store, clock):
    convs = store.conversations
    a = convs.append("a", "user", "deploy the kiwi service", sent_at="2026-01-02T00:00:00Z")
    b = convs.append("b", "user", "deploy the kiwi service again", sent_at="2026-01-05T00:00:00Z")
    assert set(convs.search("kiwi deploy").ids) == {a.message_id, b.message_id}
    assert convs.search("kiwi deploy", session_id="a").ids == [a.message_id]
    assert convs.search("kiwi deploy", since="2026-01-03T00:00:00Z").ids == [b.message_id]
    assert convs.search("kiwi deploy", until="2026-01-03T00:00:00Z").ids == [a.message_id]
    with pytest.raises(ValueError):
        convs.search("kiwi", limit=0)


def test_few_raw_results_bring_in_summaries_newest_first(store, clock):
    convs = store.conversations
    _old_group(convs, ["rocket", "rocket", "rocket"], day=1)
    _old_group(convs, ["rocket", "rocket", "rocket"], day=3)
    clock.set("2026-02-01T00:00:00Z")
    summaries = store.forgetting.run().summary_ids
    assert len(summaries) == 2
    fresh = convs.append("s", "user", "a new rocket launch today")
    results = convs.search("rocket")
    assert results.fallback_used
    assert [h.kind for h in results] == ["message", "summary", "summary"]
    assert [h.timestamp for h in results] == sorted((h.timestamp for h in results), reverse=True)
    assert results[0].message.message_id == fresh.message_id
    assert {h.summary.summary_id for h in results[1:]} == set(summaries)
    assert results[1].text == results[1].summary.summary_text and results[1].id.startswith("ms_")
    # enough raw results: no fallback
    assert not convs.search("rocket", min_raw_results=1).fallback_used
    assert not convs.search("rocket", include_summaries=False).fallback_used
    # the summaries' time range and session are honoured
    in_range = convs.search("rocket", since="2026-01-02T00:00:00Z", until="2026-01-05T00:00:00Z")
    assert [h.kind for h in in_range] == ["summary"]
    assert convs.search("rocket", session_id="other").ids == []
    assert len(convs.search("rocket", session_id="s")) == 3


def test_results_count_as_accesses(store, clock):
    convs = store.conversations
    m = convs.append("s", "user", "the spare key is under the mat")
    convs.search("spare key")
    convs.search("spare key", track_access=False)
    assert convs.get(m.message_id, track_access=False).access_count == 1

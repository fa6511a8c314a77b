"""Episodic memory (seed 001): timestamped summaries, importance in ranking, time ranges, channels."""

from __future__ import annotations

import pytest

from shared_core import NotFoundError
from shared_core.ranking import episode_score


def test_add_and_index(store, clock):
    episode = store.episodes.add("Discussed moving the database to Postgres", channel="slack", importance=0.8,
                                 at="2025-12-30T15:00:00Z", session_id="s-9", metadata={"people": ["ana"]})
    assert episode.occurred_at.isoformat() == "2025-12-30T15:00:00+00:00" and episode.channel == "slack"
    assert episode.metadata == {"people": ["ana"]} and episode.created_at == clock.now()
    memory = store.get(episode.id)
    assert memory.kind == "episode" and memory.importance == 0.8 and memory.created_at == episode.occurred_at
    assert memory.metadata["channel"] == "slack" and memory.session_id == "s-9"
    assert store.search("Postgres", kind="episode").ids == [episode.id]


def test_time_range_queries(store):
    days = ["2025-12-01", "2025-12-10", "2025-12-20", "2026-01-01"]
    made = [store.episodes.add(f"Standup notes for {d}", at=f"{d}T09:00:00Z") for d in days]
    found = store.episodes.between("2025-12-05", "2025-12-21")
    assert [e.id for e in found] == [made[1].id, made[2].id]
    assert [e.id for e in store.episodes.between(since="2025-12-20")] == [made[2].id, made[3].id]
    assert [e.id for e in store.episodes.between(until="2025-12-10T09:00:00Z")] == [made[0].id]  # until is exclusive
    assert [e.id for e in store.episodes.recent(2)] == [made[3].id, made[2].id]
    matches = store.episodes.search("standup notes", since="2025-12-15")
    assert {m.episode.id for m in matches} == {made[2].id, made[3].id}
    with pytest.raises(ValueError, match="before since"):
        store.episodes.between("2026-01-02", "2026-01-01")
    with pytest.raises(ValueError, match="ISO-8601"):
        store.episodes.between("last tuesday")


def test_channels(store):
    a = store.episodes.add("Planned the launch with marketing", channel="email")
    b = store.episodes.add("Planned the launch with engineering", channel="slack")
    assert [e.id for e in store.episodes.recent(channel="email")] == [a.id]
    assert [m.episode.id for m in store.episodes.search("planned the launch", channel="slack")] == [b.id]
    assert {m.episode.id for m in store.episodes.search("planned the launch")} == {a.id, b.id}  # across channels
    assert [e.id for e in store.episodes.between(channel="slack")] == [b.id]


def test_importance_ranks_equally_relevant_episodes(store):
    low = store.episodes.add("Reviewed the roadmap for the quarter", importance=0.1)
    high = store.episodes.add("Reviewed the roadmap for the quarter!", importance=0.9)
    matches = store.episodes.search("reviewed the roadmap")
    assert [m.episode.id for m in matches] == [high.id, low.id]
    for match in matches:
        assert match.score == pytest.approx(episode_score(match.relevance, match.episode.importance, 0.5))
    assert episode_score(1.0, 1.0) == 1.0 and episode_score(1.0, 0.0) == 0.5 and episode_score(1.0, None) == 0.75


def test_clock_going_backwards(store, clock):
    first = store.episodes.add("Before the jump")
    clock.advance(days=-10)
    second = store.episodes.add("After the jump")
    assert [e.id for e in store.episodes.recent()] == [first.id, second.id]


def test_delete_erase_and_bad_input(store):
    episode = store.episodes.add("Temporary", namespace="user:q")
    store.episodes.delete(episode.id)
    with pytest.raises(NotFoundError):
        store.episodes.get(episode.id)
    store.episodes.add("Private chat", namespace="user:q")
    store.erase_namespace("user:q")
    assert store.db.scalar("SELECT count(*) FROM episodic_memory") == 0
    with pytest.raises(ValueError, match="importance"):
        store.episodes.add("x", importance=3)
    with pytest.raises(ValueError, match="channel"):
        store.episodes.add("x", channel="")
    assert store.episodes.search("nothing here") == []

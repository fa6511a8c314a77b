"""Conversation context in search: a memory's session neighbours lend it part of their relevance."""

from __future__ import annotations

import pytest

from shared_core import MemoryStore, NewMemory
from shared_core.config import Config, ConfigError
from shared_core.ranking import with_context


def test_a_neighbour_lends_a_share_of_its_own_relevance():
    relevance = {1: 1.0, 2: 0.1, 3: 0.2, 4: 0.5}
    neighbours = {2: (1, 3), 3: (2, None), 4: (None, 9)}  # 9 is not a candidate: lends nothing
    lifted = with_context(relevance, neighbours, 0.2)
    assert lifted == pytest.approx({1: 1.0, 2: 0.3, 3: 0.22, 4: 0.5})  # 3 gets 2's own 0.1, not its lifted 0.3
    assert with_context(relevance, neighbours, 0.0) == relevance
    with pytest.raises(ValueError, match="must not be negative"):
        with_context(relevance, neighbours, -0.1)


def test_the_setting_is_checked():
    assert Config.load().search.context_weight == 0.2
    with pytest.raises(ConfigError, match="context_weight"):
        Config.load(overrides={"search": {"context_weight": -1}})


def _chat(clock, weight: float | None, question_session: str = "trip") -> list[str]:
    config: dict = {"search": {"track_access": False}}
    if weight is not None:
        config["search"]["context_weight"] = weight
    with MemoryStore.open(":memory:", clock=clock, embedder="hashing", config=config) as store:
        store.add_many([
            NewMemory("Ann: did you finish the pottery class in Kyoto?", id="question", session_id=question_session),
            NewMemory("Ben: yes, I made a blue bowl there", id="reply", session_id="trip"),
            NewMemory("Ben: the weather was grey all week", id="aside", session_id="trip"),
        ])
        clock.advance(days=1)
        store.add("Ben: I made a cake for the party", id="distractor", session_id="party")
        hits = store.search("what did Ben make at the pottery class", limit=4)
        return hits.ids


def test_a_reply_is_found_with_the_question_it_answers(clock):
    assert _chat(clock, 0.0).index("distractor") < _chat(clock, 0.0).index("reply")
    ranked = _chat(clock, None)
    assert ranked.index("reply") < ranked.index("distractor"), ranked


def test_only_neighbours_in_the_same_session_lend(clock):
    ranked = _chat(clock, None, question_session="elsewhere")
    assert ranked.index("distractor") < ranked.index("reply"), ranked


def test_neighbours_follow_time_then_insertion_order(clock):
    with MemoryStore.open(":memory:", clock=clock, config={}) as store:
        store.add_many([NewMemory(f"turn {i}", id=f"t{i}", session_id="s") for i in range(3)])
        store.add("late but said first", id="early", session_id="s", created_at="2025-12-01T00:00:00Z")
        store.add("other namespace", id="x", session_id="s", namespace="other")
        rows = {m.id: m.rowid for m in store.list(limit=10)} | {"x": store.get("x", namespace="other").rowid}
        found = store.kernel.memories.session_neighbours(list(rows.values()))
        by_id = {rowid: key for key, rowid in rows.items()}
        named = {by_id[r]: tuple(by_id.get(n) if n is not None else None for n in pair) for r, pair in found.items()}
        assert named == {"early": (None, "t0"), "t0": ("early", "t1"), "t1": ("t0", "t2"), "t2": ("t1", None),
                         "x": (None, None)}

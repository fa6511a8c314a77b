"""Part 6: build_context's prompt addendum within a token budget; salience (seed 004)."""

from __future__ import annotations

import pytest

from shared_core import MemoryStore
from shared_core.context import ContextAddendum
from shared_core.context.addendum import SECTIONS
from shared_core.ranking import is_salient, salience
from shared_core.tokens import count_tokens


@pytest.mark.parametrize("accesses, days, score, expected, surfaces", [
    (0, 0, 0, 0.0, False),  # never retrieved
    (3, 0, 0, 1.386, False),
    (4, 0, 0, 1.609, True),  # 4 accesses today
    (20, 7, 0, 1.522, True),  # 20 accesses, one half-life ago
    (10, 7, 0, 1.199, False),
    (4, 14, 0, 0.402, False),  # two half-lives: a quarter
    (3, 0, 3, 2.526, True),  # reinforced once (+3): seed 002's 1.82x
    (4, 0, -5, 0.592, False),  # demoted five times: 0.37x
])
def test_salience_is_access_boost_times_feedback_times_recency(accesses, days, score, expected, surfaces):
    value = salience(accesses, days, score)
    assert value == pytest.approx(expected, abs=1e-3)
    assert is_salient(value) is surfaces
    assert salience(4, 7, half_life_days=14) == pytest.approx(salience(4, 0) * 2 ** -0.5)


def _access(store, memory_id, times):
    rowid = store.get(memory_id).rowid
    with store.transaction():
        for _ in range(times):
            store.kernel.memories.track_access([rowid])


def test_salient_facts_surface_without_a_query_and_fade(store, clock):
    often = store.add("The user's cat is called Whiskerino")
    rarely = store.add("The user lives in Lisbon")
    pinned = store.add("Never book red-eye flights", pinned=True)
    _access(store, often, 4)
    _access(store, rarely, 2)
    salient = store.memory_manager.salient_facts()
    assert [s.memory.id for s in salient] == [pinned, often]
    addendum = store.memory_manager.build_context(None)
    assert [i.id for i in addendum.salient_facts] == [pinned, often] and addendum.query is None
    assert addendum.relevant_facts == [] and addendum.recall is None  # nothing query-based without a query
    assert store.get(often).access_count == 4  # surfacing is not an access (it would feed itself)
    clock.advance(days=8)  # more than one half-life later
    assert [s.memory.id for s in store.memory_manager.salient_facts()] == [pinned]


def test_the_threshold_is_configurable(clock):
    with MemoryStore.open(":memory:", clock=clock, config={"context": {"salience_threshold": 0.5}}) as store:
        fact = store.add("The user lives in Lisbon")
        _access(store, fact, 1)  # ln 2 = 0.69
        assert [s.memory.id for s in store.memory_manager.salient_facts()] == [fact]


def test_relevant_facts_use_the_three_tier_search_and_skip_salient_ones(store):
    cat = store.add("My cat's name is Whiskerino")
    vet = store.add("The cat sees the vet every March")
    store.add("I live in Lisbon")
    _access(store, vet, 5)
    addendum = store.memory_manager.build_context(None, "what is my cat called?", 2000)
    assert addendum.categories == ("pets", "personal") or addendum.categories[0] == "pets"
    assert [i.id for i in addendum.salient_facts] == [vet]
    assert [i.id for i in addendum.relevant_facts][0] == cat and vet not in [i.id for i in addendum.relevant_facts]
    assert addendum.relevant_facts[0].detail == {"category": "pets", "tier": "scoped"}
    assert store.get(cat).access_count == 1  # a query's retrieval is an access


def test_every_section_comes_together_and_renders(file_store, clock):
    store = file_store
    mm = store.memory_manager
    space = mm.workspace()
    space.init()
    (space.path / "SOUL.md").write_text("# Soul\n\nYou are calm and brief.\n", encoding="utf-8")
    (space.path / "USER.md").write_text("# User\n\nPriya, a nurse in Lisbon.\n", encoding="utf-8")
    mm.record_error("search_flights", "timeout", context="LIS")
    store.learnings.add("Do not retry flight searches more than twice", "AntiPattern")
    store.episodes.add("Booked a flight to Lisbon for March", channel="cli", importance=0.8)
    convs = store.conversations
    convs.append("old-trip", "user", "I prefer window seats.")
    mm.end_session("old-trip")
    clock.advance(hours=1)
    convs.append("trip", "user", "My cat's name is Whiskerino.")
    for i in range(44):
        convs.append("trip", "assistant" if i % 2 else "user", f"Talking about flight option {i} in detail.")
    convs.append("trip", "user", "Which flight should I take?")
    convs.working_memory("trip")  # a working summary exists now
    addendum = mm.build_context("trip", token_budget=3000)
    assert isinstance(addendum, ContextAddendum)
    assert addendum.query == "Which flight should I take?"  # the last user message
    assert [i.group for i in addendum.system_files] == ["## SOUL.md"] * 3 + ["## USER.md"] * 3
    assert addendum.working_summary and addendum.episodes
    assert any("window seats" in i.text for i in addendum.episodes)  # the other session's summary
    assert any("Booked a flight" in i.text for i in addendum.episodes)
    assert addendum.learnings and "timeout" in addendum.learnings[0].text
    assert addendum.recall is not None and "Do not retry flight searches" in addendum.recall.render()
    text = addendum.render()
    assert text.startswith("## SOUL.md\n# Soul\n\nYou are calm and brief.\n\n## USER.md\n")
    assert "\n\n## Memory\n### Summary of this conversation so far\n" in text
    assert "### Learnings\n#### Tool errors to avoid (learnings/errors.md)\n" in text
    assert "## Recalled from memory" in text and "### Recent episodes" in text
    assert text == addendum.system_prompt + "\n\n" + addendum.memory_prompt == str(addendum)
    assert addendum.tokens_used == count_tokens(text) <= 3000
    data = addendum.to_dict()
    assert data["text"] == text and set(SECTIONS) <= set(data)
    assert "<table>" in addendum._repr_html_()
    assert set(addendum.ids) >= {i.id for i in addendum.episodes}


@pytest.mark.parametrize("budget", [0, 25, 60, 150, 400, 1200])
def test_the_budget_is_never_exceeded(file_store, budget):
    store = file_store
    mm = store.memory_manager
    space = mm.workspace()
    space.init()
    (space.path / "AGENTS.md").write_text("# Agents\n\n" + "\n".join(f"- agent {i} does task {i}" for i in range(300)),
                                          encoding="utf-8")
    for i in range(30):
        fact = store.add(f"The user's project number {i} is called Atlas{i}")
        _access(store, fact, 4 + i % 3)
    for i in range(10):
        mm.record_error(f"tool{i}", f"failure {i}")
        store.episodes.add(f"Episode {i} about the Atlas project", importance=0.5)
    addendum = mm.build_context(None, "Atlas project", budget)
    assert count_tokens(addendum.render()) <= budget and addendum.tokens_used <= budget
    if budget == 0:
        assert addendum.render() == ""
    if budget >= 400:
        assert all(getattr(addendum, s) for s in ("system_files", "salient_facts", "learnings", "episodes"))
        assert addendum.left_out  # not everything fits


def test_shares_first_then_leftovers_in_order(clock):
    with MemoryStore.open(":memory:", clock=clock, config={"context": {"salient_facts": 40}}) as store:
        for i in range(40):
            fact = store.add(f"The user's hobby number {i} is painting style {i}")
            _access(store, fact, 6)
        addendum = store.memory_manager.build_context(None, None, 400)
        # only salient facts exist: after their 10 % share they take what the other sections left
        assert count_tokens("\n".join(i.text for i in addendum.salient_facts)) > 200
        assert addendum.left_out == {"salient_facts": 40 - len(addendum.salient_facts)} != {}
        small = store.memory_manager.build_context(None, None, 400, namespace="default")
        assert [i.id for i in small.salient_facts] == [i.id for i in addendum.salient_facts]
        with pytest.raises(ValueError, match="token_budget"):
            store.memory_manager.build_context(None, None, -1)
        with pytest.raises(TypeError, match="query"):
            store.memory_manager.build_context(None, 42)


def test_the_working_summary_is_the_newest_of_compaction_and_working_memory(store, clock):
    manager = store.memory_manager.context_manager("fleet", keep_last=1)
    chat = [{"role": "user", "content": "My dog is called Biscuit."}, {"role": "assistant", "content": "Cute."}]
    manager.compact(chat, session_id="thread-1", force=True)  # a conversation kept outside the store
    addendum = store.memory_manager.build_context("thread-1", "dog", 1000)
    assert addendum.working_summary and "Biscuit" in "\n".join(i.text for i in addendum.working_summary)
    assert addendum.working_summary[0].id == store.memory_manager.compactions("thread-1")[0].summary_id
    assert store.memory_manager.build_context("thread-2", "dog", 1000).working_summary == []
    # a caller whose messages already carry the [Compacted history] message leaves it out
    without = store.memory_manager.build_context("thread-1", "dog", 1000, include_summary=False)
    assert without.working_summary == [] and "Summary of this conversation" not in without.render()
    assert "Biscuit" in without.render()  # the fact is still recalled


def test_a_conversations_namespace_is_used(store):
    store.conversations.append("c", "user", "hello", namespace="user:ana")
    store.add("The user's cat is called Miso", namespace="user:ana")
    store.add("The user's cat is called Rex")
    addendum = store.memory_manager.build_context("c", "cat", 1000)
    assert addendum.namespace == "user:ana"
    assert [i.text for i in addendum.relevant_facts] == ["- The user's cat is called Miso"]

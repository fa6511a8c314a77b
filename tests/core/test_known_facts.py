"""Issue 21, part 5 (the core side): a generic question still gives the agent its user's profile.

The prompt addendum always carries the namespace's most salient current facts (pinned,
importance, access, recency) within its budget, then the query's matches; superseded facts never
appear; callers may add memory kinds besides facts (LangGraph store items).
"""

from __future__ import annotations

import pytest

from shared_core import HashingEmbedder, MemoryStore
from shared_core.ranking import standing
from shared_core.tokens import count_tokens


@pytest.mark.parametrize("question", ["What do you know about me?", "Recommend a drink", "hi"])
def test_a_generic_question_gets_the_users_profile(question, clock):
    with MemoryStore.open(":memory:", clock=clock) as store:  # the default (hashing) embedder
        store.add("The user lives in Oslo.", namespace="user:ann")
        store.add("The user drinks no alcohol.", namespace="user:ann")
        store.add("The team's build server is in Frankfurt.", namespace="team")
        addendum = store.memory_manager.build_context(None, question, 1000, namespace="user:ann")
        text = addendum.render()
        assert "- The user lives in Oslo." in text and "- The user drinks no alcohol." in text
        assert "Frankfurt" not in text  # another namespace's facts never
        shown = [*addendum.known_facts, *addendum.relevant_facts]  # a match of the query is listed as relevant
        assert sorted(i.id for i in shown) == sorted(m.id for m in store.list(namespace="user:ann"))
        assert store.get(addendum.known_facts[0].id).access_count == 0  # shown is not accessed


def test_pinned_then_importance_accesses_feedback_and_recency(store, clock):
    old = store.add("The user's first car was a Saab.", namespace="u")
    clock.advance(days=60)
    important = store.add("The user is diabetic.", namespace="u", importance=1.0)
    used = store.add("The user's timezone is Europe/Oslo.", namespace="u")
    liked = store.add("The user's editor is Helix.", namespace="u")
    plain = store.add("The user's dog is called Rex.", namespace="u")
    pinned = store.add("Never book red-eye flights for the user.", namespace="u", pinned=True)
    for _ in range(2):  # retrieved twice
        with store.transaction():
            store.kernel.memories.track_access([store.get(used).rowid])
    store.reinforce(liked)
    ranked = [s.memory.id for s in store.memory_manager.known_facts("u")]
    assert ranked == [pinned, used, liked, important, plain, old]  # 2.10, 1.82, 1.5, 1.0, 0.63 after the pin
    assert standing(0, 0, importance=1.0) == pytest.approx(1.5) and standing(0, 0) == pytest.approx(1.0)
    assert standing(2, 0) == pytest.approx(1 + 1.0986, abs=1e-3)  # 1 + ln 3
    assert standing(0, 0, score=3) == pytest.approx(1.822, abs=1e-3)  # seed 002's reinforcement weight
    assert standing(0, 60) == pytest.approx(1 / 1.6)  # seed 002's slow recency: a profile fades slowly
    assert [s.memory.id for s in store.memory_manager.known_facts("u", limit=2)] == [pinned, used]


def test_the_query_matches_come_after_the_profile_and_nothing_twice(clock):
    # the hashing embedder: "The user lives in Lisbon." has nothing of "what is my cat called?" (the
    # static one puts it at cosine 0.203, just past its floor, which makes it a relevant fact too)
    with MemoryStore.open(":memory:", clock=clock, embedder=HashingEmbedder()) as store:
        _profile_then_matches(store)


def _profile_then_matches(store):
    cat = store.add("The user's cat is called Whiskerino.", namespace="u")
    home = store.add("The user lives in Lisbon.", namespace="u")
    addendum = store.memory_manager.build_context(None, "what is my cat called?", 1000, namespace="u")
    assert [i.id for i in addendum.relevant_facts][:1] == [cat]
    assert [i.id for i in addendum.known_facts] == [home]
    text = addendum.render()
    assert text.index("### Known facts") < text.index("### Relevant facts") and text.count("Whiskerino") == 1


def test_superseded_facts_never_appear(store, clock):
    manager = store.memory_manager
    old = store.add("The user is allergic to peanuts.", namespace="u")
    cm = manager.context_manager("fleet", namespace="u", keep_last=1)
    chat = [{"role": "user", "content": "I am allergic to peanuts."}, {"role": "assistant", "content": "Noted."}]
    cm.compact(chat, session_id="s1", force=True)  # a summary that states the old fact
    clock.advance(hours=1)
    new = store.add("The user is not allergic to peanuts.", namespace="u", supersedes=old)
    for query in (None, "peanuts allergy", "What do you know about me?"):
        addendum = manager.build_context("s1", query, 2000, namespace="u")
        assert old not in addendum.ids and new in addendum.ids
        assert "The user is allergic to peanuts" not in addendum.render()
        assert "The user is not allergic to peanuts." in addendum.render()


def test_the_profile_fits_the_budget_and_takes_what_is_left(clock):
    with MemoryStore.open(":memory:", clock=clock, config={"context": {"known_facts": 40}}) as store:
        for i in range(40):
            store.add(f"The user's project number {i} is called Atlas{i}.", namespace="u", dedup=False)
        for budget in (0, 30, 120, 400):
            addendum = store.memory_manager.build_context(None, "hello", budget, namespace="u")
            assert count_tokens(addendum.render()) <= budget
        assert len(addendum.known_facts) > 10  # alone, it takes what the other sections leave
        assert addendum.left_out.get("known_facts", 0) == 40 - len(addendum.known_facts)
    with MemoryStore.open(":memory:", clock=clock, config={"context": {"known_facts": 0}}) as store:
        store.add("The user lives in Oslo.")
        assert store.memory_manager.build_context(None, "What do you know about me?", 500).known_facts == []


def test_extra_kinds_reach_the_prompt(store):
    item = store.add("Ann's preferred language is Norwegian", kind="langgraph_item", namespace="users.ann.")
    fact = store.add("The user lives in Oslo.", namespace="users.ann.")
    manager = store.memory_manager
    plain = manager.build_context(None, "Which language should I answer in?", 1000, namespace="users.ann.")
    assert item not in plain.ids and fact in plain.ids
    both = manager.build_context(None, "What do you know about me?", 1000, namespace="users.ann.",
                                 extra_kinds=("langgraph_item",))
    assert {item, fact} <= set(both.ids) and "Norwegian" in both.render()
    assert next(i for i in both.known_facts if i.id == item).detail["kind"] == "langgraph_item"
    asked = manager.build_context(None, "Which language do I prefer?", 1000, namespace="users.ann.",
                                  extra_kinds="langgraph_item")
    assert [i.id for i in asked.relevant_facts][:1] == [item]
    with pytest.raises(ValueError, match="extra_kinds"):
        manager.build_context(None, "x", 100, extra_kinds=("",))


def test_another_namespaces_conversation_stays_out(store):
    """A conversation id of another namespace is none of this one's: its last message is not the query."""
    store.conversations.append("alice-chat", "user", "My safe combination is 2209", namespace="user:alice")
    manager = store.memory_manager
    assert manager.build_context("alice-chat", None, 500, namespace="user:alice").query == \
        "My safe combination is 2209"  # the control: her own namespace
    theirs = manager.build_context("alice-chat", None, 500, namespace="user:bob")
    assert theirs.query is None and "2209" not in str(theirs.to_dict())
    assert manager.build_context("alice-chat", None, 500).namespace == "user:alice"  # no namespace: the session's

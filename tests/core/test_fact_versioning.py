"""Fact versioning: explicit supersedes, detection by text model or subject-key rule, history."""

from __future__ import annotations

import json
import re

import pytest

from shared_core import MemoryStore, NotFoundError
from shared_core.llm import FunctionModel
from shared_core.memories.versioning import subject_key


def test_explicit_supersedes_keeps_the_old_text_out_of_default_search(store, clock):
    old = store.add("Alice works at Acme as a designer", category="job")
    clock.advance(days=30)
    new = store.add("Alice works at Globex as a design lead", supersedes=old)
    assert new.event == "superseded" and new.supersedes == old
    before = store.get(old)
    assert before.text == "Alice works at Acme as a designer"
    assert before.valid_to == clock.now() and before.superseded_by == new
    assert before.metadata["superseded_reason"] == "explicit"
    assert store.get(new).valid_from == clock.now() and store.get(new).valid_to is None
    assert store.search("Alice works at", fusion="keyword").ids == [new]
    assert set(store.search("Alice works at", fusion="keyword", include_superseded=True).ids) == {old, new}
    assert store.count() == 1 and store.count(include_superseded=True) == 2
    assert [m.id for m in store.history(old)] == [old, new] == [m.id for m in store.history(new)]


def test_a_chain_of_versions(store, clock):
    ids = [store.add("The office is in Berlin")]
    for city in ["Munich", "Hamburg"]:
        clock.advance(days=1)
        ids.append(store.add(f"The office is in {city}", supersedes=ids[-1]))
    chain = store.history(ids[1])
    assert [m.id for m in chain] == ids
    assert [m.valid_to is None for m in chain] == [False, False, True]
    assert chain[0].valid_to == chain[1].valid_from


def test_explicit_supersedes_errors(store):
    a = store.add("Server runs Ubuntu 22.04")
    b = store.add("Server runs Ubuntu 24.04", supersedes=a)
    with pytest.raises(ValueError, match=f"already superseded by '{b}'"):
        store.add("Server runs Debian", supersedes=a)
    with pytest.raises(NotFoundError):
        store.add("Server runs Debian", supersedes="nope")
    with pytest.raises(NotFoundError):
        store.add("Server runs Debian", supersedes=b, namespace="other")
    with pytest.raises(ValueError, match="share a kind"):
        store.add("a note", kind="note", supersedes=b)
    with pytest.raises(ValueError, match="cannot supersede itself"):
        store.add("Server runs Debian", id=b, supersedes=b)
    with pytest.raises(NotFoundError):
        store.history("nope")


def test_subject_key():
    assert subject_key("User's timezone is Europe/Berlin") == "user timezone is"
    assert subject_key("The user\u2019s timezone is America/New_York") == "user timezone is"
    assert subject_key("The production server runs on Fly.io in Frankfurt") == "production server runs"
    assert subject_key("User prefers dark mode interfaces") == "user prefers"
    assert subject_key("Is it raining?") is None  # no subject before the verb
    assert subject_key("Remember to buy milk") is None  # no linking verb
    assert subject_key("one two three four five six seven is eight") is None  # subject too long


def test_rule_supersedes_same_category_and_subject(store):
    berlin = store.add("User's timezone is Europe/Berlin", category="profile")
    new_york = store.add("The user's timezone is America/New_York", category="profile")
    assert new_york.event == "superseded" and new_york.supersedes == berlin
    assert store.get(berlin).metadata["superseded_reason"] == "rule"
    assert store.search("timezone", fusion="keyword").ids == [new_york]


def test_rule_needs_a_category_and_the_same_one(store):
    a = store.add("Alice is a doctor")
    b = store.add("Alice is 30 years old")  # no category: both stay
    c = store.add("The build server runs Jenkins", category="ci")
    d = store.add("The build server runs on Tuesdays", category="schedule")  # other category: both stay
    assert {a.event, b.event, c.event, d.event} == {"created"}
    assert store.count() == 4


def test_explicit_subject_in_metadata(store):
    acme = store.add("Works at Acme", category="profile", metadata={"subject": "employer"})
    store.add("Likes hiking", category="profile", metadata={"subject": "hobby"})
    globex = store.add("Joined Globex last month", category="profile", metadata={"subject": "Employer"})
    assert globex.event == "superseded" and globex.supersedes == acme
    assert store.count() == 2


def test_versioning_can_be_switched_off(clock):
    with MemoryStore.open(":memory:", clock=clock, config={"memory": {"fact_versioning": False}}) as store:
        store.add("User's timezone is Europe/Berlin", category="profile")
        assert store.add("User's timezone is America/New_York", category="profile").event == "created"
        assert store.count() == 2


# -- with a text model ------------------------------------------------------------------------------


def _model(event, calls):
    def answer(prompt, max_tokens):
        calls.append(prompt)
        ids = re.findall(r"- id=(\w+):", prompt)
        return json.dumps({"event": event, "id": ids[0] if ids else ""})

    return FunctionModel(answer)


@pytest.mark.parametrize(("event", "outcome", "reason"), [
    ("UPDATE", "superseded", "update"), ("DELETE", "superseded", "delete"), ("NONE", "reinforced", None),
    ("ADD", "created", None),
])
def test_model_classifies_near_matches(store, event, outcome, reason):
    calls: list[str] = []
    old = store.add("Bob drinks coffee every morning before work")
    store.text_model = _model(event, calls)
    result = store.add("Bob drinks green tea every morning before work now")
    assert len(calls) == 1 and "New fact: Bob drinks green tea" in calls[0] and f"id={old}" in calls[0]
    assert result.event == outcome
    if outcome == "superseded":
        assert store.get(old).superseded_by == result
        assert store.get(old).metadata["superseded_reason"] == reason
    elif outcome == "reinforced":
        assert result == old and store.get(old).score == 3 and store.count() == 1
    else:
        assert store.count() == 2


def test_model_is_only_asked_about_near_matches(store):
    calls: list[str] = []
    store.add("The staging database lives in eu-west-1")
    store.text_model = _model("UPDATE", calls)
    assert store.add("Carol's favourite colour is green").event == "created"
    assert store.add("The staging database lives in eu-west-1.").event == "reinforced"  # dedup comes first
    assert calls == []


@pytest.mark.parametrize("answer", ["nonsense", '{"event": "MERGE"}', '{"event": "UPDATE", "id": "unknown"}'])
def test_bad_model_answers_fall_back_to_the_rule(store, answer):
    berlin = store.add("User's timezone is Europe/Berlin", category="profile")
    store.text_model = FunctionModel(lambda p, n: answer)
    result = store.add("User's timezone is Asia/Tokyo", category="profile")
    assert result.event == "superseded" and result.supersedes == berlin
    assert store.get(berlin).metadata["superseded_reason"] == "rule"


def test_superseded_versions_survive_archiving_in_history(store):
    a = store.add("The API rate limit is 100 per minute")
    b = store.add("The API rate limit is 500 per minute", supersedes=a)
    store.archive(a, reason="size-prune")
    chain = store.history(b)
    assert [m.id for m in chain] == [a, b] and chain[0].archived_at is not None

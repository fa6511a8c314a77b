"""Issue 21, part 2: corrections reach memory.

Rule-based extraction takes negations and corrections; a correction supersedes the fact it
corrects, and the next prompt shows the corrected fact, not the old one. Facts also come from
tool results and the assistant's observations (seed 001), with a source saying so.
"""

from __future__ import annotations

import pytest

from shared_core.context import extract_facts
from shared_core.context.corrections import corrected_fact, slot_of
from shared_core.context.messages import as_turns
from shared_core.context.records import ExtractedFact


def _found(text: str, role: str = "user", name: str | None = None) -> list[ExtractedFact]:
    message = {"role": role, "content": text}
    if name:
        message.update(name=name, tool_call_id="call-1")
    return extract_facts(as_turns([message]))


# said -> (fact, a correction?, the value it says is wrong)
CORRECTIONS = [
    ("Correction: I am not allergic to peanuts.", "The user is not allergic to peanuts.", True, None),
    ("I'm not allergic to peanuts.", "The user is not allergic to peanuts.", False, None),
    ("Actually, I moved to Berlin.", "The user moved to Berlin.", True, None),
    ("I no longer use Vim.", "The user no longer uses Vim.", False, None),
    ("I don't use Vim anymore.", "The user no longer uses Vim.", False, None),
    ("I stopped using Vim.", "The user no longer uses Vim.", False, None),
    ("Call me Priya, not Pri.", "The user's name is Priya.", True, "Pri"),
    ("My name isn't Pri, it's Priya.", "The user's name is Priya.", True, "Pri"),
    ("No, my cat's name is Miso, not Mochi.", "The user's cat's name is Miso.", True, "Mochi"),
    ("I live in Berlin, not Munich.", "The user lives in Berlin.", True, "Munich"),
    ("I'm not a nurse, I'm a doctor.", "The user is a doctor.", True, "a nurse"),
    ("I'm no longer vegan.", "The user is no longer vegan.", False, None),
    ("I'm not vegan anymore.", "The user is no longer vegan.", False, None),
    ("I don't live in Oslo any more.", "The user no longer lives in Oslo.", False, None),
    ("I no longer work at Acme Robotics.", "The user no longer works at Acme Robotics.", False, None),
    ("I don't have a dog.", "The user doesn't have a dog.", False, None),
    ("I no longer smoke.", "The user no longer smokes.", False, None),
    ("I don't drink.", "The user doesn't drink.", False, None),
    ("Oops, my timezone is Europe/Lisbon.", "The user's timezone is Europe/Lisbon.", True, None),
    ("Correction: the deadline for the Atlas migration is 21 March.",
     "The deadline for the Atlas migration is 21 March.", True, None),
]


@pytest.mark.parametrize("said, fact, correction, replaces", CORRECTIONS)
def test_negations_and_corrections_are_extracted(said, fact, correction, replaces):
    (found,) = _found(said)
    assert (found.text, found.correction, found.replaces, found.origin) == (fact, correction, replaces, "user")


@pytest.mark.parametrize("said", [
    "I'm not sure.", "I don't know.", "I don't like it anymore.", "I no longer know.", "I don't have a clue.",
    "I don't have a problem with that.", "I don't live here.", "I'm not a big fan.", "Actually, never mind.",
    "I don't use it.", "I'm not from around here, I think.", "Call me maybe, not now.",
])
def test_negations_that_are_no_facts(said):
    assert _found(said) == []


# what was said first, the correction, the fact now current, the fact it replaced
SUPERSEDES = [
    ("I am allergic to peanuts.", "Correction: I am not allergic to peanuts.",
     "The user is not allergic to peanuts.", "The user is allergic to peanuts."),
    ("I'm not allergic to peanuts.", "Actually, I am allergic to peanuts.",
     "The user is allergic to peanuts.", "The user is not allergic to peanuts."),
    ("I live in Oslo.", "Actually, I moved to Berlin.", "The user moved to Berlin.", "The user lives in Oslo."),
    ("I use Vim for everything.", "I no longer use Vim.", "The user no longer uses Vim.", "The user uses Vim for everything."),
    ("Call me Pri.", "Call me Priya, not Pri.", "The user's name is Priya.", "The user's name is Pri."),
    ("My cat's name is Mochi.", "No, my cat's name is Miso.", "The user's cat's name is Miso.",
     "The user's cat's name is Mochi."),
    ("I like olives.", "I don't like olives.", "The user doesn't like olives.", "The user likes olives."),
    ("I have a dog named Rex.", "I don't have a dog.", "The user doesn't have a dog.", "The user has a dog named Rex."),
    ("I work at Acme Robotics.", "Actually, I work at Globex.", "The user works at Globex.",
     "The user works at Acme Robotics."),
    ("I prefer window seats.", "Actually, I prefer aisle seats.", "The user prefers aisle seats.",
     "The user prefers window seats."),
    ("I'm a nurse.", "I'm not a nurse, I'm a doctor.", "The user is a doctor.", "The user is a nurse."),
    ("The deadline for the Atlas migration is 14 March.", "Correction: the deadline for the Atlas migration is 21 March.",
     "The deadline for the Atlas migration is 21 March.", "The deadline for the Atlas migration is 14 March."),
]


def _tell(store, text: str, role: str = "user", namespace: str = "user:ann", **extra):
    manager = store.memory_manager
    return manager.store_facts(manager.extract([{"role": role, "content": text, **extra}]).facts, namespace=namespace)


@pytest.mark.parametrize("first, correction, now, before", SUPERSEDES)
def test_a_correction_supersedes_the_fact_it_corrects_and_the_next_prompt_shows_it(store, clock, first, correction,
                                                                                   now, before):
    store.add("The user speaks Dutch.", namespace="user:ann")  # another fact of the user: it stays
    (old,) = _tell(store, first)
    assert old.text == before
    clock.advance(hours=1)
    (new,) = _tell(store, correction)
    assert (new.text, new.event, new.supersedes, new.correction) == (now, "superseded", old.id, True)
    assert [m.text for m in store.history(new.id)] == [before, now]
    current = {m.text for m in store.list(namespace="user:ann", kind="fact")}
    assert current == {now, "The user speaks Dutch."}
    prompt = store.memory_manager.build_context(None, correction, 2000, namespace="user:ann").render()
    assert now in prompt and before not in prompt


def test_only_the_corrected_fact_is_superseded(store):
    for said in ("I am allergic to peanuts.", "I live in Oslo.", "I use Emacs.", "I like coffee.", "Call me Pri."):
        _tell(store, said)
    for said in ("I'm not allergic to shellfish.", "I no longer use Vim.", "Actually, I like tea."):
        (fact,) = _tell(store, said)
        assert fact.event == "created" and fact.supersedes is None, said
    assert len(store.list(namespace="user:ann", kind="fact")) == 8
    assert _tell(store, "Actually, call me Pri.")[0].event == "reinforced"  # already so: nothing to correct


@pytest.mark.parametrize("new, old, corrects", [
    ("The user is not allergic to peanuts.", "The user is allergic to peanuts.", True),
    ("The user is not allergic to peanuts.", "The user is allergic to shellfish.", False),
    ("The user no longer uses Vim.", "User uses Vim.", True),
    ("The user no longer uses Vim.", "The user uses Emacs.", False),
    ("The user hates olives.", "The user loves olives.", True),
    ("The user can't stand olives.", "The user likes olives.", True),
    ("The user likes olives.", "The user likes capers.", False),
    ("The user lives in Berlin.", "The user lives in Oslo.", False),  # not said as a correction (the write rule decides)
    ("The user moved to Berlin in 2021.", "The user lives in Oslo.", False),  # maybe before: history, not a correction
    ("The user no longer lives in Oslo.", "The user moved to Oslo.", True),
    ("The user no longer lives in Oslo.", "The user works in Oslo.", False),  # another slot
    ("The user's name is Priya.", "The user's cat's name is Pri.", False),
])
def test_what_a_fact_corrects_without_a_correction_marker(store, new, old, corrects):
    memory = store.get(store.add(old, namespace="n", dedup=False))
    assert (corrected_fact(new, [memory]) == memory) is corrects
    assert slot_of(new) is not None and slot_of(old) is not None


def test_a_correction_of_a_fact_in_no_known_shape_goes_by_subject(store):
    old = store.get(store.add("Ann's favourite tea is oolong.", namespace="n"))
    fix = ExtractedFact("Ann's favourite tea is sencha.", "model", correction=True)
    assert slot_of(old.text) is None and corrected_fact(fix, [old]) == old
    assert corrected_fact(ExtractedFact("Ann's favourite tea is sencha.", "model"), [old]) is None  # not a correction


def test_facts_from_tool_results_and_assistant_observations_say_where_they_came_from(store):
    facts = store.memory_manager.extract([
        {"role": "user", "content": "Where does prod run, and what do you know about my setup?"},
        {"role": "assistant", "content": "", "tool_calls": [{"name": "fly_status", "args": {}, "id": "c1"}]},
        {"role": "tool", "name": "fly_status", "tool_call_id": "c1",
         "content": "The production server runs on Fly.io in Frankfurt. The request took 120 ms."},
        {"role": "tool", "name": "user_profile", "tool_call_id": "c2", "content": "The user's timezone is Europe/Berlin."},
        {"role": "assistant", "content": "Noted: you prefer window seats. I am an assistant and I live in the cloud."},
        {"role": "assistant", "content": "You are a brilliant engineer. You should try Neovim."},
    ]).facts
    assert [(f.text, f.origin) for f in facts] == [
        ("The production server runs on Fly.io in Frankfurt.", "tool"),
        ("The user's timezone is Europe/Berlin.", "tool"),
        ("The user prefers window seats.", "assistant"),
    ]
    stored = store.memory_manager.store_facts(facts, namespace="ops")
    assert [store.get(f.id).source for f in stored] == ["tool_result", "tool_result", "agent_observation"]


def test_memory_tools_and_known_facts_are_not_read_back_as_new_evidence(store):
    (fact,) = _tell(store, "I live in Oslo.")
    assert _found("The user lives in Oslo.", role="tool", name="memory_query") == []  # the memory's own echo
    assert _tell(store, "The user lives in Oslo.", role="tool", name="profile", tool_call_id="c1") == []
    assert _tell(store, "Got it, you live in Oslo.", role="assistant") == []
    assert store.get(fact.id).score == 0  # not reinforced by the echoes
    (newer,) = _tell(store, "The user no longer lives in Oslo.", role="tool", name="profile", tool_call_id="c2")
    assert newer.supersedes == fact.id and store.get(newer.id).source == "tool_result"


def test_a_correction_in_a_conversation_reaches_the_next_prompt_through_the_context_manager(store, clock):
    manager = store.memory_manager.context_manager("fleet", namespace="user:ann")
    chat = [{"role": "user", "content": "Hi! I am allergic to peanuts and I use Vim."},
            {"role": "assistant", "content": "Noted."}]
    manager.flush(chat, session_id="s1")
    clock.advance(days=1)
    chat += [{"role": "user", "content": "Correction: I am not allergic to peanuts. I no longer use Vim."},
             {"role": "assistant", "content": "Thanks, updated."}]
    flushed = manager.flush(chat, session_id="s1")
    assert sorted(f.event for f in flushed.facts) == ["superseded", "superseded"]
    prompt = store.memory_manager.build_context("s1", "Recommend a snack", 2000, namespace="user:ann").render()
    assert "The user is not allergic to peanuts." in prompt and "The user no longer uses Vim." in prompt
    assert "The user is allergic to peanuts." not in prompt and "The user uses Vim." not in prompt


def test_every_memory_tool_counts_as_an_echo():
    from shared_core.context.fact_rules import ECHO_TOOLS
    from shared_core.tools import KNOWLEDGE_BASE_TOOL_NAMES, MEMORY_TOOL_NAMES

    assert set(MEMORY_TOOL_NAMES) | set(KNOWLEDGE_BASE_TOOL_NAMES) <= ECHO_TOOLS

"""Part 5: facts and summaries without a model (precision first), and with one (JSON, fallback to the rules)."""

from __future__ import annotations

import json

import pytest

from shared_core import MemoryStore
from shared_core.context import extract_facts
from shared_core.context.extraction import FACTS_HEADER, NARRATIVE_HEADER, extract, summarize_turns
from shared_core.context.messages import as_turns
from shared_core.llm import FunctionModel
from shared_core.tokens import count_tokens


def _facts(text, role="user"):
    return [f.text for f in extract_facts(as_turns([{"role": role, "content": text}]))]


@pytest.mark.parametrize("said, fact, rule", [
    ("My name is Priya.", "The user's name is Priya.", "name"),
    ("Call me Sam.", "The user's name is Sam.", "name"),
    ("My cat's name is Whiskerino.", "The user's cat's name is Whiskerino.", "possession"),
    ("My dog is called Rex!", "The user's dog is called Rex.", "possession"),
    ("My timezone is Europe/Berlin.", "The user's timezone is Europe/Berlin.", "possession"),
    ("Our production server runs on Fly.io in Frankfurt.",
     "The user's production server runs on Fly.io in Frankfurt.", "possession"),
    ("My wife is a doctor.", "The user's wife is a doctor.", "possession"),
    ("My kids are 5 and 7.", "The user's kids are 5 and 7.", "possession"),
    ("My sister lives with me in Ghent.", "The user's sister lives with the user in Ghent.", "possession"),
    ("I'm a software engineer.", "The user is a software engineer.", "identity"),
    ("I am allergic to peanuts.", "The user is allergic to peanuts.", "identity"),
    ("I'm originally from Goa.", "The user is originally from Goa.", "identity"),
    ("I'm 34 years old.", "The user is 34 years old.", "identity"),
    ("I live in Lisbon.", "The user lives in Lisbon.", "place"),
    ("I work at Acme Robotics.", "The user works at Acme Robotics.", "place"),
    ("I work from home.", "The user works from home.", "place"),
    ("I moved to Porto in 2021.", "The user moved to Porto in 2021.", "place"),
    ("I was born in 1990.", "The user was born in 1990.", "place"),
    ("I prefer window seats.", "The user prefers window seats.", "preference"),
    ("I really love dark chocolate.", "The user loves dark chocolate.", "preference"),
    ("I don't like olives.", "The user doesn't like olives.", "preference"),
    ("I like to run in the mornings.", "The user likes to run in the mornings.", "preference"),
    ("I speak Dutch and English.", "The user speaks Dutch and English.", "usage"),
    ("I use Neovim for everything.", "The user uses Neovim for everything.", "usage"),
    ("I have two kids.", "The user has two kids.", "have"),
    ("I have a dog named Rex.", "The user has a dog named Rex.", "have"),
    ("We decided to use Postgres for the events table.", "Decision: use Postgres for the events table.", "decision"),
    ("Let's go with the blue theme.", "Decision: go with the blue theme.", "decision"),
    ("Decision: ship on Fridays only.", "Decision: ship on Fridays only.", "decision"),
    ("The deadline for the Atlas migration is 14 March.", "The deadline for the Atlas migration is 14 March.",
     "dated"),
    ("Our launch is on 2026-05-01.", "The user's launch is on 2026-05-01.", "possession"),
])
def test_the_rules_find_these_facts(said, fact, rule):
    found = extract_facts(as_turns([{"role": "user", "content": said}]))
    assert [(f.text, f.rule) for f in found] == [(fact, rule)]
    assert found[0].source == said and found[0].message_index == 0


# Precision matters more than recall: none of these may become a fact.
NOT_FACTS = [
    "Can you tell me my cat's name?", "What's the weather like in Lisbon?", "Where do I live?",
    "I think I might move to Berlin next year.", "Maybe my favourite colour is blue.",
    "If I lived in Paris I would eat croissants.", "I would like a coffee.", "I'd like a coffee.",
    "My code is broken again.", "My question is about Python decorators.", "I have a question about my invoice.",
    "I have a problem.", "I have a headache.", "I have no idea.", "I have a lot of work.",
    "I like it.", "I like that.", "I like this approach.", "I love you.", "I love how this works.",
    "I hate when that happens.", "Please remember to call me tomorrow.", "My boss said I should work harder.",
    "She told me my car is red.", "You are a great assistant.", "Your answer is wrong.", "I'm tired today.",
    "I'm a bit confused.", "I'm a huge fan.", "I'm not sure.", "I'm happy.", "I'm done.", "I'm working on it.",
    "I am going to the store.", "Thanks, that works for me.", "Hello, how are you?", "Ok thanks.",
    "I worked late yesterday.", "Let's see what happens.", "We should probably use Postgres.",
    "I don't know my timezone.", "Tell me about my schedule.", "My flight is tomorrow.", "My point is that it fails.",
    "My laptop is slow.", "My wife is busy.", "My son is sick.", "I live in fear of deadlines.", "I use it every day.",
    "I prefer not to say.", "My turn.", "The meeting went well.", "My name is not important.",
    "My favourite is the second one.", "I work on it.", "We decided nothing yet.", "My password is hunter2.",
    "My API key is sk-12345.", "My PIN is 1234.", "My mistake, I meant Porto.", "I hope my team likes it.",
    "I wish I lived in Rome.", "I guess my manager is Renata.", "Perhaps I live in the wrong city.",
    "My build is failing.", "My tests are green.", "My internet is down.", "I am currently in Berlin.",
    "I live in Lisbon at the moment.", "I'm still waiting.", "I was there recently.",
    "My code is compiling.", "I have a meeting tomorrow.", "The deadline is next week.", "Whatever.",
    "I'm looking for a good restaurant.", "I need a new laptop.", "I want to learn Rust.",
]


@pytest.mark.parametrize("said", NOT_FACTS)
def test_these_sentences_must_not_become_facts(said):
    assert _facts(said) == []


def test_only_the_users_statements_are_read():
    for role in ("assistant", "system", "tool", "developer"):
        assert _facts("My name is Claude and I live in the cloud.", role=role) == []
    assert _facts("My name is Priya.", role="human") == ["The user's name is Priya."]  # LangChain's "human"


def test_sentences_are_split_and_duplicates_dropped():
    text = "Hi! My name is Priya. I live in Lisbon. Can you help me? My name is Priya."
    assert _facts(text) == ["The user's name is Priya.", "The user lives in Lisbon."]
    assert _facts("Just so you know, my dog is called Rex.") == ["The user's dog is called Rex."]
    assert len(extract_facts(as_turns([{"role": "user", "content": "I live in Lisbon. I speak Dutch."}]),
                             max_facts=1)) == 1
    assert extract_facts(as_turns([{"role": "user", "content": "My dog is called " + "Rex " * 40}])) == []


def test_corrections_are_marked():
    found = extract_facts(as_turns([{"role": "user", "content": "Actually, my sister's name is Ilse."},
                                    {"role": "user", "content": "No, I live in Porto."}]))
    assert [(f.text, f.correction) for f in found] == [("The user's sister's name is Ilse.", True),
                                                        ("The user lives in Porto.", True)]
    assert not extract_facts(as_turns([{"role": "user", "content": "I live in Porto."}]))[0].correction


def test_the_extractive_summary_leads_with_facts_and_fits_the_budget():
    turns = as_turns([{"role": "user", "content": "My cat's name is Whiskerino."},
                      *({"role": "assistant", "content": f"Topic {i} has many keywords about topics."} for i in range(30))])
    summary = summarize_turns(turns, budget=80)
    assert summary.startswith(f"{FACTS_HEADER}\n- The user's cat's name is Whiskerino.\n{NARRATIVE_HEADER}\n")
    assert count_tokens(summary) <= 80
    later = as_turns([{"role": "user", "content": "I live in Lisbon."}])
    again = summarize_turns(later, budget=80, previous=summary)
    assert again.startswith(f"{FACTS_HEADER}\n- The user's cat's name is Whiskerino.\n- The user lives in Lisbon.\n")
    plain = summarize_turns(as_turns([{"role": "user", "content": "Please explain the plan for topic seven."}]),
                            budget=80)
    assert FACTS_HEADER not in plain and "topic seven" in plain


def test_a_text_model_gives_facts_and_summary_as_json():
    prompts = []

    def model(prompt, max_tokens):
        prompts.append(prompt)
        return json.dumps({"facts": ["The user's cat is called Miso.", {"text": "The user lives in Lisbon."}, "",
                                     "x" * 400], "summary": "The user talked about their cat."})

    turns = as_turns([{"role": "user", "content": "miso is my cat, we live in lisbon"},
                      {"role": "assistant", "content": "Nice!"}, {"role": "user", "content": "older stuff"}])
    found = extract(turns, already={2}, model=FunctionModel(model), budget=100)
    assert found.method == "model" and found.model_error is None
    assert [f.text for f in found.facts] == ["The user's cat is called Miso.", "The user lives in Lisbon."]
    assert found.summary == "The user talked about their cat."
    prompt = prompts[0]
    assert '{"facts": ["..."], "summary": "..."}' in prompt and "at most 100 tokens" in prompt
    done, pending = prompt.split("Messages to read for facts:\n")
    assert "user: older stuff" in done and "older stuff" not in pending and "miso is my cat" in pending
    facts_only = extract(turns, model=FunctionModel(lambda p, n: '{"facts": []}'), want_summary=False)
    assert facts_only.facts == [] and facts_only.summary == "" and facts_only.method == "model"


@pytest.mark.parametrize("answer, method, rule_facts, model_summary", [
    ("not json at all", "rules", True, False),
    ("[1, 2]", "rules", True, False),
    ('{"facts": "The user lives in Lisbon.", "summary": "A summary."}', "model+rules", True, True),
    ('{"facts": [42], "summary": "A summary."}', "model+rules", True, True),
    ('{"facts": ["The user lives in Lisbon."]}', "model+rules", False, False),
    ('{"facts": ["The user lives in Lisbon."], "summary": "   "}', "model+rules", False, False),
    ('{"facts": ["The user lives in Lisbon."], "summary": "' + "word " * 400 + '"}', "model+rules", False, False),
])
def test_bad_model_output_falls_back_to_the_rules_piece_by_piece(answer, method, rule_facts, model_summary):
    turns = as_turns([{"role": "user", "content": "I live in Lisbon."}])
    found = extract(turns, model=FunctionModel(lambda p, n: answer), budget=100)
    assert found.method == method and found.model_error
    assert [f.text for f in found.facts] == ["The user lives in Lisbon."]
    assert [f.rule for f in found.facts] == (["place"] if rule_facts else ["model"])
    if model_summary:
        assert found.summary == "A summary."
    else:
        assert "Lisbon" in found.summary and count_tokens(found.summary) <= 100


def test_a_failing_model_never_loses_the_messages():
    def boom(prompt, max_tokens):
        raise TimeoutError("model timed out")

    found = extract(as_turns([{"role": "user", "content": "I live in Lisbon."}]), model=FunctionModel(boom))
    assert found.method == "rules" and "TimeoutError" in found.model_error
    assert [f.text for f in found.facts] == ["The user lives in Lisbon."] and "Lisbon" in found.summary


def test_store_facts_goes_through_the_core_add_with_provenance(store):
    manager = store.memory_manager
    first = manager.store_facts(manager.extract([{"role": "user", "content": "I live in Lisbon."}]).facts,
                                namespace="u", session_id="s1")
    assert [(f.event, f.category, f.rule) for f in first] == [("created", "location", "place")]
    memory = store.get(first[0].id)
    assert memory.source == "extraction" and memory.session_id == "s1" and memory.namespace == "u"
    assert memory.metadata == {"extracted_by": "rules", "rule": "place"}
    again = manager.store_facts(["The user lives in Lisbon."], namespace="u", session_id="s2")
    assert again[0].event == "reinforced" and again[0].id == first[0].id
    assert store.get(first[0].id).score == store.config.memory.reinforce_weight


def test_session_end_stores_facts_then_a_summary_linked_to_the_session(store):
    convs = store.conversations
    convs.append("trip", "user", "I prefer window seats.", namespace="priya")
    convs.append("trip", "assistant", "Noted, a window seat it is.")
    convs.append("trip", "user", "Can you find a flight to Lisbon?")
    ended = store.memory_manager.end_session("trip")
    assert [f.text for f in ended.facts] == ["The user prefers window seats."]
    summary = store.get(ended.summary_id)
    assert summary.kind == "summary" and summary.session_id == "trip" and summary.namespace == "priya"
    assert summary.metadata == {"summary_type": "session_end", "message_count": 3, "method": "rules"}
    assert "window seats" in summary.text
    assert convs.session("trip").ended_at is not None
    convs.append("trip", "user", "I speak Dutch.")
    second = store.memory_manager.end_session("trip")
    assert [f.text for f in second.facts] == ["The user speaks Dutch."]  # the earlier messages are not re-read
    assert second.summary_id == ended.summary_id and store.count(kind="summary", namespace="priya") == 1


def test_session_end_with_a_working_summary_summarises_it_and_the_rest(store):
    convs = store.conversations
    convs.append("long", "user", "My dog is called Biscuit.")
    for i in range(45):
        convs.append("long", "assistant" if i % 2 else "user", f"Filler message {i} with some words.")
    convs.working_memory("long")  # past 40: the older messages fold into a working summary
    ended = store.memory_manager.end_session("long", end=False)
    assert [f.text for f in ended.facts] == ["The user's dog is called Biscuit."]
    assert ended.summary and convs.session("long").ended_at is None


def test_session_end_reads_long_conversations_in_batches_for_the_model(clock):
    calls = []

    def model(prompt, max_tokens):
        calls.append(prompt)
        return json.dumps({"facts": [], "summary": "short"})

    config = {"context": {"extract_batch_tokens": 200}}
    with MemoryStore.open(":memory:", clock=clock, config=config, text_model=FunctionModel(model)) as store:
        for i in range(30):
            store.conversations.append("b", "user", f"Message number {i} with a handful of words in it.")
        store.memory_manager.end_session("b")
    fact_calls = [c for c in calls if '"summary"' not in c.split("Answer with JSON only:")[1].splitlines()[0]]
    assert len(fact_calls) >= 3  # the 30 messages were read in several model calls, never one huge prompt

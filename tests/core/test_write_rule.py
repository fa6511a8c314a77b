"""The write rule: a near-duplicate fact is reinforced only when it restates a stored one.

Each pair is (stored fact, new fact, what must happen):

* ``reinforced``: the new text only restates the old (case, punctuation, whitespace, articles,
  contractions aside);
* ``superseded``: it changes a detail of the same subject (a number, a name, a negation, the
  order of a preference): the new text is current, the old one is kept in ``history``;
* ``created``: it is about something else: both stay current.

No embedder tells these apart ("IP 10.0.0.1" and "IP 10.0.0.2" have cosine 1.0 for many), so
the table runs with an embedder that makes every pair a near-duplicate (exact outcomes), and
with the default hashing embedder (reinforced exactly for restatements; nothing lost).
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shared_core import MemoryStore
from shared_core.restatement import is_restatement, spell_out

R, S, C = "reinforced", "superseded", "created"

PAIRS: list[tuple[str, str, str, str]] = [
    # (group, stored, new, outcome)
    ("changed value", "The staging server IP is 10.0.0.1", "The staging server IP is 10.0.0.2", S),
    ("changed value", "The API key rotates every 30 days", "The API key rotates every 90 days", S),
    ("changed value", "User's timezone is Europe/Berlin", "User's timezone is America/New_York", S),
    ("changed value", "The database port is 5432", "The database port is 6543", S),
    ("changed value", "Alice's birthday is on March 3", "Alice's birthday is on March 4", S),
    ("changed value", "The release is planned for 2026-03-01", "The release is planned for 2026-04-01", S),
    ("changed value", "The team standup is at 9:30", "The team standup is at 10:30", S),
    ("changed value", "The monthly budget is $500", "The monthly budget is $750", S),
    ("changed value", "Bob's phone number is 555-0101", "Bob's phone number is 555-0199", S),
    ("changed value", "The user's favourite colour is blue", "The user's favourite colour is green", S),
    ("changed value", "The production cluster has 3 nodes", "The production cluster has 5 nodes", S),
    ("changed value", "Carol works at Acme Corp", "Carol works at Globex Corp", S),
    ("changed value", "The user lives in Oslo", "The user lives in Berlin", S),
    ("changed value", "The project uses Python 3.11", "The project uses Python 3.12", S),
    ("changed value", "Dave drives a red Volvo", "Dave drives a blue Volvo", S),
    ("changed value", "The user's email is ann@example.com", "The user's email is ann@example.org", S),
    ("negation", "Bob is allergic to peanuts", "Bob is not allergic to peanuts", S),
    ("negation", "Bob is not allergic to peanuts", "Bob is allergic to peanuts", S),
    ("negation", "I am allergic to shellfish", "I'm not allergic to shellfish", S),
    ("negation", "The user likes spicy food", "The user does not like spicy food", S),
    ("negation", "The user doesn't like spicy food", "The user likes spicy food", S),
    ("negation", "The service is running", "The service is not running", S),
    ("negation", "Eve has a driving licence", "Eve has no driving licence", S),
    ("negation", "The user has never been to Japan", "The user has been to Japan", S),
    ("negation", "I use Vim", "I no longer use Vim", S),
    ("negation", "The cache is enabled in production", "The cache isn't enabled in production", S),
    ("swapped order", "User prefers email over phone", "User prefers phone over email", S),
    ("swapped order", "User prefers tea to coffee", "User prefers coffee to tea", S),
    ("swapped order", "Alice ranks Python above Rust", "Alice ranks Rust above Python", S),
    ("swapped order", "The user likes cats more than dogs", "The user likes dogs more than cats", S),
    ("swapped order", "Frank prefers mornings over evenings for meetings",
     "Frank prefers evenings over mornings for meetings", S),
    ("swapped order", "Deploys go from staging to prod", "Deploys go from prod to staging", S),
    ("other entity", "The staging database runs on Postgres 15", "The prod database runs on Postgres 15", C),
    ("other entity", "Alice lives in Paris", "Bob lives in Paris", C),
    ("other entity", "Alice is allergic to peanuts", "Bob is allergic to peanuts", C),
    ("other entity", "The frontend uses React", "The backend uses React", C),
    ("other entity", "Alice's manager is Grace", "Bob's manager is Grace", C),
    ("other entity", "The iOS app costs $5", "The Android app costs $5", C),
    ("other entity", "Team Alpha works remotely", "Team Beta works remotely", C),
    ("other entity", "The user's cat is called Whiskers", "The user's dog is called Whiskers", C),
    ("other entity", "Henry speaks French", "Irene speaks French", C),
    ("other entity", "The kitchen light is on", "The garage light is on", C),
    ("restatement", "User prefers dark mode", "The user prefers dark mode.", R),
    ("restatement", "User prefers dark mode", "user prefers DARK mode", R),
    ("restatement", "Bob isn't allergic to peanuts", "Bob is not allergic to peanuts", R),
    ("restatement", "The staging server IP is 10.0.0.1", "the staging server IP is 10.0.0.1!", R),
    ("restatement", "I'm vegetarian", "I am vegetarian.", R),
    ("restatement", "Alice  lives   in Paris", "Alice lives in Paris", R),
    ("restatement", "The user can't eat gluten", "The user cannot eat gluten", R),
    ("restatement", "Jack works at Initech", "Jack works at Initech.", R),
    ("restatement", "The user's favourite colour is blue", "The user\u2019s favourite colour is blue", R),
    ("restatement", "Project Atlas ships on Friday", "project atlas ships on friday", R),
    ("restatement", "A user prefers tabs", "The user prefers tabs", R),
    ("paraphrase", "User prefers dark mode", "User likes dark mode", C),
    ("paraphrase", "The user lives in Oslo", "The user resides in Oslo", C),
    ("paraphrase", "Bob is allergic to peanuts", "Bob has a peanut allergy", C),
    ("paraphrase", "The meeting is on Monday", "The meeting takes place on Monday", C),
    ("paraphrase", "Kate is a doctor", "Kate works as a doctor", C),
    ("paraphrase", "The user drinks oolong tea", "Oolong tea is what the user drinks", C),
    ("paraphrase", "Liam owns a Tesla", "Liam is the owner of a Tesla", C),
    ("paraphrase", "The API uses HMAC signatures", "HMAC signatures are used by the API", C),
    ("paraphrase", "Mia plays the piano", "Mia is a pianist", C),
]


class NearlyBlindEmbedder:
    """Every text lands within a hair of every other (cosine > 0.98): the worst case for a rule that
    trusted similarity, as with numbers and negations for real embedders."""

    name = "nearly-blind-32"
    dims = 32

    def embed(self, texts):
        base = np.ones(self.dims, dtype=np.float32)
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        for i, text in enumerate(texts):
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
            out[i] = base * 20 + np.random.default_rng(seed).standard_normal(self.dims)
            out[i] /= np.linalg.norm(out[i])
        return out


def test_the_table_has_every_group_and_enough_pairs():
    groups = {group for group, *_ in PAIRS}
    assert groups == {"changed value", "negation", "swapped order", "other entity", "restatement", "paraphrase"}
    assert len(PAIRS) >= 60


def test_restatement_agrees_with_the_table():
    for group, old, new, outcome in PAIRS:
        assert is_restatement(new, old) == (outcome == R), (group, old, new)


@pytest.mark.parametrize(("text", "spelled"), [
    ("I CAN\u2019T and I cannot", "i can not and i can not"),
    ("We won't, shan't, ain't", "we will not, shall not, is not"),
    ("You shouldn't've; I'm sure they're here and we'll see", "you should not have; i am sure they are here and we will see"),
    ("scan't isn'tly", "sca not isn'tly"),  # only whole contractions
    ("no contraction here", "no contraction here"),
])
def test_contractions_are_spelled_out_in_any_combination(text, spelled):
    assert spell_out(text) == spelled


@pytest.mark.parametrize(("group", "old", "new", "outcome"), PAIRS, ids=[f"{g}:{n}" for g, _, n, _ in PAIRS])
def test_near_duplicates_keep_what_is_new(clock, group, old, new, outcome):
    with MemoryStore.open(":memory:", clock=clock, embedder=NearlyBlindEmbedder()) as store:
        first = store.add(old, namespace="t")
        clock.advance(seconds=60)
        second = store.add(new, namespace="t")
        current = {m.text for m in store.list(namespace="t")}
        assert second.event == outcome, (group, old, new)
        if outcome == R:
            assert second == first and current == {old}
            assert store.get(first).score == store.config.memory.reinforce_weight
        elif outcome == S:
            assert current == {new}
            versions = store.history(second)
            assert [m.text for m in versions] == [old, new]
            assert versions[0].superseded_by == second and versions[0].metadata["superseded_reason"] == "changed"
        else:
            assert current == {old, new}


@pytest.mark.parametrize(("group", "old", "new", "outcome"), PAIRS, ids=[f"{g}:{n}" for g, _, n, _ in PAIRS])
def test_nothing_is_lost_with_the_default_embedder(store, clock, group, old, new, outcome):
    first = store.add(old, namespace="t")
    clock.advance(seconds=60)
    second = store.add(new, namespace="t")
    current = {m.text for m in store.list(namespace="t")}
    if outcome == R:  # reinforced when the embedder also finds them near (cosine > 0.9), else both kept
        assert (second.event, second == first) in (("reinforced", True), ("created", False))
        assert current == ({old} if second.event == "reinforced" else {old, new})
    else:
        assert second.event in ("created", "superseded")
        assert new in current
        if second.event == "superseded":
            assert [m.text for m in store.history(second)] == [old, new]
        else:
            assert old in current
    assert outcome == R or new in [h.text for h in store.search(new, namespace="t", limit=3)]


def test_the_same_pairs_in_reverse_order_are_kept_too(clock):
    """Mind both directions: the stored and the new text swapped give the same kind of outcome."""
    with MemoryStore.open(":memory:", clock=clock, embedder=NearlyBlindEmbedder()) as store:
        for i, (group, old, new, outcome) in enumerate(PAIRS):
            ns = f"r{i}"
            store.add(new, namespace=ns)
            back = store.add(old, namespace=ns)
            assert back.event == outcome, (group, new, old)


def test_without_versioning_a_changed_near_duplicate_is_a_new_fact(clock):
    config = {"memory": {"fact_versioning": False}}
    with MemoryStore.open(":memory:", clock=clock, embedder=NearlyBlindEmbedder(), config=config) as store:
        store.add("The staging server IP is 10.0.0.1")
        assert store.add("The staging server IP is 10.0.0.2").event == "created"
        assert store.add("the staging server IP is 10.0.0.2.").event == "reinforced"
        assert store.count() == 2


def test_a_batch_with_dedup_reinforces_only_restatements(clock):
    with MemoryStore.open(":memory:", clock=clock, embedder=NearlyBlindEmbedder()) as store:
        store.add("Bob is allergic to peanuts")
        results = store.add_many(["Bob is not allergic to peanuts", "bob is allergic to peanuts."], dedup=True)
        assert [r.event for r in results] == ["created", "reinforced"]


_WORDS = st.sampled_from(["Alice", "Bob", "Oslo", "Berlin", "Acme", "Globex", "Vim", "Emacs", "Tesla", "Volvo"])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    template=st.sampled_from([
        "The staging server of {name} has the IP 10.0.{a}.{b}",
        "{name} rotates the API key every {a} days and the password every {b} weeks",
        "{name} moved to room {a} on floor {b}",
        "The invoice for {name} is {a}.{b} euros",
    ]),
    name=_WORDS, a=st.integers(0, 999), b=st.integers(0, 999),
    change=st.sampled_from(["name", "a", "b"]), other_name=_WORDS, other=st.integers(0, 999),
)
def test_changing_one_number_or_name_keeps_the_new_text_findable(
    clock, template, name, a, b, change, other_name, other
):
    values = {"name": name, "a": a, "b": b}
    changed = dict(values)
    changed[change] = other_name if change == "name" else other
    if changed == values:
        return
    old, new = template.format(**values), template.format(**changed)
    with MemoryStore.open(":memory:", clock=clock) as store:
        store.add(old, namespace="p")
        result = store.add(new, namespace="p")
        assert result.event != "reinforced"
        assert new in {m.text for m in store.list(namespace="p")}
        assert store.get(result).text == new


def _asking_model(event: str, calls: list[str]):
    import json
    import re

    from shared_core.llm import FunctionModel

    def answer(prompt, max_tokens):
        calls.append(prompt)
        ids = re.findall(r"- id=(\w+):", prompt)
        return json.dumps({"event": event, "id": ids[0] if ids else ""})

    return FunctionModel(answer)


@pytest.mark.parametrize(("event", "outcome"), [("UPDATE", S), ("DELETE", S), ("ADD", C), ("NONE", R)])
def test_with_a_text_model_the_near_band_is_the_models_call_before_anything_is_reinforced(clock, event, outcome):
    with MemoryStore.open(":memory:", clock=clock, embedder=NearlyBlindEmbedder()) as store:
        old = store.add("The staging server IP is 10.0.0.1")
        calls: list[str] = []
        store.text_model = _asking_model(event, calls)
        result = store.add("The staging server IP is 10.0.0.2")
        assert len(calls) == 1 and f"id={old}" in calls[0]
        assert result.event == outcome
        restated = store.add("the staging server IP is 10.0.0.2." if outcome != R else "The staging server IP is 10.0.0.1")
        assert restated.event == "reinforced" and len(calls) == 1  # a restatement never asks the model


def test_the_docs_table_example_runs():
    """docs/learning.md's example of the rule runs as written."""
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "learning.md").read_text()
    section = doc.split("## What happens when a fact is added", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    exec(compile(code, "docs/learning.md", "exec"), {})

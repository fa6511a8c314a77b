"""Part 8: auto-categorisation of facts (seed 004): keyword rules by default, a text model optionally."""

from __future__ import annotations

import doctest

import pytest

import shared_core.categories
from shared_core import ConfigError, MemoryStore
from shared_core.categories import CATEGORY_KEYWORDS, Categorizer, normal_word
from shared_core.llm import FunctionModel


@pytest.mark.parametrize("text, category", [
    ("My cat's name is Whiskerino", "pets"),  # pets beats personal ("name") on a tie: listed first
    ("The user's sister lives in Ghent", "people"),  # people beats location on a tie
    ("I live in Lisbon", "location"),
    ("User's timezone is Europe/Berlin", "location"),
    ("I prefer tea over coffee", "food"),  # two food keywords beat one preference keyword
    ("User prefers dark mode interfaces", "technical"),  # "dark mode" is one keyword of two words
    ("The production server runs on Fly.io in Frankfurt", "technical"),
    ("I'm allergic to peanuts", "health"),
    ("We meet every Monday", "schedule"),
    ("The user likes jazz", "preferences"),
    ("The user plays the cello", "hobbies"),
    ("The user's name is Priya", "personal"),
])
def test_the_keyword_rules(text, category):
    assert Categorizer().categorize(text) == category


def test_words_are_compared_in_a_normal_form():
    assert normal_word("Cat's") == normal_word("cats") == normal_word("cat") == "cat"
    assert normal_word("glass") == "glass" and normal_word("bus") == "bus"
    match = Categorizer().matches("My CATS and my cat's vet")[0]
    assert match.category == "pets" and match.score == 2 and match.keywords == ("cat", "vet")


def test_no_keyword_leaves_the_fact_uncategorised_unless_a_default_is_set():
    assert Categorizer().categorize("It looks like rain") is None  # "like" alone is not a preference
    assert Categorizer(default="general").categorize("Alice likes oolong") == "general"
    assert Categorizer().for_query("nothing to see") == []


def test_the_keyword_map_can_be_replaced(clock):
    config = {"memory": {"category_keywords": {"garden": ["tomato", "greenhouse"], "pets": ["cat"]}}}
    with MemoryStore.open(":memory:", clock=clock, config=config) as store:
        categorizer = store.memory_manager.categorizer
        assert categorizer.categories == ("garden", "pets")
        assert store.get(store.add("The tomatoes in the greenhouse are ripe")).category == "garden"
        assert store.get(store.add("I live in Lisbon")).category is None
    with pytest.raises(ConfigError, match="category_keywords"):
        MemoryStore.open(":memory:", config={"memory": {"category_keywords": {"pets": "cat"}}})
    with pytest.raises(ConfigError, match="categorizer"):
        MemoryStore.open(":memory:", config={"memory": {"categorizer": "magic"}})
    with pytest.raises(ValueError, match="list of strings"):
        Categorizer({"pets": "cat"})


def test_facts_added_without_a_category_get_one_and_explicit_ones_are_kept(store):
    auto = store.get(store.add("My cat's name is Whiskerino"))
    assert auto.category == "pets"
    explicit = store.get(store.add("The cat flap is broken", category="home"))
    assert explicit.category == "home"
    note = store.get(store.add("The cat flap is broken again", kind="note"))
    assert note.category is None  # only facts are categorised
    bulk = store.add_many(["I live in Lisbon", {"text": "I speak Dutch", "category": "languages"}])
    assert [store.get(i).category for i in bulk] == ["location", "languages"]


def test_auto_categorisation_can_be_switched_off(clock):
    with MemoryStore.open(":memory:", clock=clock, config={"memory": {"auto_categorize": False}}) as store:
        assert store.get(store.add("My cat's name is Whiskerino")).category is None
        assert store.get(store.add_many(["I live in Lisbon"])[0]).category is None


def test_an_auto_category_never_makes_two_facts_one_subject(store):
    # both are "preferences" with the subject key "user likes": were the category the caller's,
    # the versioning rule would let the second supersede the first; a machine's category does not
    first = store.add("The user likes jazz")
    second = store.add("The user likes opera")
    assert second.event == "created" and store.get(first).valid_to is None
    assert {store.get(first).category, store.get(second).category} == {"preferences"}
    # an explicit category still versions as before
    old = store.add("User's timezone is Europe/Berlin", category="location")
    new = store.add("The user's timezone is America/New_York", category="location")
    assert new.event == "superseded" and store.get(old).superseded_by == new


def test_a_text_model_categorises_and_the_rules_catch_its_mistakes(clock):
    answers = iter(['{"category": "work"}', '{"category": "astrology"}', "no idea", '{"category": "PETS"}'])
    prompts = []

    def model(prompt, max_tokens):
        if "Choose the category" not in prompt:
            return '{"event": "ADD"}'  # fact versioning asks too
        prompts.append(prompt)
        return next(answers)

    config = {"memory": {"categorizer": "model"}}
    with MemoryStore.open(":memory:", clock=clock, config=config, text_model=FunctionModel(model)) as store:
        assert store.get(store.add("Standup is at nine")).category == "work"
        assert store.get(store.add("My cat is grey")).category == "pets"  # unknown answer: rules
        assert store.get(store.add("I live in Lisbon")).category == "location"  # not JSON: rules
        assert store.get(store.add("Biscuit chews slippers")).category == "pets"  # matched case-insensitively
        assert "Categories: pets, people," in prompts[0] and "Fact: Standup is at nine" in prompts[0]
        store.text_model = None  # without a model the rules run, no error
        assert store.get(store.add("My dog is loud")).category == "pets"


def test_bulk_adds_never_call_the_model(clock):
    calls = []
    config = {"memory": {"categorizer": "model"}}
    model = FunctionModel(lambda p, n: calls.append(p) or '{"category": "work"}')
    with MemoryStore.open(":memory:", clock=clock, config=config, text_model=model) as store:
        ids = store.add_many(["My cat is grey", "I live in Lisbon"])
        assert calls == [] and [store.get(i).category for i in ids] == ["pets", "location"]


def test_query_categories_are_ranked_and_limited_to_known_ones():
    categorizer = Categorizer()
    assert categorizer.for_query("where do I live and what is my cat called?") == ["pets", "location", "personal"]
    assert categorizer.for_query("where do I live and what is my cat called?", known=["personal", "pets"]) == \
        ["pets", "personal"]
    assert categorizer.for_query("where do I live and what is my cat called?", limit=1) == ["pets"]
    with pytest.raises(ValueError, match="limit"):
        categorizer.for_query("cat", limit=0)


def test_the_default_map_is_small_and_documented():
    assert len(CATEGORY_KEYWORDS) <= 15
    assert doctest.testmod(shared_core.categories).failed == 0

"""Seed 004's three-tier retrieval: categories, then scoped facts, then a flat fallback."""

from __future__ import annotations

import pytest

from shared_core import HashingEmbedder, MemoryStore
from shared_core.category_search import known_categories, search_by_category
from shared_core.llm import FunctionModel


@pytest.fixture
def facts(store):
    return _add_facts(store)


@pytest.fixture
def hashing_store(clock):
    with MemoryStore.open(":memory:", clock=clock, embedder=HashingEmbedder()) as store:
        yield store


@pytest.fixture
def hashing_facts(hashing_store):
    return _add_facts(hashing_store)


def _add_facts(store):
    ids = {
        "cat": store.add("My cat is called Whiskerino", category="pets"),
        "vet": store.add("The cat sees the vet every March", category="pets"),
        "flap": store.add("The cat flap in the kitchen is broken", category="home"),
        "sofa": store.add("The sofa is from 2019", category="home"),
        "loose": store.add("A cat video went viral at the office", category="work"),
    }
    return ids


def test_named_categories_come_first_then_flat_fills(store, facts):
    found = search_by_category(store.memories, "cat", categories="pets", limit=4)
    ids = found.hits.ids
    assert set(ids[:2]) == {facts["cat"], facts["vet"]}
    assert set(ids[2:]) == {facts["flap"], facts["loose"]}
    assert len(set(ids)) == len(ids)
    assert found.categories == ("pets",) and found.chosen_by == "given"
    assert [found.tier_of(i) for i in ids] == ["scoped", "scoped", "flat", "flat"]
    assert found.used_fallback


def test_enough_scoped_hits_skip_the_fallback(store, facts):
    found = search_by_category(store.memories, "cat", categories=["pets"], limit=4, min_results=2)
    assert set(found.hits.ids) == {facts["cat"], facts["vet"]}
    assert not found.used_fallback


def test_the_query_picks_its_categories_by_the_keyword_rules(store, facts):
    found = search_by_category(store.memories, "what is my cat called?", limit=2, min_results=2)
    assert found.categories == ("pets",) and found.chosen_by == "query"
    assert set(found.hits.ids) == {facts["cat"], facts["vet"]} and not found.used_fallback


def test_query_categories_without_facts_are_not_searched(store, facts):
    # "dentist" is a health keyword, but no health facts exist: the probe's categories are used instead
    found = search_by_category(store.memories, "kitchen flap dentist", limit=2, max_categories=1)
    assert found.categories == ("home",) and found.chosen_by == "probe"
    assert found.hits.ids[0] == facts["flap"]


def test_categories_inferred_from_the_best_hits(store, facts):
    found = search_by_category(store.memories, "kitchen flap", limit=2, max_categories=1)
    assert found.categories == ("home",)
    assert found.hits.ids[0] == facts["flap"]
    assert found.tier_of(facts["flap"]) == "scoped"


def test_unknown_category_falls_back_to_flat_search(store, facts):
    found = search_by_category(store.memories, "sofa", categories=["cars"], limit=3)
    assert found.hits.ids[0] == facts["sofa"]  # then weaker matches by meaning, if any
    assert found.scoped_ids == frozenset() and found.used_fallback


def test_each_hit_is_counted_once_as_accessed(hashing_store, hashing_facts):
    # the hashing embedder: "sofa" shares nothing with "cat" (the static one finds them a little alike)
    store, facts = hashing_store, hashing_facts
    found = search_by_category(store.memories, "cat", categories="pets", limit=5)
    assert {store.get(i).access_count for i in found.hits.ids} == {1}
    assert store.get(facts["sofa"]).access_count == 0


def test_filters_apply_to_both_tiers_and_bad_arguments_are_refused(store, facts):
    store.update(facts["flap"], metadata={"room": "kitchen"})
    found = search_by_category(store.memories, "cat", categories="pets", where={"room": "kitchen"}, limit=3)
    assert found.hits.ids == [facts["flap"]]
    with pytest.raises(TypeError, match="category"):
        search_by_category(store.memories, "cat", category="pets")
    with pytest.raises(ValueError, match="limit"):
        search_by_category(store.memories, "cat", limit=0)
    with pytest.raises(ValueError, match="categories"):
        search_by_category(store.memories, "cat", categories=[""])
    with pytest.raises(ValueError, match="query"):
        search_by_category(store.memories, "  ")


def test_known_categories_counts_live_facts_of_the_namespace(store, facts):
    store.add("Alice's dog is called Rex", category="pets", namespace="alice")
    assert known_categories(store.memories) == ["home", "pets", "work"]
    assert known_categories(store.memories, namespace="alice") == ["pets"]


def test_a_text_model_can_pick_the_query_categories(clock):
    with MemoryStore.open(":memory:", clock=clock, config={"memory": {"categorizer": "model"}}) as store:
        store.add("My cat is called Whiskerino", category="pets")
        store.add("Our office is in Ghent", category="work")
        prompts = []

        def answer(prompt, max_tokens):
            prompts.append(prompt)
            return '{"categories": ["work"]}'

        store.text_model = FunctionModel(answer)
        found = search_by_category(store.memories, "where is the cat?", limit=1, min_results=1)
        assert found.categories == ("work",) and "Categories: pets, work" in prompts[-1]
        store.text_model = FunctionModel(lambda p, n: '{"categories": ["martians"]}')
        found = search_by_category(store.memories, "where is the cat?", limit=1, min_results=1)
        assert found.categories == ("pets",)  # an unknown answer: the keyword rules decide

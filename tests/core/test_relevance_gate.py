"""``SearchResults.matching``: seed 003's relevance gate (keywords matched, or a close enough vector)."""

from __future__ import annotations


def test_weak_vector_neighbours_are_dropped(store):
    store.add("The invoice number is INV-2291", id="invoice")
    store.add("Tomatoes want full sun and deep watering", id="garden")
    hits = store.search("invoice INV-2291", limit=10)
    assert hits.matching(0.99).ids == ["invoice"]  # a keyword match passes whatever its vector says
    neighbours = store.search("invoice INV-2291", fusion="vector", limit=10)
    assert set(neighbours.ids) == {"invoice", "garden"}  # vector search returns every neighbour
    kept = neighbours.matching(0.5)
    assert kept.ids == ["invoice"] and kept.query == "invoice INV-2291"
    assert neighbours.matching(-1.0).ids == neighbours.ids  # a threshold nobody misses keeps everything


def test_matching_only_words_most_memories_contain_does_not_count(store):
    for i in range(6):
        store.add(f"Answer {i}: it is sunny in Porto", id=f"weather-{i}")
    store.add("My cat is called Miso", id="cat")
    hits = store.search("is my cat called Porto", limit=10)
    weak = [h for h in hits if h.id.startswith("weather")]
    assert weak and all((h.parts.bm25 or 0) > 0 for h in weak)  # "Porto" matched them, with almost no weight
    assert set(hits.matching(0.99).ids) == set(hits.ids)
    assert hits.matching(0.99, min_keyword=0.05).ids == ["cat"]

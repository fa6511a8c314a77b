"""OpenKoiRetriever: the core's hybrid ranking, per-call overrides, scores in metadata."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from langchain_openkoi import OpenKoiRetriever, OpenKoiVectorStore
from shared_core import HashingEmbedder, MemoryStore

NOTES = [
    ("n1", "Deploys to production happen on Tuesdays after the standup", {"team": "infra"}),
    ("n2", "The deploy pipeline runs integration tests before production", {"team": "infra"}),
    ("n3", "Marketing launches go out on Thursdays", {"team": "growth"}),
    ("n4", "The cafeteria serves pasta on Fridays", {"team": "office"}),
    ("n5", "Quarterly planning starts in the first week of March", {"team": "office"}),
]


@pytest.fixture
def loaded(store):
    return _load(store)


def _load(store):
    for mid, text, metadata in NOTES:
        store.add(text, id=mid, namespace="ops", metadata=metadata, dedup=False)
    store.add("Production deploys are frozen in December", id="other-ns", namespace="elsewhere")
    return store


def test_hybrid_search_with_feedback_ranking(loaded):
    retriever = OpenKoiRetriever(store=loaded, namespace="ops", k=2)
    docs = retriever.invoke("production deploy")
    assert {d.id for d in docs} == {"n1", "n2"}
    first, second = docs
    loaded.reinforce(second.id, weight=5)  # seed 002's feedback moves the order
    assert [d.id for d in retriever.invoke("production deploy")] == [second.id, first.id]


def test_score_parts_and_metadata(loaded):
    doc = OpenKoiRetriever(store=loaded, namespace="ops").invoke("cafeteria pasta")[0]
    assert doc.id == "n4" and doc.page_content.startswith("The cafeteria")
    assert doc.metadata["team"] == "office"
    details = doc.metadata["openkoi"]
    assert details["kind"] == "fact" and details["namespace"] == "ops"
    parts = details["score_parts"]
    assert set(parts) >= {"bm25", "keyword", "similarity", "vector", "relevance", "feedback", "recency", "fusion"}
    assert details["score"] == pytest.approx(parts["relevance"] * parts["feedback"] * parts["recency"])


def test_per_call_overrides(clock):
    # the hashing embedder: nothing of the growth team's note is like "deploy production" (the static
    # one finds its "Thursdays" note a little alike, which fills the filtered result)
    with MemoryStore.open(":memory:", clock=clock, embedder=HashingEmbedder()) as store:
        _per_call_overrides(_load(store))


def _per_call_overrides(loaded):
    retriever = OpenKoiRetriever(store=loaded, namespace="ops", k=1)
    assert len(retriever.invoke("deploy production", k=2)) == 2
    assert [d.id for d in retriever.invoke("deploy production", filter={"team": "growth"})] == []
    assert [d.id for d in retriever.invoke("Thursdays", filter={"team": "growth"})] == ["n3"]
    assert [d.id for d in retriever.invoke("December frozen", namespace="elsewhere")] == ["other-ns"]
    assert retriever.invoke("deploy production", kind="document") == []
    assert [d.id for d in OpenKoiRetriever(store=loaded, namespace=["ops", "elsewhere"], k=5).invoke("December")] == [
        "other-ns"
    ]
    with pytest.raises(ValueError, match="k must"):
        retriever.invoke("x", k=0)


def test_construction(loaded):
    with OpenKoiVectorStore(store=loaded, namespace="docs") as vs:
        vs.add_texts(["retrievers reach documents too"], ids=["doc1"])
        assert OpenKoiRetriever(store=vs, namespace="docs").invoke("retrievers documents")[0].id == "doc1"
    with pytest.raises(TypeError, match="MemoryStore"):
        OpenKoiRetriever(store="not a store")
    with pytest.raises(ValidationError):
        OpenKoiRetriever(store=loaded, k=0)


async def test_ainvoke(loaded):
    docs = await OpenKoiRetriever(store=loaded, namespace="ops").ainvoke("Quarterly planning March", k=1)
    assert [d.id for d in docs] == ["n5"]


def test_every_kind_but_unindexed_store_items(store):
    from langchain_openkoi import OpenKoiStore

    graph = OpenKoiStore(store=store)
    graph.put(("ops",), "indexed", {"text": "the pager rotation changes on Mondays"})
    graph.put(("ops",), "hidden", {"text": "the pager rotation secret"}, index=False)
    retriever = OpenKoiRetriever(store=store, namespace="ops.", k=5)
    docs = retriever.invoke("pager rotation")
    assert [d.metadata["key"] for d in docs] == ["indexed"]
    assert {d.metadata["openkoi"]["kind"] for d in retriever.invoke("pager", kind="langgraph_item_unindexed")} == {
        "langgraph_item_unindexed"
    }  # asked for by kind, they are found (by keyword)

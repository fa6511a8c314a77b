"""OpenKoiStore: LangGraph's BaseStore semantics on the core."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from langgraph.store.base import GetOp, InvalidNamespaceError, ListNamespacesOp, PutOp, SearchOp

from langchain_openkoi import OpenKoiStore
from langchain_openkoi.langgraph_store import (
    ITEM_KIND,
    UNINDEXED_KIND,
    decode_namespace,
    encode_namespace,
    item_id,
    translate_filter,
)
from shared_core import FilterError, MemoryStore


@pytest.fixture
def graph_store(clock):
    with OpenKoiStore(":memory:", clock=clock) as s:
        yield s


def test_values_round_trip_exactly(graph_store, clock):
    value = {"zeta": 1, "alpha": {"list": [1, 2.5, None, True, "é"], "empty": {}}, "big": 2**62, "f": 0.1}
    graph_store.put(("users", "alice"), "profile", value)
    item = graph_store.get(("users", "alice"), "profile")
    assert item.value == value and list(item.value) == ["zeta", "alpha", "big", "f"]
    assert item.key == "profile" and item.namespace == ("users", "alice")
    assert item.created_at == item.updated_at == clock.now()
    clock.advance(hours=1)
    graph_store.put(("users", "alice"), "profile", {"v": 2})
    again = graph_store.get(("users", "alice"), "profile")
    assert again.value == {"v": 2}
    assert again.created_at == item.created_at and again.updated_at == clock.now()
    assert graph_store.get(("users", "alice"), "missing") is None


def test_keys_are_unique_per_namespace(graph_store):
    graph_store.put(("a",), "k", {"v": 1})
    graph_store.put(("a", "b"), "k", {"v": 2})
    graph_store.put(("b",), "k", {"v": 3})
    assert [graph_store.get(ns, "k").value["v"] for ns in [("a",), ("a", "b"), ("b",)]] == [1, 2, 3]
    graph_store.delete(("a",), "k")
    assert graph_store.get(("a",), "k") is None and graph_store.get(("a", "b"), "k").value == {"v": 2}
    graph_store.delete(("a",), "never-there")  # deleting what is not there is fine
    assert item_id(("a",), "b.k") != item_id(("a", "b"), "k")


def test_namespace_encoding_is_exact():
    assert encode_namespace(("users", "alice")) == "users.alice."
    assert decode_namespace("users.alice.") == ("users", "alice")
    for bad in ["users", ".users.", "a..b."]:
        with pytest.raises(ValueError):
            decode_namespace(bad)
    assert OpenKoiStore.core_namespace(("memories", "bob")) == "memories.bob."


def test_prefix_search_never_crosses_label_boundaries(graph_store):
    graph_store.put(("users",), "root", {"text": "tea"})
    graph_store.put(("users", "alice"), "a", {"text": "tea"})
    graph_store.put(("usersX",), "x", {"text": "tea"})
    core = graph_store.memory_store
    fact = core.add("a fact about tea in the same core namespace", namespace="users.alice.")
    core.add("a transcript line about tea", kind="message", namespace="users.alice.")
    core.add("a fact about tea elsewhere", namespace="user:alice")  # not a LangGraph namespace
    by_prefix = {(i.namespace, i.key) for i in graph_store.search(("users",))}
    assert by_prefix == {(("users",), "root"), (("users", "alice"), "a"), (("users", "alice"), str(fact))}
    assert {(i.namespace, i.key) for i in graph_store.search(("users",), query="tea")} == by_prefix
    # every item and every memory of a tuple namespace; no message, no other namespace
    assert len(graph_store.search(())) == 4 and len(graph_store.search((), query="tea")) == 4
    assert graph_store.list_namespaces() == [("users",), ("users", "alice"), ("usersX",)]


def test_query_search_is_hybrid_and_ranked(graph_store):
    ns = ("notes",)
    graph_store.put(ns, "tea", {"text": "Alice drinks green tea every morning"})
    graph_store.put(ns, "coffee", {"text": "Bob prefers strong black coffee"})
    graph_store.put(ns, "tea2", {"text": "The office kitchen has tea and coffee"})
    for i, topic in enumerate(["deploy friday", "budget review", "hiring plan", "roadmap draft"]):
        graph_store.put(ns, f"other{i}", {"text": f"Notes on the {topic}"})
    results = graph_store.search(ns, query="green tea")
    assert [r.key for r in results][:2] == ["tea", "tea2"]  # keywords and vectors: the best match first
    assert len(results) == 7  # every item in scope, as LangGraph's stores return them (up to the limit)
    assert all(r.score is not None and 0 <= r.score <= 1 for r in results)
    assert [r.score for r in results] == sorted((r.score for r in results), reverse=True)
    assert [r.key for r in graph_store.search(ns, query="green tea", limit=2)] == ["tea", "tea2"]
    assert [r.key for r in graph_store.search(ns, query="green tea", limit=2, offset=1)] == ["tea2", results[2].key]
    graph_store.memory_store.reinforce(item_id(ns, "tea2"), weight=10)  # relevance ranks, as in LangGraph's stores
    assert graph_store.search(ns, query="green tea")[0].key == "tea"


def test_index_fields_and_per_put_index(graph_store, counting_embeddings):
    with OpenKoiStore(":memory:", index={"dims": 8, "embed": counting_embeddings, "fields": ["text"]}) as store:
        ns = ("docs",)
        store.put(ns, "a", {"text": "green tea in the morning", "note": "volcano"})
        store.put(ns, "b", {"text": "quiet evening", "title": "volcano eruption"}, index=["title"])
        calls = counting_embeddings.documents
        store.put(ns, "c", {"text": "volcano volcano"}, index=False)
        store.put(ns, "d", {"other": "volcano"})  # the configured field is missing: stored, not indexed
        assert counting_embeddings.documents == calls  # no embedding for unindexed items
        found = store.search(ns, query="volcano")
        assert [i.key for i in found][:1] == ["b"] and {i.key for i in found} == {"a", "b", "c", "d"}
        assert [i.score for i in found[2:]] == [None, None]  # unindexed items come last, without a score
        assert {i.key for i in store.search(ns)} == {"a", "b", "c", "d"}
        assert store.get(ns, "c").value == {"text": "volcano volcano"}
        kinds = {m.metadata["key"]: m.kind for m in store.memory_store.list(namespace="docs.", kind=[ITEM_KIND, UNINDEXED_KIND])}
        assert kinds == {"a": ITEM_KIND, "b": ITEM_KIND, "c": UNINDEXED_KIND, "d": UNINDEXED_KIND}
        store.put(ns, "c", {"text": "volcano"})  # re-put with indexing: now it matches
        assert [i.key for i in store.search(ns, query="volcano", limit=2)] == ["c", "b"]
        assert store.memory_store.embedder.name.startswith("langchain/CountingEmbeddings")


def test_filters(graph_store):
    ns = ("tasks",)
    graph_store.put(ns, "1", {"status": "open", "priority": 3, "meta": {"team": "infra", "size": 2}, "tags": ["a", "b"]})
    graph_store.put(ns, "2", {"status": "done", "priority": 1, "meta": {"team": "web"}, "tags": ["a"]})
    graph_store.put(ns, "3", {"status": "open", "priority": 5, "flag": None})

    def keys(spec, query=None):
        return sorted(i.key for i in graph_store.search(ns, filter=spec, query=query))

    assert keys({"status": "open"}) == ["1", "3"]
    assert keys({"priority": {"$gt": 1, "$lte": 3}}) == ["1"]
    assert keys({"status": {"$ne": "open"}}) == ["2"]
    assert keys({"meta": {"team": "infra"}}) == ["1"]  # nested dicts match the fields they name
    assert keys({"meta.team": "web"}) == ["2"]  # dotted keys reach nested fields
    assert keys({"tags": ["a"]}) == ["2"]  # lists match exactly
    assert keys({"flag": None}) == ["1", "2", "3"]  # null or missing, as in LangGraph's stores
    assert keys({"priority": {"$in": [1, 5]}}) == ["2", "3"]  # the core's operators work too
    assert keys({"$or": [{"priority": 1}, {"meta": {"size": 2}}]}) == ["1", "2"]
    assert keys({"status": "open"}, query="open") == ["1", "3"]
    with pytest.raises(FilterError):
        graph_store.search(ns, filter={"priority": {"$gt": 1, "x": 2}})
    with pytest.raises(FilterError):
        graph_store.search(ns, filter={"$bogus": 1})


def test_translate_filter_shapes():
    assert translate_filter(None) is None and translate_filter({}) is None
    assert translate_filter({"a": 1}) == {"value.a": {"$eq": 1}}
    assert translate_filter({"a": {"b": {"$gt": 1}, "c": 2}}) == {
        "$and": [{"value.a.b": {"$gt": 1}}, {"value.a.c": {"$eq": 2}}]
    }
    assert translate_filter({"$not": {"@score": 1}}) == {"$not": {"value.@score": {"$eq": 1}}}


def test_limit_offset_and_order(graph_store, clock):
    ns = ("log",)
    for i in range(5):
        graph_store.put(ns, f"k{i}", {"text": f"entry {i} about deploys"})
        clock.advance(minutes=1)
    assert [i.key for i in graph_store.search(ns, limit=2)] == ["k4", "k3"]  # newest first, as in SqliteStore
    assert [i.key for i in graph_store.search(ns, limit=2, offset=2)] == ["k2", "k1"]
    everything = [i.key for i in graph_store.search(ns, query="deploys entry", limit=10)]
    assert [i.key for i in graph_store.search(ns, query="deploys entry", limit=2, offset=1)] == everything[1:3]


def test_list_namespaces(graph_store, clock):
    for ns in [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f"), ("a", "c", "f"), ("x",)]:
        graph_store.put(ns, "k", {"v": 1})
    graph_store.put(("a", "tmp"), "k", {"v": 1}, ttl=1)
    assert graph_store.list_namespaces(prefix=("a", "b"), max_depth=3) == [("a", "b", "c"), ("a", "b", "d"), ("a", "b", "f")]
    assert graph_store.list_namespaces(suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f")]
    assert graph_store.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert graph_store.list_namespaces(prefix=("a",), suffix=("*", "e")) == [("a", "b", "d", "e")]
    assert graph_store.list_namespaces(max_depth=1) == [("a",), ("x",)]
    assert graph_store.list_namespaces(prefix=("a",), limit=2, offset=1) == [("a", "b", "d", "e"), ("a", "b", "d", "i")]
    assert ("a", "tmp") in graph_store.list_namespaces(prefix=("a",))
    clock.advance(minutes=2)
    assert ("a", "tmp") not in graph_store.list_namespaces(prefix=("a",))  # expired items are invisible


def test_ttl_expiry_and_refresh(clock):
    with OpenKoiStore(":memory:", clock=clock, ttl={"default_ttl": 10}) as store:
        ns = ("s",)
        store.put(ns, "default", {"text": "uses the default ttl"})
        store.put(ns, "short", {"text": "short lived"}, ttl=5)
        store.put(ns, "forever", {"text": "never expires"}, ttl=None)
        clock.advance(minutes=4)
        assert store.get(ns, "short") is not None  # read refreshes: 5 more minutes from now
        clock.advance(minutes=4)
        assert store.get(ns, "short", refresh_ttl=False) is not None
        assert [i.key for i in store.search(ns, query="default ttl", limit=1)] == ["default"]  # search refreshes too
        clock.advance(minutes=2)
        assert store.get(ns, "short") is None
        clock.advance(minutes=7)
        assert {i.key for i in store.search(ns)} == {"default", "forever"}
        clock.advance(minutes=11)
        assert {i.key for i in store.search(ns)} == {"forever"}
        assert store.sweep_ttl() == 2
        assert store.memory_store.count(namespace="s.", kind=[ITEM_KIND, UNINDEXED_KIND], include_expired=True) == 1


def test_refresh_on_read_can_be_turned_off(clock):
    with OpenKoiStore(":memory:", clock=clock, ttl={"refresh_on_read": False}) as store:
        store.put(("s",), "k", {"v": 1}, ttl=5)
        clock.advance(minutes=4)
        assert store.get(("s",), "k") is not None
        clock.advance(minutes=2)
        assert store.get(("s",), "k") is None
        assert store.get(("s",), "k", refresh_ttl=True) is None


def test_ttl_sweeper_thread(clock):
    with OpenKoiStore(":memory:", clock=clock, ttl={"sweep_interval_minutes": 0.001}) as store:
        store.put(("s",), "k", {"v": 1}, ttl=1)
        clock.advance(minutes=2)
        future = store.start_ttl_sweeper()
        deadline = time.monotonic() + 5
        kinds = [ITEM_KIND, UNINDEXED_KIND]
        while store.memory_store.count(namespace="s.", kind=kinds, include_expired=True) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert store.memory_store.count(namespace="s.", kind=kinds, include_expired=True) == 0
        assert store.stop_ttl_sweeper(timeout=5)
        assert future.result(timeout=5) is None


def test_batch_runs_reads_before_writes_and_last_put_wins(graph_store):
    ns = ("b",)
    graph_store.put(ns, "k", {"v": 0})
    results = graph_store.batch([
        PutOp(ns, "k", {"v": 1}),
        GetOp(ns, "k"),
        PutOp(ns, "k", {"v": 2}),
        PutOp(ns, "gone", {"v": 9}),
        PutOp(ns, "gone", None),
        SearchOp(ns),
        ListNamespacesOp(),
    ])
    assert results[0] is None and results[1].value == {"v": 0}
    assert [i.value for i in results[5]] == [{"v": 0}]
    assert results[6] == [ns]
    assert graph_store.get(ns, "k").value == {"v": 2} and graph_store.get(ns, "gone") is None


async def test_async_twins(graph_store):
    await graph_store.aput(("a",), "k", {"text": "async tea"})
    assert (await graph_store.aget(("a",), "k")).value == {"text": "async tea"}
    assert [i.key for i in await graph_store.asearch(("a",), query="tea")] == ["k"]
    assert await graph_store.alist_namespaces() == [("a",)]
    await graph_store.adelete(("a",), "k")
    assert await graph_store.aget(("a",), "k") is None


def test_bad_input_gets_clear_errors(graph_store):
    with pytest.raises(InvalidNamespaceError):
        graph_store.put(("a.b",), "k", {})
    with pytest.raises(InvalidNamespaceError):
        graph_store.put(("langgraph",), "k", {})
    with pytest.raises(InvalidNamespaceError):
        graph_store.batch([PutOp((), "k", {"v": 1})])
    with pytest.raises(InvalidNamespaceError):
        graph_store.batch([GetOp(("a", ""), "k")])
    with pytest.raises(TypeError, match="dict"):
        graph_store.put(("a",), "k", ["not", "a", "dict"])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="minutes"):
        graph_store.put(("a",), "k", {}, ttl=-1)
    with pytest.raises(TypeError, match="index"):
        graph_store.put(("a",), "k", {}, index="text")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown index settings"):
        OpenKoiStore(":memory:", index={"dim": 3})
    with pytest.raises(ValueError, match="cosine"):
        OpenKoiStore(":memory:", index={"distance_type": "l2"})
    with pytest.raises(ValueError, match="dims"):
        OpenKoiStore(":memory:", index={"dims": 3})  # the default embedder makes 256
    with pytest.raises(ValueError, match="unknown ttl"):
        OpenKoiStore(":memory:", ttl={"default": 3})
    assert graph_store.get(("a",), "k") is None  # nothing half-written


def test_embedding_functions_and_persistence(tmp_path):
    def embed(texts):
        return [[1.0 + len(t) % 3, 1.0, float("tea" in t), 0.5] for t in texts]

    path = tmp_path / "graph.db"
    with OpenKoiStore(path, index={"dims": 4, "embed": embed}) as first:
        first.put(("m",), "k", {"text": "tea time"})
    with OpenKoiStore(path, index={"dims": 4, "embed": embed}) as second:
        assert second.get(("m",), "k").value == {"text": "tea time"}
        assert [i.key for i in second.search(("m",), query="tea")] == ["k"]
    with pytest.raises(Exception, match="embed"):
        OpenKoiStore(path)  # the file was built with the function: it must be passed again


def test_over_an_open_memory_store(clock):
    with MemoryStore.open(":memory:", clock=clock) as core:
        graph = OpenKoiStore(store=core)
        graph.put(("u",), "k", {"text": "shared file"})
        graph.close()  # not ours to close
        assert core.count(namespace="u.", kind=ITEM_KIND) == 1
        with pytest.raises(ValueError, match="not both"):
            OpenKoiStore(":memory:", store=core)
        assert core.search("shared file", namespace="u.").ids == [item_id(("u",), "k")]
        assert core.get(item_id(("u",), "k")).source == "langgraph"
        assert timedelta(0) == core.get(item_id(("u",), "k")).created_at - clock.now()


def test_memories_other_doors_wrote_are_items(graph_store):
    """A fact saved by the core, the tools or the middleware is an item of its namespace: read, filter, fix, delete."""
    core = graph_store.memory_store
    ns = ("memories", "ann")
    fact = str(core.add("Ann's cat is called Miso", namespace="memories.ann.", category="pets", tags=["cat"]))
    graph_store.put(ns, "tea", {"content": "Ann drinks oolong tea"})
    item = graph_store.get(ns, fact)
    assert item.key == fact and item.namespace == ns
    assert item.value == {"content": "Ann's cat is called Miso", "kind": "fact", "category": "pets", "tags": ["cat"]}
    assert graph_store.get(("memories", "bob"), fact) is None  # its id is a key of its own namespace only
    assert [i.key for i in graph_store.search(ns, filter={"kind": "fact"})] == [fact]
    assert [i.key for i in graph_store.search(ns, filter={"category": "pets"})] == [fact]
    assert [i.key for i in graph_store.search(ns, filter={"content": "Ann drinks oolong tea"})] == ["tea"]
    assert graph_store.search(ns, query="cat called Miso")[0].key == fact
    graph_store.put(ns, fact, {"content": "Ann's cat is called Mochi"})  # corrects the fact in place
    assert core.get(fact).text == "Ann's cat is called Mochi" and core.get(fact).kind == "fact"
    assert graph_store.get(ns, "tea").value == {"content": "Ann drinks oolong tea"}  # the store's own item as put
    with pytest.raises(ValueError, match="content"):
        graph_store.put(ns, fact, {"name": "Mochi"})
    graph_store.delete(ns, fact)
    assert core.get_many([fact]) == [] and [i.key for i in graph_store.search(ns)] == ["tea"]


@pytest.mark.parametrize(("query", "key"), [("diet", "food"), ("vehicle", "car"), ("children", "family")])
def test_the_default_store_finds_an_item_by_meaning(graph_store, query, key):
    """No word of the query is in the items: the default embedder's vectors find the right one."""
    facts = {"food": "User is vegetarian", "car": "User drives a Tesla Model 3",
             "family": "User has a daughter named Mia"}
    for name, text in facts.items():
        graph_store.put(("users", "alice"), name, {"text": text})
    hits = graph_store.search(("users", "alice"), query=query, limit=3)
    assert hits and hits[0].key == key

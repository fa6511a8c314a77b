"""OpenKoiRetriever: the core's hybrid search and ranking as a LlamaIndex retriever."""

from __future__ import annotations

import math

import pytest
from llama_helpers import HashEmbedding
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle
from llama_index.core.vector_stores.types import FilterOperator, MetadataFilter, MetadataFilters

from llama_index_openkoi import OpenKoiRetriever, OpenKoiVectorStore
from shared_core import MemoryStore
from shared_core.embed import profile_of
from shared_core.namespaces import NamespaceTemplateError


@pytest.fixture
def memories(store):
    store.add("The production database runs PostgreSQL 16 in Frankfurt", id="db", tags=["infra"],
              metadata={"team": "platform", "priority": 2})
    store.add("Deploys go out every Tuesday after the standup", id="deploy", tags=["process"],
              metadata={"team": "platform", "priority": 1})
    store.add("Alice prefers tea over coffee", id="tea", metadata={"team": "people", "priority": 3})
    store.add("The staging database is wiped every Sunday", id="staging", kind="note",
              metadata={"team": "platform", "priority": 5})
    store.add("Bob's database notes live in the wiki", id="bob", namespace="user:bob")
    return store


def _ids(results) -> list[str]:
    return [r.node.node_id for r in results]


def test_hybrid_results_carry_score_parts(memories):
    results = OpenKoiRetriever(memories).retrieve("which database does production use?")
    assert isinstance(results[0], NodeWithScore)
    assert results[0].node.node_id == "db"
    assert [r.score for r in results] == sorted((r.score for r in results), reverse=True)
    meta = results[0].node.metadata
    parts = meta["score_parts"]
    assert set(parts) >= {"bm25", "similarity", "relevance", "feedback", "recency", "fusion"}
    # the rank on a 0..1 scale: keyword-first relevance is at most 1 + the embedder's vector weight
    scale = 1.0 + profile_of(memories.embedder).vector_weight
    assert results[0].score == pytest.approx(parts["relevance"] * parts["feedback"] * parts["recency"] / scale)
    assert all(0 < r.score <= 1 for r in results)
    assert meta["memory_id"] == "db" and meta["memory_kind"] == "fact" and meta["memory_namespace"] == "default"
    assert meta["team"] == "platform" and meta["tags"] == ["infra"]
    llm_view = results[0].node.get_content(metadata_mode=MetadataMode.LLM)
    assert "score_parts" not in llm_view and "team: platform" in llm_view


def test_namespace_kind_and_filters(memories):
    assert "bob" not in _ids(OpenKoiRetriever(memories).retrieve("database notes"))
    assert _ids(OpenKoiRetriever(memories, namespace="user:bob").retrieve("database notes")) == ["bob"]
    assert _ids(OpenKoiRetriever(memories, kind="note").retrieve("database")) == ["staging"]
    li_filters = MetadataFilters(filters=[MetadataFilter(key="priority", value=2, operator=FilterOperator.GTE),
                                          MetadataFilter(key="team", value="platform")])
    assert sorted(_ids(OpenKoiRetriever(memories, kind=["fact", "note"], filters=li_filters).retrieve("database"))) == [
        "db", "staging"]
    assert _ids(OpenKoiRetriever(memories, filters={"team": "people"}).retrieve("tea or coffee")) == ["tea"]
    assert _ids(OpenKoiRetriever(memories, tags="process").retrieve("deploys tuesday")) == ["deploy"]


def test_a_tuple_namespace_is_one_namespace_as_everywhere_else(memories):
    """Issue 21: a tuple was read as two namespaces ("users" and "ann"), unlike every other class."""
    memories.add("Ann's bees swarmed in May", id="ann-bees", namespace="users.ann.")
    memories.add("The users' bees are a shared hive", id="users-bees", namespace="users")
    assert _ids(OpenKoiRetriever(memories, namespace=("users", "ann")).retrieve("bees")) == ["ann-bees"]
    assert _ids(OpenKoiRetriever(memories, namespace="users.ann.").retrieve("bees")) == ["ann-bees"]
    several = OpenKoiRetriever(memories, namespaces=[("users", "ann"), "user:bob"]).retrieve("bees database")
    assert sorted(_ids(several)) == ["ann-bees", "bob"]
    assert _ids(OpenKoiRetriever(memories, namespace_prefix=("users",)).retrieve("bees")) == ["ann-bees"]
    with pytest.raises(ValueError, match=r"namespaces=\[\.\.\.\]"):
        OpenKoiRetriever(memories, namespace=["users", "ann"])
    with pytest.raises(ValueError, match="not namespace and namespaces"):
        OpenKoiRetriever(memories, namespace="a", namespaces=["b"])
    with pytest.raises(NamespaceTemplateError, match=r"OpenKoiRetriever.*langgraph_user_id"):
        OpenKoiRetriever(memories, namespace=("memories", "{langgraph_user_id}"))
    with pytest.raises(NamespaceTemplateError, match="user_id"):
        OpenKoiRetriever(memories, namespaces=["user:{user_id}"])


def test_feedback_changes_the_ranking(memories):
    retriever = OpenKoiRetriever(memories, fusion="keyword")
    before = {r.node.node_id: r.score for r in retriever.retrieve("database")}
    memories.reinforce("staging")  # seed 002: score +3, so x exp(0.6) = 1.82
    after = {r.node.node_id: r.score for r in retriever.retrieve("database")}
    assert after["staging"] == pytest.approx(before["staging"] * math.exp(0.6))
    assert after["db"] == pytest.approx(before["db"])
    unranked = OpenKoiRetriever(memories, fusion="keyword", rank=False).retrieve("database")
    assert {r.node.node_id: r.score for r in unranked}["staging"] == pytest.approx(before["staging"])


def test_top_k_and_bad_arguments(memories):
    assert len(OpenKoiRetriever(memories, similarity_top_k=1).retrieve("database")) == 1
    with pytest.raises(ValueError, match="similarity_top_k"):
        OpenKoiRetriever(memories, similarity_top_k=0)
    with pytest.raises(TypeError, match="unknown OpenKoiRetriever arguments.*'colour'"):
        OpenKoiRetriever(memories, colour="red")


async def test_async_retrieve(memories):
    results = await OpenKoiRetriever(memories).aretrieve("prefers tea")
    assert _ids(results)[0] == "tea"


def test_nodes_from_the_vector_store_come_back_whole(clock, nodes):
    embed = HashEmbedding(embed_dim=64)
    for node in nodes:
        node.embedding = embed.get_text_embedding(node.text)
    with MemoryStore.open(":memory:", clock=clock) as store:
        OpenKoiVectorStore(store).add(nodes)
        keyword_only = OpenKoiRetriever(store, kind="node").retrieve("apple pie recipe")
        assert keyword_only[0].node.node_id == "n3" and keyword_only[0].node.ref_doc_id == "doc-b"
        assert keyword_only[0].node.metadata["score_parts"]["similarity"] is None  # no way to embed the query
        hybrid = OpenKoiRetriever(store, kind="node", embed_model=embed).retrieve("apple pie recipe")
        assert hybrid[0].node.node_id == "n3" and hybrid[0].node.metadata["score_parts"]["similarity"] > 0.3
        given = OpenKoiRetriever(store, kind="node").retrieve(
            QueryBundle("apple pie recipe", embedding=embed.get_query_embedding("apple pie recipe")))
        assert given[0].node.metadata["score_parts"]["similarity"] == pytest.approx(
            hybrid[0].node.metadata["score_parts"]["similarity"])


def test_in_a_query_engine(memories):
    engine = RetrieverQueryEngine.from_args(OpenKoiRetriever(memories, similarity_top_k=2), llm=MockLLM())
    response = engine.query("When do deploys go out?")
    assert response.source_nodes[0].node.node_id == "deploy"
    assert "every Tuesday" in str(response)  # MockLLM echoes its prompt, which holds the retrieved text


def test_opens_a_path_itself(tmp_path, clock):
    path = tmp_path / "mem.db"
    with MemoryStore.open(path, clock=clock) as store:
        store.add("The office plants are watered on Mondays", id="plants")
    retriever = OpenKoiRetriever(path=path)
    assert _ids(retriever.retrieve("when are plants watered")) == ["plants"]
    retriever.close()

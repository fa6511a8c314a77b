"""OpenKoiVectorStore against what LlamaIndex expects of a vector store that stores text.

Covers add/get/delete by ref_doc_id/delete_nodes/clear, every supported query mode,
node_ids and doc_ids restrictions, sync and async twins, dimensions, and errors.
"""

from __future__ import annotations

import numpy as np
import pytest
from llama_helpers import sample_nodes
from llama_index.core.indices.query.embedding_utils import (
    get_top_k_embeddings,
    get_top_k_mmr_embeddings,
)
from llama_index.core.schema import NodeRelationship, TextNode
from llama_index.core.vector_stores import SimpleVectorStore
from llama_index.core.vector_stores.types import (
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
    VectorStoreQueryMode,
)

from llama_index_openkoi import OpenKoiVectorStore
from shared_core import MemoryStore
from shared_core.errors import EmbedderMismatchError
from shared_core.namespaces import NamespaceTemplateError

Q = VectorStoreQueryMode


def _ids(nodes) -> list[str]:
    return [n.node_id for n in nodes]


def _without_embedding(node):
    return node.model_dump(exclude={"embedding"})


def _theme(value):
    return MetadataFilters(filters=[MetadataFilter(key="theme", value=value)])


# -- writing and reading ------------------------------------------------------------------------


def test_stores_text_and_round_trips_nodes(vector_store, nodes):
    assert vector_store.stores_text is True
    assert vector_store.add(nodes) == _ids(nodes)
    back = vector_store.get_nodes(_ids(nodes))
    assert [_without_embedding(n) for n in back] == [_without_embedding(n) for n in nodes]
    assert back[0].ref_doc_id == "doc-a"
    assert back[0].relationships[NodeRelationship.SOURCE].node_id == "doc-a"


def test_add_of_an_existing_node_id_replaces_it(filled):
    changed = TextNode(id_="n1", text="The keeper retired", embedding=[0.0, 0.0, 0.0, 1.0], metadata={"v": 2})
    filled.add([changed])
    (node,) = filled.get_nodes(["n1"])
    assert node.text == "The keeper retired" and node.metadata == {"v": 2}
    assert len(filled.get_nodes()) == 5
    result = filled.query(VectorStoreQuery(query_embedding=[0.0, 0.0, 0.0, 1.0], similarity_top_k=1))
    assert result.ids == ["n1"]


def test_get_nodes_order_missing_ids_and_filters(filled):
    assert _ids(filled.get_nodes(["n3", "nope", "n1"])) == ["n3", "n1"]
    assert _ids(filled.get_nodes(filters=_theme("food"))) == ["n3", "n4"]
    assert _ids(filled.get_nodes(["n1", "n3"], filters=_theme("food"))) == ["n3"]
    assert _ids(filled.get_nodes()) == ["n1", "n2", "n3", "n4", "n5"]
    assert filled.get_nodes([]) == []


def test_delete_by_ref_doc_id(filled):
    filled.delete("doc-a")
    assert _ids(filled.get_nodes()) == ["n3", "n4", "n5"]
    result = filled.query(VectorStoreQuery(query_embedding=[1.0, 0.0, 0.0, 0.0], similarity_top_k=5))
    assert "n1" not in result.ids and "n2" not in result.ids
    filled.delete("no-such-doc")  # nothing to delete is not an error
    assert len(filled.get_nodes()) == 3


@pytest.mark.parametrize(("node_ids", "filters", "left"), [
    (["n1", "n4"], None, ["n2", "n3", "n5"]),
    (None, _theme("food"), ["n1", "n2", "n5"]),
    (["n1", "n3"], _theme("food"), ["n1", "n2", "n4", "n5"]),
    ([], None, ["n1", "n2", "n3", "n4", "n5"]),
    (None, None, []),  # as SimpleVectorStore: no restriction deletes every node
])
def test_delete_nodes(filled, node_ids, filters, left):
    filled.delete_nodes(node_ids, filters)
    assert _ids(filled.get_nodes()) == left


def test_clear_empties_only_this_store(clock, nodes):
    with MemoryStore.open(":memory:", clock=clock) as store:
        first = OpenKoiVectorStore(store, namespace="first")
        second = OpenKoiVectorStore(store, namespace="second")
        first.add(nodes)
        fact = store.add("a fact that is not a node", namespace="first", vector=[0.0, 0.0, 0.0, 1.0])
        second.add(sample_nodes())  # the same node ids, in another namespace
        first.clear()
        assert first.get_nodes() == []
        assert len(second.get_nodes()) == 5
        assert store.get(fact).text == "a fact that is not a node"
        second.delete("doc-a")
        assert _ids(second.get_nodes()) == ["n3", "n4", "n5"]


# -- query modes --------------------------------------------------------------------------------


def test_default_mode_is_cosine_knn(filled, nodes):
    query = [0.9, 0.2, 0.3, 0.1]
    result = filled.query(VectorStoreQuery(query_embedding=query, similarity_top_k=3))
    expected_sims, expected_ids = get_top_k_embeddings(query, [n.embedding for n in nodes], similarity_top_k=3,
                                                       embedding_ids=_ids(nodes))
    assert result.ids == expected_ids
    assert np.allclose(result.similarities, expected_sims, atol=1e-5)
    assert _ids(result.nodes) == result.ids and result.nodes[0].text.startswith("The lighthouse")


def test_node_ids_and_doc_ids_restrict_the_query(filled):
    query = [0.1, 1.0, 0.2, 0.0]
    assert filled.query(VectorStoreQuery(query_embedding=query, similarity_top_k=5, node_ids=["n3", "n5"])).ids == [
        "n5", "n3"]
    assert filled.query(VectorStoreQuery(query_embedding=query, similarity_top_k=5, doc_ids=["doc-b"])).ids == [
        "n3", "n4"]
    assert sorted(filled.query(VectorStoreQuery(query_embedding=query, similarity_top_k=5,
                                                doc_ids=["doc-b", "doc-c"])).ids) == ["n3", "n4", "n5"]
    # VectorIndexRetriever sends node_ids=[] to stores that keep text: no restriction
    assert len(filled.query(VectorStoreQuery(query_embedding=query, similarity_top_k=5, node_ids=[])).ids) == 5


@pytest.mark.parametrize("mode", [Q.TEXT_SEARCH, Q.SPARSE])
def test_text_search_and_sparse_are_bm25(filled, mode):
    result = filled.query(VectorStoreQuery(query_str="storm harbour", mode=mode, similarity_top_k=5))
    assert result.ids == ["n2", "n1"]  # both say "storm"; n2 also says "harbour"
    assert result.similarities[0] == pytest.approx(1.0) and 0 < result.similarities[1] < 1
    assert filled.query(VectorStoreQuery(query_str="storm", mode=mode, similarity_top_k=5,
                                         filters=_theme("sea"), node_ids=["n1"])).ids == ["n1"]
    assert filled.query(VectorStoreQuery(query_str="zebra", mode=mode, similarity_top_k=5)).ids == []


def test_sparse_top_k_limits_sparse_results(filled):
    result = filled.query(VectorStoreQuery(query_str="storm", mode=Q.SPARSE, similarity_top_k=5, sparse_top_k=1))
    assert len(result.ids) == 1


def test_hybrid_alpha_moves_between_keywords_and_vectors(filled):
    # the words point at n3 (apple pie); the vector points at n5 (mountain trails)
    def hybrid(alpha):
        return filled.query(VectorStoreQuery(query_str="apple pie", query_embedding=[0.0, 1.0, 0.0, 0.0],
                                             mode=Q.HYBRID, alpha=alpha, similarity_top_k=2)).ids

    assert hybrid(0.0) == ["n3"]  # keywords only: nothing else says apple or pie
    assert hybrid(1.0)[0] == "n5"  # vectors only
    assert hybrid(0.3)[0] == "n3" and hybrid(0.9)[0] == "n5"
    default = filled.query(VectorStoreQuery(query_str="apple pie", query_embedding=[0.0, 1.0, 0.0, 0.0],
                                            mode=Q.HYBRID, similarity_top_k=2))
    # no alpha: the core's keyword-first fusion adds the vector evidence to the keyword match
    assert set(default.ids) == {"n3", "n5"}


def test_hybrid_alpha_one_is_exactly_the_default_mode(filled):
    """Issue 21: alpha=1.0 dropped every node whose cosine was under the embedder's noise floor."""
    query = [0.0, 0.1, 1.0, 0.0]  # close to n3; n1, n2 and n5 are under the floor (0.2)
    default = filled.query(VectorStoreQuery(query_embedding=query, similarity_top_k=5))
    hybrid = filled.query(VectorStoreQuery(query_str="mountain", query_embedding=query, mode=Q.HYBRID, alpha=1.0,
                                           similarity_top_k=5))
    assert len(default.ids) == 5 and min(default.similarities) < 0.2
    assert hybrid.ids == default.ids
    assert hybrid.similarities == pytest.approx(default.similarities)


def test_hybrid_alpha_zero_is_exactly_text_search(filled):
    text = filled.query(VectorStoreQuery(query_str="storm harbour", mode=Q.TEXT_SEARCH, similarity_top_k=5))
    hybrid = filled.query(VectorStoreQuery(query_str="storm harbour", query_embedding=[0.0, 0.0, 1.0, 0.0],
                                           mode=Q.HYBRID, alpha=0.0, similarity_top_k=5))
    assert hybrid.ids == text.ids == ["n2", "n1"]
    assert hybrid.similarities == pytest.approx(text.similarities)


def test_similarities_follow_llamaindex_conventions(filled, nodes):
    """Vector modes report cosine as SimpleVectorStore does; the others stay within 0..1, best first."""
    simple = SimpleVectorStore()
    simple.add(nodes)
    query = [0.9, 0.2, 0.3, 0.1]
    expected = simple.query(VectorStoreQuery(query_embedding=query, similarity_top_k=5))
    for mode, extra in ((Q.DEFAULT, {}), (Q.HYBRID, {"alpha": 1.0, "query_str": "storm"})):
        got = filled.query(VectorStoreQuery(query_embedding=query, mode=mode, similarity_top_k=5, **extra))
        assert got.ids == expected.ids
        assert got.similarities == pytest.approx(expected.similarities, abs=1e-5)
    for extra in ({"mode": Q.TEXT_SEARCH}, {"mode": Q.HYBRID}, {"mode": Q.HYBRID, "alpha": 0.5}):
        got = filled.query(VectorStoreQuery(query_str="storm harbour", query_embedding=[0.8, 0.6, 0.0, 0.0],
                                            similarity_top_k=5, **extra))
        assert got.ids[0] == "n2", extra
        assert got.similarities == sorted(got.similarities, reverse=True), extra
        assert all(0.0 <= s <= 1.0 for s in got.similarities), (extra, got.similarities)
    # the default hybrid (keyword-first): n2 matches both words and is the query's own vector
    best = filled.query(VectorStoreQuery(query_str="storm harbour", query_embedding=[0.8, 0.6, 0.0, 0.0],
                                         mode=Q.HYBRID, similarity_top_k=1))
    assert best.similarities == [pytest.approx(1.0)]


def test_a_tuple_namespace_reads_as_everywhere_else(clock, nodes):
    with MemoryStore.open(":memory:", clock=clock) as store:
        vs = OpenKoiVectorStore(store, namespace=("users", "ann"))
        assert vs.namespace == "users.ann."
        vs.add(nodes)
        assert store.count(namespace="users.ann.", kind="node") == 5
        same = OpenKoiVectorStore(store, namespace="users.ann.")
        assert _ids(same.get_nodes()) == _ids(nodes)
        with pytest.raises(NamespaceTemplateError, match=r"OpenKoiVectorStore.*resolve_namespace.*'user_id'"):
            OpenKoiVectorStore(store, namespace=("users", "{user_id}"))


def test_hybrid_top_k_and_filters(filled):
    result = filled.query(VectorStoreQuery(query_str="storm", query_embedding=[1.0, 0.0, 0.0, 0.0], mode=Q.HYBRID,
                                           alpha=0.5, similarity_top_k=1, hybrid_top_k=3,
                                           filters=_theme("sea")))
    assert sorted(result.ids) == ["n1", "n2"]


@pytest.mark.parametrize(("threshold", "expected"), [(0.9, ["n1", "n2"]), (0.5, ["n1", "n5"]), (0.1, ["n1", "n5"])])
def test_mmr_matches_llamaindex(filled, nodes, threshold, expected):
    query = [1.0, 0.3, 0.0, 0.0]
    _, reference = get_top_k_mmr_embeddings(query, [n.embedding for n in nodes], similarity_top_k=2,
                                            embedding_ids=_ids(nodes), mmr_threshold=threshold)
    assert reference == expected
    by_kwarg = filled.query(VectorStoreQuery(query_embedding=query, mode=Q.MMR, similarity_top_k=2),
                            mmr_threshold=threshold)
    by_field = filled.query(VectorStoreQuery(query_embedding=query, mode=Q.MMR, similarity_top_k=2,
                                             mmr_threshold=threshold))
    assert by_kwarg.ids == expected and by_field.ids == expected


def test_mmr_prefetch_and_filters(filled):
    query = [1.0, 0.3, 0.0, 0.0]
    result = filled.query(VectorStoreQuery(query_embedding=query, mode=Q.MMR, similarity_top_k=2,
                                           filters=_theme("sea")), mmr_threshold=0.1, mmr_prefetch_k=2)
    assert result.ids == ["n1", "n2"]  # the only two sea nodes, whatever their overlap


@pytest.mark.parametrize(("query", "message"), [
    (VectorStoreQuery(query_embedding=[1.0, 0, 0, 0], mode=Q.SVM), "does not support the 'svm'"),
    (VectorStoreQuery(query_embedding=[1.0, 0, 0, 0], mode=Q.SEMANTIC_HYBRID), "semantic_hybrid"),
    (VectorStoreQuery(mode=Q.TEXT_SEARCH, query_embedding=[1.0, 0, 0, 0]), "needs query_str"),
    (VectorStoreQuery(query_str="storm"), "needs query_embedding"),
    (VectorStoreQuery(mode=Q.HYBRID), "needs query_str, query_embedding"),
    (VectorStoreQuery(query_str="x", query_embedding=[1.0, 0, 0, 0], mode=Q.HYBRID, alpha=2.0), "alpha"),
])
def test_bad_queries_are_clear_errors(filled, query, message):
    with pytest.raises(ValueError, match=message):
        filled.query(query)


def test_top_k_zero_and_empty_store(vector_store):
    assert vector_store.query(VectorStoreQuery(query_embedding=[1.0, 0.0], similarity_top_k=3)).ids == []
    assert vector_store.get_nodes() == []


# -- async twins ------------------------------------------------------------------------------


async def test_async_twins(vector_store, nodes):
    assert await vector_store.async_add(nodes) == _ids(nodes)
    assert _ids(await vector_store.aget_nodes(["n2"])) == ["n2"]
    result = await vector_store.aquery(VectorStoreQuery(query_embedding=[1.0, 0.0, 0.0, 0.0], similarity_top_k=1))
    assert result.ids == ["n1"]
    await vector_store.adelete("doc-a")
    assert _ids(await vector_store.aget_nodes()) == ["n3", "n4", "n5"]
    await vector_store.adelete_nodes(["n3"])
    assert _ids(await vector_store.aget_nodes()) == ["n4", "n5"]
    await vector_store.adelete_nodes(filters=MetadataFilters(filters=[
        MetadataFilter(key="rating", value=3, operator=FilterOperator.GT)]))
    assert _ids(await vector_store.aget_nodes()) == ["n4"]
    await vector_store.aclear()
    assert await vector_store.aget_nodes() == []


# -- dimensions and bad nodes ------------------------------------------------------------------


def test_dimensions_come_from_the_first_node_or_embed_dim(tmp_path, clock, nodes):
    inferred = OpenKoiVectorStore(path=tmp_path / "a.db", clock=clock)
    inferred.add(nodes)
    assert inferred.client.embedder.dims == 4
    inferred.close()
    sized = OpenKoiVectorStore(path=tmp_path / "b.db", embed_dim=4, clock=clock)
    assert sized.client.embedder.dims == 4 and sized.client.embedder.name == "precomputed-4"
    sized.close()
    reopened = OpenKoiVectorStore(path=tmp_path / "a.db", clock=clock)  # the file remembers its size
    assert reopened.client.embedder.dims == 4
    with pytest.raises(EmbedderMismatchError, match="4-dimensional.*these embeddings have 3"):
        reopened.add([TextNode(id_="x", text="three dims", embedding=[1.0, 0.0, 0.0])])
    reopened.close()


def test_an_empty_file_takes_the_size_it_is_given(clock):
    with MemoryStore.open(":memory:", clock=clock) as store:  # the default embedder's dims, empty
        vs = OpenKoiVectorStore(store)
        vs.add([TextNode(id_="x", text="tiny", embedding=[1.0, 0.0])])
        assert store.embedder.dims == 2
        assert vs.get_nodes(["x"])[0].text == "tiny"


def test_a_store_with_memories_of_another_size_refuses_clearly(clock):
    with MemoryStore.open(":memory:", clock=clock) as store:
        store.add("an existing fact")
        vs = OpenKoiVectorStore(store)
        with pytest.raises(EmbedderMismatchError, match=f"holds 1 memories with {store.embedder.dims}-dimensional"):
            vs.add([TextNode(id_="x", text="tiny", embedding=[1.0, 0.0])])


def test_nodes_without_text_or_embedding_are_clear_errors(vector_store):
    vector_store.add([TextNode(id_="ok", text="fine", embedding=[1.0, 0.0])])
    with pytest.raises(ValueError, match="node 'blank' has no text"):
        vector_store.add([TextNode(id_="blank", text="  ", embedding=[1.0, 0.0])])
    with pytest.raises(ValueError, match="node 'bare' has no embedding"):
        vector_store.add([TextNode(id_="bare", text="no vector")])
    with pytest.raises(EmbedderMismatchError, match="2-dimensional.*these embeddings have 3"):
        vector_store.add([TextNode(id_="wide", text="three", embedding=[1.0, 0.0, 0.0])])
    with pytest.raises(ValueError, match="node 'wide' has a 3-dimensional embedding.*holds 2"):
        vector_store.add([TextNode(id_="ok2", text="fine", embedding=[0.0, 1.0]),
                          TextNode(id_="wide", text="three", embedding=[1.0, 0.0, 0.0])])
    assert _ids(vector_store.get_nodes()) == ["ok"]  # nothing half-written


def test_a_text_embedder_store_embeds_nodes_that_come_without_one(clock):
    with MemoryStore.open(":memory:", clock=clock) as store:
        vs = OpenKoiVectorStore(store)
        vs.add([TextNode(id_="p", text="pancakes with maple syrup"), TextNode(id_="s", text="ski lifts open")])
        result = vs.query(VectorStoreQuery(query_str="maple syrup pancakes", similarity_top_k=1))
        assert result.ids == ["p"]  # DEFAULT mode embedded the query text with the store's embedder


def test_ranking_option_uses_feedback(clock):
    with MemoryStore.open(":memory:", clock=clock) as store:
        plain = OpenKoiVectorStore(store)
        ranked = OpenKoiVectorStore(store, ranking=True)
        plain.add([TextNode(id_="near", text="near", embedding=[1.0, 0.1]),
                   TextNode(id_="liked", text="liked", embedding=[1.0, 0.5])])
        store.reinforce("default/liked")
        store.reinforce("default/liked")
        query = VectorStoreQuery(query_embedding=[1.0, 0.0], similarity_top_k=2)
        assert plain.query(query).ids == ["near", "liked"]
        assert ranked.query(query).ids == ["liked", "near"]


def test_two_store_objects_share_one_file(tmp_path, clock, nodes):
    path = tmp_path / "shared.db"
    writer = OpenKoiVectorStore(path=path, clock=clock)
    reader = OpenKoiVectorStore(path=path, clock=clock)
    writer.add(nodes)
    assert reader.query(VectorStoreQuery(query_embedding=[0.0, 0.0, 1.0, 0.0], similarity_top_k=1)).ids == ["n3"]
    writer.delete("doc-b")
    assert reader.query(VectorStoreQuery(query_embedding=[0.0, 0.0, 1.0, 0.0], similarity_top_k=1)).ids != ["n3"]
    writer.close()
    reader.close()


def test_store_or_path_not_both(clock, tmp_path):
    with MemoryStore.open(":memory:", clock=clock) as store:
        with pytest.raises(ValueError, match="either a MemoryStore or a path"):
            OpenKoiVectorStore(store, path=tmp_path / "x.db")
        with pytest.raises(TypeError, match="clock only apply when opening a path"):
            OpenKoiVectorStore(store, clock=clock)
    with pytest.raises(TypeError, match="must be a shared_core.MemoryStore"):
        OpenKoiVectorStore("not a store")  # type: ignore[arg-type]

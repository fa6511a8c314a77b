"""OpenKoiVectorStore beyond the standard suite: filters, scores, MMR, namespaces, files."""

from __future__ import annotations

from typing import ClassVar

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings

from langchain_openkoi import OpenKoiVectorStore
from shared_core import EmbedderMismatchError, FilterError, MemoryStore

DOCS = [
    Document(page_content="alpha release notes", metadata={"page": 1, "source": "a.pdf", "meta": {"lang": "en"}}),
    Document(page_content="beta release notes", metadata={"page": 2, "source": "a.pdf", "meta": {"lang": "de"}}),
    Document(page_content="gamma onboarding guide", metadata={"page": 3, "source": "b.pdf"}),
    Document(page_content="delta onboarding checklist", metadata={"page": 4, "source": "b.pdf", "draft": True}),
]


@pytest.fixture
def embedding():
    return DeterministicFakeEmbedding(size=8)


@pytest.fixture
def vs(embedding, clock):
    with OpenKoiVectorStore(embedding=embedding, path=":memory:", clock=clock) as store:
        store.add_documents(DOCS, ids=["1", "2", "3", "4"])
        yield store


def test_metadata_filters(vs):
    def ids(spec):
        return sorted(d.id for d in vs.similarity_search("release", k=10, filter=spec))

    assert ids({"source": "b.pdf"}) == ["3", "4"]
    assert ids({"page": {"$gte": 2, "$lt": 4}}) == ["2", "3"]
    assert ids({"page": {"$in": [1, 4]}}) == ["1", "4"]
    assert ids({"page": {"$nin": [1, 4]}}) == ["2", "3"]
    assert ids({"$or": [{"page": 1}, {"draft": True}]}) == ["1", "4"]
    assert ids({"$and": [{"source": "a.pdf"}, {"$not": {"page": 1}}]}) == ["2"]
    assert ids({"meta.lang": "de"}) == ["2"]
    assert ids({"draft": {"$exists": True}}) == ["4"]
    assert ids({"source": {"$ne": "a.pdf"}}) == ["3", "4"]
    with pytest.raises(FilterError, match="operator"):
        vs.similarity_search("x", filter={"page": {"$near": 1}})
    with pytest.raises(TypeError, match="function"):
        vs.similarity_search("x", filter=lambda doc: True)
    with pytest.raises(TypeError, match="unexpected option"):
        vs.similarity_search("x", fliter={"page": 1})


def test_scores_are_cosine_and_relevance_is_in_unit_range(vs, embedding):
    doc, score = vs.similarity_search_with_score("beta release notes", k=1)[0]
    assert doc.id == "2" and score == pytest.approx(1.0, abs=1e-5)
    scored = vs.similarity_search_with_score("gamma", k=4)
    assert [s for _, s in scored] == sorted((s for _, s in scored), reverse=True)
    assert all(-1.0 <= s <= 1.0 for _, s in scored)
    relevance = vs.similarity_search_with_relevance_scores("gamma", k=4)
    assert [r for _, r in relevance] == pytest.approx([max(0.0, s) for _, s in scored])
    best = relevance[0][1]
    assert [d.id for d, _ in vs.similarity_search_with_relevance_scores("gamma", k=4, score_threshold=best)] == [
        relevance[0][0].id
    ]
    by_vector = vs.similarity_search_by_vector(embedding.embed_query("gamma"), k=4)
    assert [d.id for d in by_vector] == [d.id for d, _ in scored]


def test_age_and_feedback_never_move_similarity_order(embedding, clock):
    with OpenKoiVectorStore(embedding=embedding, path=":memory:", clock=clock) as store:
        store.add_texts(["the exact query text"], ids=["old"])
        clock.advance(days=400)
        store.add_texts(["something else entirely"], ids=["new"])
        store.memory_store.demote("old", weight=5)
        assert [d.id for d in store.similarity_search("the exact query text", k=2)][0] == "old"


def test_mmr_prefers_diverse_documents(clock):
    with MemoryStore.open(":memory:", clock=clock) as core:
        vs = OpenKoiVectorStore(store=core)
        vs.add_texts(
            ["apple pie recipe with cinnamon", "apple pie recipe with cinnamon and sugar", "apple orchard tour in spring"],
            ids=["a1", "a2", "b1"],
        )
        assert [d.id for d in vs.similarity_search("apple pie recipe", k=2)] == ["a1", "a2"]
        diverse = vs.max_marginal_relevance_search("apple pie recipe", k=2, fetch_k=3, lambda_mult=0.3)
        assert [d.id for d in diverse] == ["a1", "b1"]
        vector = core.embed(["apple pie recipe"])[0].tolist()
        assert [d.id for d in vs.max_marginal_relevance_search_by_vector(vector, k=2, fetch_k=3, lambda_mult=0.3)] == [
            "a1", "b1"
        ]
        assert len(vs.max_marginal_relevance_search("apple", k=3, fetch_k=1)) == 3  # fetch_k below k is raised to k
        assert vs.embeddings is None  # the store's own (hashing) embedder is no LangChain model


def test_namespaces_and_kinds_keep_collections_apart(embedding):
    with OpenKoiVectorStore(embedding=embedding, path=":memory:", namespace="team-a") as a:
        b = OpenKoiVectorStore(embedding=embedding, store=a.memory_store, namespace="team-b")
        a.add_texts(["shared words"], ids=["x"])
        b.add_texts(["shared words"], ids=["y"])
        a.memory_store.add("shared words as a fact", namespace="team-a", kind="fact")
        assert [d.id for d in a.similarity_search("shared words", k=5)] == ["x"]
        assert [d.id for d in b.similarity_search("shared words", k=5)] == ["y"]
        assert b.get_by_ids(["x", "y"]) == [Document(id="y", page_content="shared words")]
        b.delete(["x"])  # another namespace's id: nothing happens
        assert a.get_by_ids(["x"])[0].id == "x"
        with pytest.raises(ValueError, match="already belongs to namespace"):
            b.add_texts(["steal"], ids=["x"])


def test_delete_by_filter_and_bad_arguments(vs):
    vs.delete(filter={"source": "a.pdf"})
    assert sorted(d.id for d in vs.similarity_search("notes", k=10)) == ["3", "4"]
    assert vs.delete([]) is True
    with pytest.raises(ValueError, match="ids"):
        vs.delete()
    vs.delete(filter={})
    assert vs.similarity_search("notes", k=10) == []
    with pytest.raises(ValueError, match="metadatas"):
        vs.add_texts(["a", "b"], metadatas=[{}])
    with pytest.raises(ValueError, match="ids"):
        vs.add_texts(["a", "b"], ids=["1"])
    with pytest.raises(ValueError, match="empty"):
        vs.add_texts(["   "])
    with pytest.raises(ValueError, match="k must"):
        vs.similarity_search("x", k=-1)
    assert vs.similarity_search("notes", k=10) == []  # the failed adds left nothing behind


def test_files_persist_and_refuse_another_embedder(tmp_path, embedding):
    path = tmp_path / "vectors.db"
    OpenKoiVectorStore.from_texts(["kept on disk"], embedding, metadatas=[{"n": 1}], ids=["d1"], path=path).close()
    with OpenKoiVectorStore(embedding=embedding, path=path) as again:
        assert again.get_by_ids(["d1"]) == [Document(id="d1", page_content="kept on disk", metadata={"n": 1})]
        assert again.embeddings is embedding
    with pytest.raises(EmbedderMismatchError):
        OpenKoiVectorStore(embedding=DeterministicFakeEmbedding(size=4), path=path)
    with MemoryStore.open(":memory:") as hashing_store:
        with pytest.raises(EmbedderMismatchError, match="leave the embedding out"):
            OpenKoiVectorStore(embedding=embedding, store=hashing_store)


def test_as_retriever_search_types(vs):
    mmr = vs.as_retriever(search_type="mmr", search_kwargs={"k": 2, "fetch_k": 4})
    assert len(mmr.invoke("release notes")) == 2
    filtered = vs.as_retriever(search_kwargs={"k": 4, "filter": {"source": "b.pdf"}})
    assert {d.id for d in filtered.invoke("onboarding")} == {"3", "4"}


async def test_async_twins(embedding):
    vs = await OpenKoiVectorStore.afrom_texts(["one", "two"], embedding, ids=["1", "2"], path=":memory:")
    try:
        assert [d.id for d, _ in await vs.asimilarity_search_with_score("one", k=1)] == ["1"]
        assert [d.id for d in await vs.asimilarity_search_by_vector(embedding.embed_query("two"), k=1)] == ["2"]
        assert len(await vs.amax_marginal_relevance_search("one", k=2)) == 2
        assert len(await vs.amax_marginal_relevance_search_by_vector(embedding.embed_query("one"), k=1)) == 1
        await vs.adelete(filter={})
        assert await vs.aget_by_ids(["1", "2"]) == []
    finally:
        vs.close()


def test_bad_collection_settings_are_refused_at_construction(embedding):
    with pytest.raises(ValueError, match="namespace"):
        OpenKoiVectorStore(embedding=embedding, path=":memory:", namespace="")
    with pytest.raises(ValueError, match="kind"):
        OpenKoiVectorStore(embedding=embedding, path=":memory:", kind="Not A Kind")


class CompassEmbeddings(Embeddings):
    """Four words, four fixed directions: north and south opposite, east orthogonal to both."""

    DIRECTIONS: ClassVar[dict[str, list[float]]] = {
        "north": [1.0, 0.0, 0.0], "south": [-1.0, 0.0, 0.0], "east": [0.0, 1.0, 0.0], "northeast": [0.6, 0.8, 0.0],
    }

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.embed_query(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.DIRECTIONS.get(text, [0.0, 0.0, 1.0])  # anything else (the dimension probe): up


def test_relevance_follows_langchain_cores_convention():
    """0 for an unrelated (orthogonal) or opposite document, 1 for an identical one, the cosine between."""
    with OpenKoiVectorStore(embedding=CompassEmbeddings(), path=":memory:") as vs:
        vs.add_texts(["north", "south", "east", "northeast"], ids=["n", "s", "e", "ne"])
        relevance = {d.id: r for d, r in vs.similarity_search_with_relevance_scores("north", k=4)}
        assert relevance.pop("s", 0.0) == 0.0  # the opposite one, when it comes back at all
        assert relevance == pytest.approx({"n": 1.0, "ne": 0.6, "e": 0.0}, abs=1e-6)
        kept = vs.similarity_search_with_relevance_scores("north", k=4, score_threshold=0.5)
        assert [d.id for d, _ in kept] == ["n", "ne"]  # a threshold keeps only what is related


def test_documents_ingested_with_the_cli_are_found_over_the_same_file(tmp_path):
    """`openkoi-memory ingest` chunks are documents of the vector store's default kind and namespace."""
    from click.testing import CliRunner

    from shared_core.cli import main

    db = str(tmp_path / "kb.db")
    (tmp_path / "runbook.md").write_text("# Runbook\n\nRestart the ingest workers with the red button.\n",
                                         encoding="utf-8")
    (tmp_path / "holidays.md").write_text("# Holidays\n\nThe office closes on the first of May.\n", encoding="utf-8")
    runner = CliRunner()
    assert runner.invoke(main, ["--db", db, "ingest", str(tmp_path / "runbook.md")]).exit_code == 0
    assert runner.invoke(main, ["--db", db, "ingest", "-n", "team", str(tmp_path / "holidays.md")]).exit_code == 0
    with OpenKoiVectorStore(path=db) as vs:  # by default: the file's embedder, namespace and kind
        found = vs.similarity_search("restart the ingest workers", k=1)[0]
        assert "red button" in found.page_content and found.metadata["file_name"] == "runbook.md"
    with OpenKoiVectorStore(path=db, namespace="team") as vs:  # ingested with -n: the one argument
        assert vs.similarity_search("when does the office close", k=5)[0].metadata["file_name"] == "holidays.md"

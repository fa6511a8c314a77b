"""End to end: documents -> nodes -> embeddings -> VectorStoreIndex on our store -> query engine."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from llama_helpers import HashEmbedding
from llama_index.core import Document, VectorStoreIndex, load_index_from_storage
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.ingestion import DocstoreStrategy, IngestionPipeline
from llama_index.core.llms import MockLLM
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.schema import MetadataMode
from llama_index.core.vector_stores.types import MetadataFilter, MetadataFilters, VectorStoreQuery

from llama_index_openkoi import (
    OpenKoiEmbedding,
    OpenKoiReader,
    OpenKoiVectorStore,
    openkoi_storage_context,
)
from shared_core import HashingEmbedder, MemoryStore

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))
from docfiles import make_docx, make_pdf  # noqa: E402

DOCS = [
    Document(text="The lighthouse on Skerry Point was automated in 1987. Before that a keeper lived there "
                  "with his family and logged every passing ship.", id_="lighthouse",
             metadata={"topic": "history", "year": 1987}),
    Document(text="Our sourdough starter needs feeding twice a day. Keep it at room temperature and discard "
                  "half before each feeding.", id_="sourdough", metadata={"topic": "baking", "year": 2021}),
    Document(text="The ferry to the island leaves at 08:15 and 17:40 on weekdays. On Sundays there is only "
                  "the afternoon crossing.", id_="ferry", metadata={"topic": "travel", "year": 2024}),
]


def _documents():
    return [d.model_copy(deep=True) for d in DOCS]


def test_pipeline_with_mock_embedding_and_mock_llm(tmp_path):
    """LlamaIndex's own mocks: every vector is the same, so this checks the plumbing."""
    vector_store = OpenKoiVectorStore.from_path(tmp_path / "rag.db")
    index = VectorStoreIndex.from_documents(
        _documents(), storage_context=openkoi_storage_context(vector_store.client),
        embed_model=MockEmbedding(embed_dim=8), transformations=[SentenceSplitter(chunk_size=64, chunk_overlap=0)],
    )
    engine = index.as_query_engine(llm=MockLLM(), similarity_top_k=3)
    response = engine.query("When does the ferry leave?")
    assert len(response.source_nodes) == 3
    assert {n.node.ref_doc_id for n in response.source_nodes} <= {"lighthouse", "sourdough", "ferry"}
    assert all(n.score == pytest.approx(1.0) for n in response.source_nodes)  # identical mock vectors
    assert response.source_nodes[0].node.get_content() in str(response)  # MockLLM echoes the prompt
    vector_store.close()


@pytest.fixture
def index(store):
    storage = openkoi_storage_context(store)
    return VectorStoreIndex.from_documents(_documents(), storage_context=storage, embed_model=HashEmbedding(),
                                           transformations=[SentenceSplitter(chunk_size=96, chunk_overlap=0)])


def test_the_right_chunk_answers(index):
    response = index.as_query_engine(llm=MockLLM(), similarity_top_k=1).query("when does the ferry leave on weekdays")
    (top,) = response.source_nodes
    assert top.node.ref_doc_id == "ferry" and "08:15" in top.node.get_content()
    assert top.node.metadata["topic"] == "travel"  # document metadata reached the chunk and came back
    assert "08:15" in str(response)


@pytest.mark.parametrize(("mode", "kwargs"), [
    ("default", {}),
    ("text_search", {}),
    ("sparse", {}),
    ("hybrid", {"alpha": 0.5}),
    ("hybrid", {}),
    ("mmr", {"vector_store_kwargs": {"mmr_threshold": 0.5}}),
])
def test_every_mode_through_a_query_engine(index, mode, kwargs):
    engine = index.as_query_engine(llm=MockLLM(), similarity_top_k=2, vector_store_query_mode=mode, **kwargs)
    response = engine.query("sourdough starter feeding")
    assert response.source_nodes[0].node.ref_doc_id == "sourdough"


def test_filters_through_a_query_engine(index):
    filters = MetadataFilters(filters=[MetadataFilter(key="topic", value="history")])
    response = index.as_query_engine(llm=MockLLM(), similarity_top_k=3, filters=filters).query("ferry times")
    assert response.source_nodes and {n.node.ref_doc_id for n in response.source_nodes} == {"lighthouse"}


async def test_async_query_engine(index):
    response = await index.as_query_engine(llm=MockLLM(), similarity_top_k=1).aquery("lighthouse keeper")
    assert response.source_nodes[0].node.ref_doc_id == "lighthouse"


def test_insert_and_delete_ref_doc_through_the_index(index):
    index.insert(Document(text="The bakery closes early on Wednesdays.", id_="bakery"))
    retriever = index.as_retriever(similarity_top_k=1)
    assert retriever.retrieve("when does the bakery close")[0].node.ref_doc_id == "bakery"
    index.delete_ref_doc("bakery")
    assert all(n.node.ref_doc_id != "bakery" for n in index.as_retriever(similarity_top_k=5).retrieve("bakery"))


def test_from_vector_store_reopens_an_existing_index(tmp_path):
    path = tmp_path / "kb.db"
    first = OpenKoiVectorStore.from_path(path)
    VectorStoreIndex.from_documents(_documents(), storage_context=openkoi_storage_context(first.client),
                                    embed_model=HashEmbedding())
    first.close()
    reopened = OpenKoiVectorStore.from_path(path)
    index = VectorStoreIndex.from_vector_store(reopened, embed_model=HashEmbedding())
    nodes = index.as_retriever(similarity_top_k=1).retrieve("sourdough starter")
    assert nodes[0].node.ref_doc_id == "sourdough"
    reopened.close()


def test_documents_ingested_into_the_file_are_found_by_from_vector_store(tmp_path):
    """Issue 21: documents ingested with store.documents (or the CLI) were invisible here (0 nodes)."""
    folder = tmp_path / "kb"
    folder.mkdir()
    (folder / "ferry.md").write_text("# Ferry\n\nThe ferry leaves at 08:15 and 17:40 on weekdays.\n")
    (folder / "starter.txt").write_text("Feed the sourdough starter twice a day.")
    path = tmp_path / "kb.db"
    with MemoryStore.open(path) as store:
        report = store.documents.ingest(folder)
        store.add("The ferry captain is called Ines", id="captain")  # a fact: not a document
    ferry = next(d for d in report.added if d.file_name == "ferry.md")
    vector_store = OpenKoiVectorStore.from_path(path)
    assert sorted(n.get_content() for n in vector_store.get_nodes()) == [
        "# Ferry\n\nThe ferry leaves at 08:15 and 17:40 on weekdays.", "Feed the sourdough starter twice a day."]
    index = VectorStoreIndex.from_vector_store(vector_store, embed_model=OpenKoiEmbedding(vector_store.client.embedder))
    (top,) = index.as_retriever(similarity_top_k=1).retrieve("When does the ferry leave?")
    assert "08:15" in top.node.get_content() and top.node.ref_doc_id == ferry.id
    assert "chunk_index" not in top.node.get_content(metadata_mode=MetadataMode.LLM)  # bookkeeping stays hidden
    words = index.as_retriever(vector_store_query_mode="text_search", similarity_top_k=5).retrieve("ferry")
    assert [n.node.ref_doc_id for n in words] == [ferry.id]  # the fact is not a document
    hybrid = index.as_query_engine(llm=MockLLM(), vector_store_query_mode="hybrid", alpha=0.5, similarity_top_k=1)
    assert "sourdough" in hybrid.query("sourdough starter").source_nodes[0].node.get_content()
    assert [n.node_id for n in vector_store.get_nodes([top.node.node_id])] == [top.node.node_id]
    assert len(vector_store.query(VectorStoreQuery(query_str="ferry", mode="text_search", doc_ids=[ferry.id])).ids) == 1
    vector_store.clear()  # writes touch only the store's own nodes: the knowledge base keeps its documents
    assert len(vector_store.get_nodes()) == 2
    only_nodes = OpenKoiVectorStore(vector_store.client, kinds="node")
    assert only_nodes.get_nodes() == []
    with_facts = OpenKoiVectorStore(vector_store.client, kinds=["node", "document", "fact"])
    assert "captain" in [n.node_id for n in with_facts.get_nodes()]
    vector_store.close()


@pytest.fixture
def handbook(tmp_path):
    """A folder of real files: a PDF, a Word file, Markdown and text."""
    root = tmp_path / "handbook"
    root.mkdir()
    make_pdf(root / "ferry.pdf", ["Island ferry timetable", "The ferry leaves at 08:15 and 17:40 on weekdays."],
             title="Ferry timetable")
    make_docx(root / "team.docx")
    (root / "baking.md").write_text("# Sourdough\n\nFeed the sourdough starter twice a day and keep it warm.\n")
    (root / "history.txt").write_text("The lighthouse on Skerry Point was automated in 1987.")
    return root


def test_rag_from_files_on_disk(handbook, tmp_path):
    reader = OpenKoiReader()
    documents = reader.load_data(handbook)
    assert len(documents) == 4 and reader.failed == []
    storage = openkoi_storage_context(path=tmp_path / "rag.db")
    index = VectorStoreIndex.from_documents(documents, storage_context=storage, embed_model=HashEmbedding(),
                                            transformations=[SentenceSplitter(chunk_size=64, chunk_overlap=0)])
    index.set_index_id("handbook")
    response = index.as_query_engine(llm=MockLLM(), similarity_top_k=1).query("When does the ferry leave?")
    (top,) = response.source_nodes
    assert top.node.ref_doc_id == str(handbook / "ferry.pdf")
    assert top.node.metadata["title"] == "Ferry timetable" and top.node.metadata["format"] == "pdf"
    assert "08:15" in top.node.get_content() and "08:15" in str(response)  # MockLLM echoes its prompt
    hybrid = index.as_query_engine(llm=MockLLM(), similarity_top_k=1, vector_store_query_mode="hybrid", alpha=0.3)
    assert hybrid.query("sourdough starter").source_nodes[0].node.metadata["file_name"] == "baking.md"
    storage.vector_store.close()

    again = openkoi_storage_context(path=tmp_path / "rag.db")  # another process, later
    loaded = load_index_from_storage(again, index_id="handbook", embed_model=HashEmbedding())
    hits = loaded.as_retriever(vector_store_query_mode="text_search").retrieve("lighthouse automated")
    assert hits[0].node.metadata["file_name"] == "history.txt"
    again.vector_store.close()


def test_rag_from_files_with_llama_index_mocks(handbook, tmp_path):
    documents = OpenKoiReader(split_sections=True).load_data(handbook)
    vector_store = OpenKoiVectorStore.from_path(tmp_path / "mock.db")
    index = VectorStoreIndex.from_documents(documents, storage_context=openkoi_storage_context(vector_store.client),
                                            embed_model=MockEmbedding(embed_dim=8))
    response = index.as_query_engine(llm=MockLLM(), similarity_top_k=2).query("anything")
    assert len(response.source_nodes) == 2
    assert {n.node.ref_doc_id for n in response.source_nodes} <= {d.id_ for d in documents}
    assert any(d.metadata.get("page") == 2 for d in documents)  # one document per PDF page
    vector_store.close()


def test_reader_ids_let_a_pipeline_skip_unchanged_files(handbook, tmp_path):
    storage = openkoi_storage_context(path=tmp_path / "pipeline.db")

    def run():
        pipeline = IngestionPipeline(
            transformations=[SentenceSplitter(chunk_size=64, chunk_overlap=0), HashEmbedding()],
            docstore=storage.docstore, vector_store=storage.vector_store,
            docstore_strategy=DocstoreStrategy.UPSERTS,
        )
        return pipeline.run(documents=OpenKoiReader().load_data(handbook))

    assert len(run()) >= 4
    assert run() == []  # the same files: nothing re-read into nodes, nothing re-embedded
    (handbook / "history.txt").write_text("The lighthouse on Skerry Point was automated in 1991.")
    changed = run()
    assert {n.ref_doc_id for n in changed} == {str(handbook / "history.txt")}
    nodes = storage.vector_store.get_nodes()
    assert [n.get_content() for n in nodes if n.ref_doc_id == str(handbook / "history.txt")] == [
        "The lighthouse on Skerry Point was automated in 1991."]
    storage.vector_store.close()
    with MemoryStore.open(tmp_path / "pipeline.db") as raw:  # nodes and dedup hashes in one file
        assert raw.count(kind="node") == len(nodes)


def test_embeddings_cross_the_boundary_both_ways(tmp_path):
    from llama_index.core.embeddings import MockEmbedding

    from llama_index_openkoi import LlamaIndexEmbedder, OpenKoiEmbedding
    from shared_core import MemoryStore

    local = OpenKoiEmbedding()  # the core's default: the static embedder new memories get
    with MemoryStore.open(tmp_path / "default.db") as default_store:
        assert local.model_name == default_store.embedder.name == "static/minilm-256c"
        assert local.dims == default_store.embedder.dims == 256
        assert local.get_text_embedding("hello") == pytest.approx(default_store.embed(["hello"])[0].tolist(), abs=1e-6)
    a, b, c = (local.get_text_embedding(t) for t in ("what is their diet?", "User is vegetarian", "deploy the servers"))
    assert sum(x * y for x, y in zip(a, b, strict=True)) > sum(x * y for x, y in zip(a, c, strict=True))
    assert OpenKoiEmbedding(HashingEmbedder()).dims == 384

    wrapped = LlamaIndexEmbedder(MockEmbedding(embed_dim=8))
    assert wrapped.dims == 8 and wrapped.name == "llama-index/MockEmbedding/unknown"  # its model_name
    with MemoryStore.open(tmp_path / "m.db", embedder=wrapped) as store:
        mid = store.add("stored with the LlamaIndex model")
        assert store.search("stored with the LlamaIndex model").ids == [mid]
    with pytest.raises(TypeError, match="BaseEmbedding"):
        LlamaIndexEmbedder(object())  # type: ignore[arg-type]

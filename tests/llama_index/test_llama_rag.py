"""End to end: documents -> nodes -> embeddings -> VectorStoreIndex on our store -> query engine."""

from __future__ import annotations

import pytest
from llama_helpers import HashEmbedding
from llama_index.core import Document, VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import MockLLM
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.vector_stores.types import MetadataFilter, MetadataFilters

from llama_index_openkoi import OpenKoiVectorStore, openkoi_storage_context

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

"""LangChain Embeddings as the core's embedder."""

from __future__ import annotations

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from langchain_openkoi import LangChainEmbedder, OpenKoiVectorStore
from langchain_openkoi.embeddings import as_embedder
from shared_core import EmbedderMismatchError, HashingEmbedder


class NamedModel(DeterministicFakeEmbedding):
    model: str = "tiny-model-v2"


def test_name_and_dims(counting_embeddings):
    wrapped = LangChainEmbedder(counting_embeddings)
    assert (wrapped.name, wrapped.dims, counting_embeddings.queries) == ("langchain/CountingEmbeddings", 8, 1)
    given = LangChainEmbedder(counting_embeddings, dims=8, name="my-model")
    assert (given.name, counting_embeddings.queries) == ("my-model", 1)  # no probe when dims are given
    assert LangChainEmbedder(NamedModel(size=4)).name == "langchain/NamedModel/tiny-model-v2"
    assert len(wrapped.embed(["a", "b"])) == 2 and counting_embeddings.documents == 2


def test_queries_use_embed_query(counting_embeddings):
    with OpenKoiVectorStore(embedding=counting_embeddings, path=":memory:") as vs:
        vs.add_texts(["one", "two"])
        before = counting_embeddings.queries
        vs.similarity_search("one", k=1)
        assert counting_embeddings.queries == before + 1


def test_as_embedder_and_bad_input():
    hashing = HashingEmbedder()
    assert as_embedder(hashing) is hashing and as_embedder(None) is None
    with pytest.raises(ValueError, match="dimensions"):
        as_embedder(hashing, dims=8)
    with pytest.raises(TypeError, match="Embeddings"):
        as_embedder(object())
    with pytest.raises(TypeError, match="ensure_embeddings"):
        LangChainEmbedder(lambda texts: texts)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="dims"):
        LangChainEmbedder(DeterministicFakeEmbedding(size=4), dims=0)


def test_the_file_remembers_the_model(tmp_path):
    path = tmp_path / "m.db"
    OpenKoiVectorStore(embedding=DeterministicFakeEmbedding(size=4), path=path).close()
    with pytest.raises(EmbedderMismatchError, match="pass it in code"):
        OpenKoiVectorStore(path=path)
    with pytest.raises(EmbedderMismatchError):
        OpenKoiVectorStore(embedding=NamedModel(size=4), path=path)

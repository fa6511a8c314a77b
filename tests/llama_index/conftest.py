"""Fixtures for the LlamaIndex adapter tests."""

from __future__ import annotations

import pytest

pytest.importorskip("llama_index.core")

from llama_helpers import HashEmbedding, sample_nodes  # noqa: E402
from llama_index.core.schema import TextNode  # noqa: E402

from llama_index_openkoi import OpenKoiVectorStore  # noqa: E402


@pytest.fixture
def nodes() -> list[TextNode]:
    return sample_nodes()


@pytest.fixture
def vector_store(clock):
    vs = OpenKoiVectorStore(path=":memory:", clock=clock, config={})
    yield vs
    vs.close()


@pytest.fixture
def filled(vector_store, nodes):
    vector_store.add(nodes)
    return vector_store


@pytest.fixture
def hash_embedding() -> HashEmbedding:
    return HashEmbedding()

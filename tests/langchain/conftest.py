"""Fixtures for the LangChain adapter tests."""

from __future__ import annotations

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings


class CountingEmbeddings(Embeddings):
    """DeterministicFakeEmbedding that counts how often it is asked to embed."""

    def __init__(self, size: int = 8) -> None:
        self.inner = DeterministicFakeEmbedding(size=size)
        self.documents = 0
        self.queries = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.documents += len(texts)
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        self.queries += 1
        return self.inner.embed_query(text)


@pytest.fixture
def counting_embeddings() -> CountingEmbeddings:
    return CountingEmbeddings(size=8)

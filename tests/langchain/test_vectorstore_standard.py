"""langchain-tests' standard VectorStore suite (sync and async), unmodified."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from langchain_tests.integration_tests.vectorstores import VectorStoreIntegrationTests

from langchain_openkoi import OpenKoiVectorStore


class TestOpenKoiVectorStoreStandard(VectorStoreIntegrationTests):
    @pytest.fixture()
    def vectorstore(self) -> Iterator[OpenKoiVectorStore]:  # type: ignore[override]
        store = OpenKoiVectorStore(embedding=self.get_embeddings(), path=":memory:")
        try:
            yield store
        finally:
            store.close()

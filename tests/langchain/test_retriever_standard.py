"""langchain-tests' standard retriever suite, unmodified."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_tests.integration_tests import RetrieversIntegrationTests

from langchain_openkoi import OpenKoiRetriever
from shared_core import MemoryStore

_FACTS = [
    "The production database runs PostgreSQL 16 on a dedicated host",
    "Database backups run every night at 02:00 UTC",
    "The staging database is reset every Monday",
    "The analytics database is a read replica of production",
    "Alice prefers short status updates in the morning",
]


@pytest.fixture(scope="module")
def memory_store():
    with MemoryStore.open(":memory:") as store:
        store.add_many([{"text": text, "namespace": "ops"} for text in _FACTS])
        yield store


class TestOpenKoiRetrieverStandard(RetrieversIntegrationTests):
    @pytest.fixture(autouse=True)
    def _store(self, memory_store) -> None:
        type(self)._memory_store = memory_store

    @property
    def retriever_constructor(self) -> type[OpenKoiRetriever]:
        return OpenKoiRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"store": self._memory_store, "namespace": "ops"}

    @property
    def retriever_query_example(self) -> str:
        return "which database runs where"

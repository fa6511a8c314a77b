"""The public surface of langchain_openkoi, pinned (langchain-postgres' test_imports pattern)."""

import langchain_openkoi

EXPECTED_ALL = [
    "LangChainEmbedder",
    "OpenKoiAsyncSaver",
    "OpenKoiChatMessageHistory",
    "OpenKoiDocumentLoader",
    "OpenKoiMemory",
    "OpenKoiMemoryMiddleware",
    "OpenKoiRetriever",
    "OpenKoiSaver",
    "OpenKoiStore",
    "OpenKoiVectorStore",
    "create_memory_tools",
]


def test_all_imports() -> None:
    assert sorted(langchain_openkoi.__all__) == sorted(EXPECTED_ALL)
    for name in EXPECTED_ALL:
        assert getattr(langchain_openkoi, name) is not None

"""The package's public surface is deliberate: this list changes only on purpose."""

import llama_index_openkoi

EXPECTED = [
    "OpenKoiVectorStore",
    "OpenKoiKVStore",
    "OpenKoiDocumentStore",
    "OpenKoiIndexStore",
    "OpenKoiRetriever",
    "OpenKoiChatStore",
    "OpenKoiDBChatStore",
    "OpenKoiMemoryBlock",
    "OpenKoiReader",
    "OpenKoiEmbedding",
    "LlamaIndexEmbedder",
    "openkoi_storage_context",
    "to_openkoi_filter",
]


def test_all_is_pinned():
    assert llama_index_openkoi.__all__ == EXPECTED


def test_every_name_is_importable():
    for name in EXPECTED:
        assert getattr(llama_index_openkoi, name) is not None

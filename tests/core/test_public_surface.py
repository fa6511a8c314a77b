"""shared_core's public surface, pinned (as the adapters' lists are): a name added or removed here
is a decision, not an accident of an import."""

import shared_core

EXPECTED_ALL = [
    "And", "AddResult", "BusyError", "Clock", "Condition", "Config", "ConfigError", "ContextManager",
    "ContextPolicy", "DEFAULT_NAMESPACE", "DocumentError", "DriverError", "Embedder", "EmbedderMismatchError",
    "EmbeddingError", "EraseReport", "FilterError", "HashingEmbedder", "Hit", "InputError", "ManualClock",
    "Memory", "MemoryStore", "MemoryTools", "NewMemory", "Not", "NotFoundError", "OpenKoiError", "Or",
    "SchemaError", "ScoreParts", "SearchResults", "SentenceTransformerEmbedder", "StorageError",
    "StoreClosedError", "StoreStats", "SystemClock", "TooLargeError", "ToolSpec", "__version__",
]


def test_all_is_the_curated_list() -> None:
    assert sorted(shared_core.__all__) == sorted(EXPECTED_ALL)
    assert len(set(shared_core.__all__)) == len(shared_core.__all__)


def test_every_public_name_resolves() -> None:
    for name in EXPECTED_ALL:
        assert getattr(shared_core, name) is not None


def test_every_error_is_an_openkoi_error() -> None:
    errors = [getattr(shared_core, n) for n in EXPECTED_ALL if n.endswith("Error") and n != "OpenKoiError"]
    assert errors and all(issubclass(e, shared_core.OpenKoiError) for e in errors)

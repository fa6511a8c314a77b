"""Shared fixtures: stores on :memory: or tmp_path, a manual clock, a deterministic fake embedder."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from shared_core import ManualClock, MemoryStore


class FakeEmbedder:
    """Deterministic, tiny and exact: each distinct word gets a fixed random direction.

    Texts with the same words get the same vector; one shared word out of many gives a
    small similarity. Good for testing plumbing without depending on the hashing embedder.
    """

    def __init__(self, dims: int = 16, name: str = "fake-embedder") -> None:
        self.dims = dims
        self.name = f"{name}-{dims}"

    def _word(self, word: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.sha256(word.encode()).digest()[:8], "little")
        return np.random.default_rng(seed).standard_normal(self.dims)

    def embed(self, texts):
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        for i, text in enumerate(texts):
            words = text.lower().split() or [text]
            for word in words:
                out[i] += self._word(word)
            out[i] /= np.linalg.norm(out[i]) or 1.0
        return out


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock("2026-01-01T00:00:00Z")


@pytest.fixture
def store(clock):
    with MemoryStore.open(":memory:", clock=clock, config={}) as s:
        yield s


@pytest.fixture
def file_store(tmp_path, clock):
    with MemoryStore.open(tmp_path / "openkoi.db", clock=clock, config={}) as s:  # seed 000 layout
        yield s


@pytest.fixture
def fake_embedder() -> FakeEmbedder:
    return FakeEmbedder()


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory, monkeypatch):
    """Never read the developer's ~/.openkoi/config.toml or write to their data dir."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("OPENKOI_DATA", str(home / "data"))
    monkeypatch.delenv("OPENKOI_CONFIG", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))

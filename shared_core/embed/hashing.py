"""The zero-dependency default embedder: token hashing + L2 normalisation (seed 001).

Each feature of a text (words, word pairs, character trigrams inside words) is hashed;
the hash seeds a pseudo-random +/-1 direction in ``dims`` dimensions, and the text's
vector is the weighted sum of its features' directions, L2-normalised. This is the
hashing trick in its dense form (a random projection of the bag of features, like
SimHash): cosine similarity approximates feature overlap, it needs no vocabulary, no
model file and no network, and, unlike one-bucket-per-token hashing, the signs of its
dimensions survive binary quantisation, which the fast vector scan uses.

It knows spelling, not meaning: "car" and "automobile" are unrelated to it. Its
``profile`` tells fusion to trust only strong similarities (see docs/search.md).
"""

from __future__ import annotations

import functools
import hashlib
import math
import re
from collections import Counter
from collections.abc import Sequence

import numpy as np

from .base import EmbedderProfile

__all__ = ["HashingEmbedder"]

_WORD = re.compile(r"\w+", re.UNICODE)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_BLOCK = 4096  # features projected at a time (bounds the temporary sign matrix)


class HashingEmbedder:
    """Deterministic 384-d hashing embedder; the same text gives the same vector everywhere."""

    profile = EmbedderProfile(similarity_floor=0.2, vector_weight=0.3, kb_threshold=0.35)

    def __init__(
        self,
        dims: int = 384,
        *,
        word_weight: float = 1.0,
        bigram_weight: float = 0.5,
        trigram_weight: float = 1.0,
    ) -> None:
        if dims < 8 or dims % 8:
            raise ValueError(f"dims must be a positive multiple of 8, got {dims}")
        self.dims = dims
        self.word_weight = word_weight
        self.bigram_weight = bigram_weight
        self.trigram_weight = trigram_weight
        defaults = (word_weight, bigram_weight, trigram_weight) == (1.0, 0.5, 1.0)
        suffix = "" if defaults else f"-w{word_weight:g}-b{bigram_weight:g}-t{trigram_weight:g}"
        self.name = f"openkoi-hashing-v1-{dims}{suffix}"
        salts = np.frombuffer(
            hashlib.blake2b(f"openkoi-hashing-salts-{dims}".encode(), digest_size=64).digest() * (dims // 8),
            dtype=np.uint64,
        )[:dims]
        self._salts = salts ^ np.arange(dims, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)

    def __repr__(self) -> str:
        return f"HashingEmbedder(dims={self.dims})"

    def features(self, text: str) -> Counter[str]:
        """The weighted features of one text (exposed for tests and curiosity)."""
        words = [w.casefold() for w in _WORD.findall(text)]
        feats: Counter[str] = Counter()
        for word in words:
            feats["w:" + word] += 1
        for a, b in zip(words, words[1:], strict=False):
            feats["b:" + a + " " + b] += 1
        for word in words:
            padded = f"<{word}>"
            for i in range(len(padded) - 2):
                feats["t:" + padded[i : i + 3]] += 1
        if not feats and text.strip():  # punctuation or symbols only: hash the text itself
            feats["s:" + text.strip()] += 1
        return feats

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        weight_of = {"w": self.word_weight, "b": self.bigram_weight, "t": self.trigram_weight, "s": 1.0}
        rows: list[int] = []
        keys: list[int] = []
        weights: list[float] = []
        for row, text in enumerate(texts):
            for feat, count in self.features(text).items():
                rows.append(row)
                keys.append(_hash64(feat))
                weight = weight_of[feat[0]]
                weights.append(weight * (1.0 + math.log(count)) if count > 1 else weight)
        if not keys:
            return out
        unique, inverse = np.unique(np.array(keys, dtype=np.uint64), return_inverse=True)
        rows_arr = np.asarray(rows)
        weights_arr = np.asarray(weights, dtype=np.float32)
        for start in range(0, len(unique), _BLOCK):
            block = unique[start : start + _BLOCK]
            mask = (inverse >= start) & (inverse < start + len(block))
            # each (text, feature) pair occurs once, so plain assignment builds the weight matrix
            weight_matrix = np.zeros((len(texts), len(block)), dtype=np.float32)
            weight_matrix[rows_arr[mask], inverse[mask] - start] = weights_arr[mask]
            out += weight_matrix @ self._signs(block)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out

    def _signs(self, keys: np.ndarray) -> np.ndarray:
        x = keys[:, None] ^ self._salts[None, :]
        x ^= x >> np.uint64(30)
        x *= _MIX1
        x ^= x >> np.uint64(27)
        x *= _MIX2
        x ^= x >> np.uint64(31)
        return np.where(x >> np.uint64(63), np.float32(-1.0), np.float32(1.0))


@functools.lru_cache(maxsize=1 << 17)  # words and trigrams repeat across texts
def _hash64(feature: str) -> int:
    return int.from_bytes(hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest(), "little")

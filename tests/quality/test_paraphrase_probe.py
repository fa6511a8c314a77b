"""The paraphrase probe (bench/quality/paraphrases.py): questions that share no word with the memory."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "quality"))

import paraphrases  # noqa: E402

from shared_core.embed import HashingEmbedder, StaticEmbedder  # noqa: E402


@pytest.fixture(scope="module")
def static():
    return {r.method: r for r in paraphrases.run(StaticEmbedder())}


def test_the_probe_has_fifty_distinct_pairs():
    assert len(paraphrases.PAIRS) == 50
    assert len({m for m, _ in paraphrases.PAIRS}) == len({q for _, q in paraphrases.PAIRS}) == 50


def test_the_default_hybrid_finds_paraphrases_that_bm25_cannot(static):
    bm25, hybrid = static["bm25"], static["hybrid"]
    assert bm25.hits5 <= 0.2  # the questions really are reworded
    assert hybrid.hits1 >= bm25.hits1 + 0.25 and hybrid.hits5 >= 0.65 and hybrid.mrr >= 0.45


def test_the_static_embedder_beats_the_hashing_one_on_meaning(static):
    hashing = {r.method: r for r in paraphrases.run(HashingEmbedder(), {"hybrid": "keyword_first"})}
    assert static["hybrid"].mrr >= hashing["hybrid"].mrr + 0.3

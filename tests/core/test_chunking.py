"""Chunking: seed 003's 1000/200 RecursiveCharacterTextSplitter, offsets, locations, token mode."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared_core.config import Config, KnowledgeBaseConfig
from shared_core.documents import Chunker, LoadedDocument, Section
from shared_core.errors import ConfigError
from shared_core.tokens import estimate_tokens, tokenizer

PROSE = " ".join(
    f"Sentence number {i} talks about invoices, deploys and the {['north', 'south', 'east'][i % 3]} office."
    for i in range(200)
)


def paragraphs(n: int = 30) -> str:
    return "\n\n".join(f"Paragraph {i}. " + "word " * (20 + (i * 7) % 60) for i in range(n))


def test_defaults_are_seed_003s_1000_and_200():
    cfg = Config().knowledge_base
    assert (cfg.chunk_size, cfg.chunk_overlap, cfg.batch_size, cfg.default_limit) == (1000, 200, 1000, 5)
    chunker = Chunker.from_config(cfg)
    assert chunker.signature == "characters:1000/200"


def test_chunks_are_exact_slices_within_size_with_bounded_overlap():
    chunker = Chunker()
    pieces = chunker.split(PROSE)
    assert len(pieces) > 5
    for text, start, end in pieces:
        assert PROSE[start:end] == text and 0 < len(text) <= 1000
    for (_, s1, e1), (_, s2, e2) in zip(pieces, pieces[1:], strict=False):
        assert s1 < s2 and e1 < e2
        overlap = max(0, e1 - s2)
        assert 0 < overlap <= 200  # prose overlaps; never by more than the setting
    assert pieces[0][1] == 0 and pieces[-1][2] == len(PROSE)


def test_paragraph_boundaries_are_preferred():
    text = paragraphs()
    pieces = Chunker(500, 0).split(text)  # every paragraph fits: none is cut
    assert len(pieces) > 10
    for chunk_text, _, _ in pieces:
        assert chunk_text.startswith("Paragraph") and chunk_text.endswith("word")


def test_offsets_survive_repeated_text():
    text = "\n\n".join(["the same paragraph again and again"] * 40)
    pieces = Chunker(100, 30).split(text)
    starts = [start for _, start, _ in pieces]
    assert starts == sorted(set(starts))
    assert all(text[s:e] == t for t, s, e in pieces)
    assert pieces[-1][2] == len(text)


@settings(max_examples=60, deadline=None)
@given(
    text=st.text(alphabet=st.sampled_from(list("ab c\n.")), min_size=0, max_size=600),
    size=st.integers(min_value=5, max_value=120),
    overlap_share=st.floats(min_value=0.0, max_value=0.9),
)
def test_split_invariants(text, size, overlap_share):
    overlap = min(size - 1, int(size * overlap_share))
    pieces = Chunker(size, overlap).split(text)
    previous = -1
    for piece, start, end in pieces:
        assert text[start:end] == piece and piece.strip() == piece and piece
        assert len(piece) <= size
        assert start > previous
        previous = start
    covered = "".join(text[s:e] for _, s, e in pieces)
    assert set(covered) >= set(text) - {" ", "\n"}


def test_chunk_metadata_has_index_offsets_and_location():
    pages = ["alpha " * 70, "beta " * 80, "gamma " * 70]  # pages 1 and 2 fit one chunk, page 3 the next
    text, sections = "", []
    for number, page in enumerate(pages, 1):
        if text:
            text += "\n\n"
        start = len(text)
        text += page.strip()
        sections.append(Section(start, len(text), {"page": number}))
    doc = LoadedDocument(Path("x.pdf"), "x.pdf", "application/pdf", 1, "pdf", text, {}, sections)
    chunks = Chunker(1000, 200).chunk(doc)
    assert [c.index for c in chunks] == list(range(len(chunks)))
    first = chunks[0]
    assert first.metadata == {"chunk_index": 0, "start": 0, "end": first.end, "page": 1, "page_end": 2}
    last = chunks[-1]
    assert last.metadata["page"] == 3 and "page_end" not in last.metadata
    assert all(doc.text[c.start:c.end] == c.text for c in chunks)


def test_custom_separators_and_settings_validation():
    assert Chunker(50, 0, separators=["|"]).split("aaa|bbb|ccc") == [("aaa|bbb|ccc", 0, 11)]
    with pytest.raises(ValueError, match="chunk_overlap"):
        Chunker(100, 100)
    with pytest.raises(ValueError, match="unit"):
        Chunker(unit="words")
    with pytest.raises(ConfigError, match="chunk_overlap"):
        KnowledgeBaseConfig(chunk_size=100, chunk_overlap=150)
    with pytest.raises(ConfigError, match="chunk_unit"):
        Config.load(overrides={"knowledge_base": {"chunk_unit": "pages"}})


def test_token_chunks_with_a_tiktoken_encoding():
    tiktoken = pytest.importorskip("tiktoken")
    # A byte-level encoding built in memory: tiktoken's real machinery, no download.
    encoding = tiktoken.Encoding("bytes", pat_str=r"\S+|\s+", mergeable_ranks={bytes([i]): i for i in range(256)},
                                 special_tokens={})

    def count(text: str) -> int:
        return len(encoding.encode(text))

    chunker = Chunker(120, 20, unit="tokens", tokenizer=count)
    pieces = chunker.split(PROSE)
    assert all(count(text) <= 120 for text, _, _ in pieces) and len(pieces) > 20
    assert chunker.signature == "count:120/20"


def test_token_mode_falls_back_to_the_estimate_without_tiktoken(monkeypatch):
    tokenizer.cache_clear()
    monkeypatch.setitem(sys.modules, "tiktoken", None)
    try:
        chunker = Chunker(100, 10, unit="tokens")
        assert chunker.tokenizer_name == "estimate" and chunker.signature == "estimate:100/10"
        pieces = chunker.split(PROSE)
        assert all(estimate_tokens(text) <= 100 for text, _, _ in pieces)
        assert max(len(text) for text, _, _ in pieces) > 300  # about 4 characters a token
    finally:
        tokenizer.cache_clear()


def test_token_mode_never_downloads(monkeypatch, tmp_path):
    pytest.importorskip("tiktoken")
    tokenizer.cache_clear()
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))  # an empty cache: the encoding is not on disk
    monkeypatch.delenv("OPENKOI_TIKTOKEN", raising=False)
    try:
        name, count = tokenizer("cl100k_base")
        assert name == "estimate" and count("abcdefgh") == 2
    finally:
        tokenizer.cache_clear()


def test_estimate_counts_cjk_one_each():
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd") == 1 and estimate_tokens("abcde") == 2
    assert estimate_tokens("日本語") == 3

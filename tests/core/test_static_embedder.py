"""The static embedder: the default for new memories, what it finds, and what it leaves to other rules."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import numpy as np
import pytest

from shared_core import HashingEmbedder, MemoryStore
from shared_core.embed import StaticEmbedder, embedder_from_name, profile_of, static
from shared_core.embed.static import (
    COMMON_DIRECTIONS,
    DEFAULT_DIRECTIONS,
    DEFAULT_TABLE,
    StaticTable,
    common_directions,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "quality"))
from paraphrases import PAIRS  # noqa: E402

FACTS = ["User is vegetarian", "User drives a Tesla Model 3", "User has a daughter named Mia"]
MEANINGS = [("diet", FACTS[0]), ("vehicle", FACTS[1]), ("children", FACTS[2])]
# the table's digest: a rebuilt table gives other vectors, so it needs another embedder name
# (files record the name; the old name would then mean two different vector spaces)
TABLE_SHA256 = "e1ff5adda60f045096563f9afea87d8e7aaa7b0d04fdbb0efb48642a232c6c83"


@pytest.mark.parametrize(("query", "fact"), MEANINGS)
def test_the_default_store_finds_a_memory_by_its_meaning(store, query, fact):
    """No word is shared: the keyword side finds nothing, the vector side finds the memory."""
    for text in FACTS:
        store.add(text)
    hits = store.search(query, limit=3)
    assert hits and hits[0].text == fact
    assert hits[0].parts.bm25 == 0.0


def test_a_new_memory_is_built_with_the_static_embedder(tmp_path):
    with MemoryStore.open(tmp_path / "new.db") as store:
        assert isinstance(store.embedder, StaticEmbedder) and store.embedder.name == "static/minilm-256c"
        store.add("User is vegetarian")
    with MemoryStore.open(tmp_path / "new.db") as store:
        assert store.embedder.name == "static/minilm-256c" and store.embedder.centred
        assert store.search("diet")[0].text == "User is vegetarian"


def test_a_hashing_memory_keeps_its_embedder_and_reembed_moves_it(tmp_path):
    path = tmp_path / "old.db"
    with MemoryStore.open(path, embedder=HashingEmbedder()) as store:
        for text in FACTS:
            store.add(text)
        before = store.embed(["User is vegetarian"])[0]
    with MemoryStore.open(path) as store:  # no embedder named: the recorded one, nothing re-embedded
        assert isinstance(store.embedder, HashingEmbedder)
        assert np.allclose(store.embed(["User is vegetarian"])[0], before)
        assert store.search("vegetarian")[0].text == FACTS[0]
        assert store.reembed(StaticEmbedder()) == len(FACTS)
    with MemoryStore.open(path) as store:
        assert store.embedder.name == "static/minilm-256c" and store.embedder.dims == 256
        assert [store.search(query)[0].text for query, _ in MEANINGS] == [fact for _, fact in MEANINGS]


def test_names_that_build_it():
    for name in ("static", "default", "static/minilm-256c"):
        embedder = embedder_from_name(name)
        assert isinstance(embedder, StaticEmbedder) and embedder.centred and embedder.name == "static/minilm-256c"
    old = embedder_from_name("static/minilm-256")
    assert isinstance(old, StaticEmbedder) and not old.centred and old.name == "static/minilm-256"
    assert isinstance(embedder_from_name("hashing"), HashingEmbedder)


def _mean_of_rows(text: str) -> np.ndarray:
    """The vectors ``static/minilm-256`` always gave: the mean of the text's token rows, normalised."""
    table = StaticEmbedder().table
    ids = table.tokenizer.ids(text)
    vector = (table.vectors[ids].astype(np.float64) * table.scales[ids, None]).sum(axis=0)
    return vector / np.linalg.norm(vector)


def test_a_memory_made_before_centring_keeps_its_vectors_and_reembed_moves_it(tmp_path):
    """Files record their embedder's name: ``static/minilm-256`` still means the uncentred vectors."""
    path = tmp_path / "before.db"
    with MemoryStore.open(path, embedder=StaticEmbedder(centred=False)) as store:  # what the old default wrote
        for text in FACTS:
            store.add(text)
    with MemoryStore.open(path) as store:
        assert store.embedder.name == "static/minilm-256" and not store.embedder.centred
        assert np.allclose(store.embed(FACTS), [_mean_of_rows(text) for text in FACTS], atol=1e-5)
        assert store.search("diet")[0].text == FACTS[0]
        assert store.reembed(StaticEmbedder()) == len(FACTS)
    with MemoryStore.open(path) as store:
        assert store.embedder.name == "static/minilm-256c"
        assert [store.search(query)[0].text for query, _ in MEANINGS] == [fact for _, fact in MEANINGS]


def test_the_common_directions_are_removed_and_come_from_the_table_alone():
    embedder = StaticEmbedder()
    directions = common_directions(embedder.table)
    assert directions.shape == (256, COMMON_DIRECTIONS)
    assert np.allclose(directions.T @ directions, np.eye(COMMON_DIRECTIONS), atol=1e-5)
    assert np.array_equal(directions, common_directions(StaticTable.load(DEFAULT_TABLE)))  # reproducible
    texts = [text for pair in PAIRS for text in pair]  # the paraphrase probe's facts and questions
    centred, raw = embedder.embed(texts), StaticEmbedder(centred=False).embed(texts)
    assert np.abs(centred @ directions).max() < 1e-5
    # what it is for: texts lean one way less (mean 0.39 against 0.49), so sign bits tell more apart
    assert np.linalg.norm(centred.mean(axis=0)) < np.linalg.norm(raw.mean(axis=0)) - 0.05
    with pytest.raises(ValueError, match="between 1 and 255"):
        common_directions(embedder.table, 0)


def test_the_shipped_directions_are_the_tables_own_and_no_process_computes_them(monkeypatch, tmp_path):
    shipped = np.load(DEFAULT_DIRECTIONS, allow_pickle=False)
    computed = common_directions(StaticTable.load(DEFAULT_TABLE))
    assert shipped.dtype == np.float32 and shipped.shape == computed.shape
    # what the embedder removes, the projector onto them, is the same to float32 rounding (an
    # eigenvector's sign may differ from one BLAS to another)
    assert np.allclose(shipped @ shipped.T, computed @ computed.T, atol=1e-6)

    def computing(*args: object) -> np.ndarray:
        raise AssertionError("directions computed")

    monkeypatch.setattr(static, "_directions", {})
    monkeypatch.setattr(static, "common_directions", computing)
    vectors = StaticEmbedder().embed(["User is vegetarian", "User drives a Tesla Model 3"])
    assert np.abs(vectors @ shipped).max() < 1e-5
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    other = tmp_path / "other.npz"  # another table's directions are computed from it
    other.write_bytes(DEFAULT_TABLE.read_bytes())
    with pytest.raises(AssertionError, match="directions computed"):
        StaticEmbedder(path=other).embed(["User is vegetarian"])


def test_vectors_are_unit_length_and_the_same_alone_or_in_a_batch():
    embedder = StaticEmbedder()
    texts = ["The production server runs on Fly.io", "Grüße aus Köln", "東京タワー", "!!!", "🙂"]
    batch = embedder.embed(texts)
    assert batch.shape == (5, 256) and batch.dtype == np.float32
    assert np.allclose(np.linalg.norm(batch, axis=1), 1.0, atol=1e-5)
    assert np.allclose(np.vstack([embedder.embed([t]) for t in texts]), batch, atol=1e-6)


def test_blank_text_has_no_vector_and_unknown_symbols_get_the_unknown_row():
    embedder = StaticEmbedder()
    blank, emoji, other = embedder.embed(["", "🙂", "🦜🙂"])
    assert not blank.any()
    assert np.allclose(emoji, other) and np.isclose(np.linalg.norm(emoji), 1.0)
    assert embedder.embed(["lone \ud800 surrogate"]).any()  # dropped like any control character


def test_it_cannot_tell_numbers_or_negations_apart_so_it_never_merges_alone(store):
    """Cosine ~1 for a changed address or a "not": the write rule keeps the new text (as a version)."""
    old, new = "The staging server IP is 10.0.0.1", "The staging server IP is 10.0.0.2"
    a, b = StaticEmbedder().embed([old, new])
    assert float(a @ b) > 0.99
    first = store.add(old)
    second = store.add(new)
    assert second.event == "superseded" and second != first
    assert [m.text for m in store.history(second)] == [old, new]
    a, b = StaticEmbedder().embed(["Bob is allergic to peanuts", "Bob is not allergic to peanuts"])
    assert float(a @ b) > 0.95


def test_its_profile_is_the_measured_one():
    profile = profile_of(StaticEmbedder())
    assert (profile.similarity_floor, profile.vector_weight, profile.kb_threshold) == (0.2, 2.0, 0.65)


def test_the_shipped_table_is_the_recorded_build():
    assert hashlib.sha256(DEFAULT_TABLE.read_bytes()).hexdigest() == TABLE_SHA256
    table = StaticEmbedder().table
    assert table.vectors.shape == (29525, 256) and table.meta["teacher"]["license"] == "Apache-2.0"
    notice = (DEFAULT_TABLE.parent / "NOTICE").read_text()
    assert "all-MiniLM-L6-v2" in notice and "Apache License, Version 2.0" in notice
    assert "Apache License" in (DEFAULT_TABLE.parent / "LICENSE-Apache-2.0").read_text()


def test_a_missing_or_foreign_table_says_what_to_do(tmp_path):
    with pytest.raises(FileNotFoundError, match="reinstall openkoi-memory"):
        StaticEmbedder(path=tmp_path / "missing.npz")
    foreign = tmp_path / "foreign.npz"
    np.savez(foreign, vectors=np.zeros((2, 4), dtype=np.float32))
    with pytest.raises(ValueError, match="not a static embedding table"):
        StaticTable.load(foreign)


def test_the_embedders_section_of_the_search_docs_runs_as_written(capsys):
    doc = (Path(__file__).resolve().parents[2] / "docs" / "search.md").read_text(encoding="utf-8")
    code = doc.split("## Embedders", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    exec(compile(code, "docs/search.md[Embedders]", "exec"), {})  # noqa: S102
    assert capsys.readouterr().out.splitlines() == ["static/minilm-256c", *FACTS]

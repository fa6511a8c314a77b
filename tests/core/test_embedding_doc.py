"""Seed 003's embedding document: each rule against a hand-computed example, and re-embedding by its hash."""

from __future__ import annotations

from datetime import datetime, timezone

import numpy as np
import pytest

from shared_core import MemoryStore
from shared_core.conversations import build_embedding_document, truncate_at_boundary
from shared_core.conversations.embedding_doc import (
    collapse_whitespace,
    flatten_metadata,
    format_dimensions,
    unix_ms,
)
from shared_core.embed import EMBEDDING_TEXT_VERSION, HashingEmbedder, content_hash, fnv1a_64

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def test_whitespace_collapses_to_single_spaces():
    assert collapse_whitespace("  hello \n\t world  \r\n again ") == "hello world again"
    doc = build_embedding_document("  hello \n\t world  ", sent_at=T0, tier="short")
    assert doc.splitlines()[0] == "Text: hello world"


def test_time_is_unix_milliseconds():
    assert unix_ms(datetime(2026, 1, 1, 0, 0, 0, 123456, tzinfo=timezone.utc)) == 1767225600123
    assert unix_ms(datetime(1970, 1, 1, tzinfo=timezone.utc)) == 0


def test_dimensions_in_seed_order_absent_left_out():
    assert format_dimensions({"bot_id": "b1", "person": "alice", "platform": "slack"}) == \
        "platform: slack; person: alice; botId: b1"
    assert format_dimensions({"platform": "slack", "channel": "#eng\nops"}) == "platform: slack; channel: #eng ops"
    assert format_dimensions({}) == "none"


def test_metadata_two_levels_sorted_private_keys_left_out():
    metadata = {
        "zeta": 1,
        "alpha": {"b": "two \n words", "a": True, "deep": {"y": [1, 2], "x": {"k": "v"}, "__h": 0}, "__secret": 1},
        "__rawMessage": {"text": "never embedded"},
        "list": [3, "x"],
        "none": None,
        "pi": 3.5,
    }
    assert flatten_metadata(metadata) == [
        ("alpha.a", "true"),
        ("alpha.b", "two words"),
        ("alpha.deep", '{"x":{"k":"v"},"y":[1,2]}'),
        ("list", '[3,"x"]'),
        ("none", "null"),
        ("pi", "3.5"),
        ("zeta", "1"),
    ]
    assert flatten_metadata({}) == [] and flatten_metadata(None) == []


# max_chars 20, window 25 %: a boundary must start at index >= 20 - 5 = 15 of the first 20 characters
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a" * 15 + "\nb. c d" + "e" * 10, "a" * 15),  # a newline wins over the later ". " and " "
        ("a" * 16 + ". " + "b" * 10, "a" * 16 + "."),  # ". " keeps its full stop
        ("a" * 16 + "; bbb cc", "a" * 16 + ";"),  # "; " keeps its semicolon
        ("a" * 17 + " " + "b" * 10, "a" * 17),  # a space
        ("a" * 14 + ". b c" + "d" * 10, "a" * 14 + ". b"),  # ". " at 14 is too early; the space at 17 is not
        ("a" * 10 + " " + "b" * 20, "a" * 10 + " " + "b" * 9),  # no boundary in the window: hard cut
        ("a" * 20, "a" * 20),  # exactly the maximum: unchanged
        ("short text", "short text"),
    ],
)
def test_truncation_at_boundaries_within_the_final_quarter(text, expected):
    assert truncate_at_boundary(text, max_chars=20, window=0.25) == expected


def test_truncation_at_the_seed_default_of_8000():
    assert truncate_at_boundary("x" * 6000 + ". " + "y" * 2500) == "x" * 6000 + "."
    assert truncate_at_boundary("x" * 5999 + ". " + "y" * 3000) == "x" * 5999 + "."  # the space at 6000
    assert truncate_at_boundary("x" * 5990 + " " + "y" * 3000) == "x" * 5990 + " " + "y" * 2009
    doc = build_embedding_document("word " * 3000, sent_at=T0, tier="short")
    body = doc.splitlines()[0].removeprefix("Text: ")
    assert len(body) <= 8000 and body.endswith("word") and len(body) >= 6000


def test_whole_document_hand_built():
    doc = build_embedding_document(
        "Ship the  release\non Friday.",
        sent_at=datetime(2026, 3, 2, 9, 30, tzinfo=timezone.utc),
        tier="mid",
        media=["https://files.example/plan.pdf", "notes.txt"],
        dimensions={"platform": "slack", "channel": "eng", "person": "alice", "bot_id": None},
        metadata={"thread": {"ts": "1.2"}, "__raw": "x", "priority": 2},
    )
    assert doc == (
        "Text: Ship the release on Friday.\n"
        "Time: 1772443800000\n"
        "Tier: mid\n"
        "Media: https://files.example/plan.pdf, notes.txt\n"
        "Dimensions: platform: slack; channel: eng; person: alice\n"
        "Metadata: priority: 2; thread.ts: 1.2"
    )
    assert build_embedding_document("hi", sent_at=T0, tier="short").splitlines()[3:] == [
        "Media: none", "Dimensions: none", "Metadata: none"]


def test_content_hash_is_fnv64a_over_the_versioned_prefix():
    doc = build_embedding_document("hello", sent_at=T0, tier="short")
    assert EMBEDDING_TEXT_VERSION == "memory-record-embedding-text-v1:"
    assert content_hash(doc) == f"{fnv1a_64(('memory-record-embedding-text-v1:' + doc).encode()):016x}"
    # FNV-1a 64 reference values (the published test vectors)
    assert fnv1a_64(b"") == 0xCBF29CE484222325 and fnv1a_64(b"a") == 0xAF63DC4C8601EC8C


def test_message_vector_embeds_the_document_and_the_index_holds_the_text(store):
    convs = store.conversations
    message = convs.append("s1", "user", "The  launch is on Friday", platform="slack",
                           attachments=[{"name": "plan.pdf", "url": "https://x/plan.pdf"}], metadata={"team": "a"})
    doc = convs.embedding_document(message)
    assert doc.startswith("Text: The launch is on Friday\nTime: 1767225600000\nTier: short\nMedia: https://x/plan.pdf")
    chunk = store.get("msg:" + message.message_id)
    assert chunk.text == "The  launch is on Friday" and chunk.kind == "message" and chunk.owner_id == message.message_id
    assert chunk.content_hash == content_hash(doc) == message.embedding_content_hash
    assert message.embedding_model == store.embedder.name and message.embedding_dimensions == store.embedder.dims
    assert message.embedding_updated_at is not None
    blob = store.db.scalar("SELECT embedding FROM memory_vec WHERE chunk_rowid = ?", (chunk.rowid,))
    stored = np.frombuffer(blob, dtype=np.float32)
    assert np.allclose(stored, store.embed([doc])[0], atol=1e-6)
    assert not np.allclose(stored, store.embed([chunk.text])[0], atol=1e-3)
    assert store.search("launch Friday", fusion="keyword").ids == [chunk.id]


def test_reembed_rebuilds_only_changed_documents(store):
    convs = store.conversations
    a = convs.append("s1", "user", "first message about kiwis")
    convs.append("s1", "user", "second message about mangos")
    assert store.reembed() == 0  # the stored hashes are the documents' hashes
    # the tier is part of the document: change it behind the engine's back and only that message is stale
    store.db.execute("UPDATE raw_messages SET memory_stage = 'mid' WHERE message_id = ?", (a.message_id,))
    assert store.reembed() == 1
    refreshed = convs.get(a.message_id, track_access=False)
    assert refreshed.embedding_content_hash == content_hash(convs.embedding_document(refreshed))
    assert "Tier: mid" in convs.embedding_document(refreshed)
    assert store.reembed() == 0


def test_switching_embedder_reembeds_documents_and_records_dims(tmp_path, clock):
    path = tmp_path / "m.db"
    with MemoryStore.open(path, clock=clock) as store:
        message = store.conversations.append("s1", "user", "hello embedding world")
    other = HashingEmbedder(dims=128)
    with MemoryStore.open(path, clock=clock, embedder=other, reembed=True) as store:
        convs = store.conversations
        fresh = convs.get(message.message_id, track_access=False)
        assert fresh.embedding_dimensions == 128 and fresh.embedding_model == other.name
        chunk = store.get("msg:" + message.message_id)
        blob = store.db.scalar("SELECT embedding FROM memory_vec WHERE chunk_rowid = ?", (chunk.rowid,))
        assert np.allclose(np.frombuffer(blob, dtype=np.float32), other.embed([convs.embedding_document(fresh)])[0],
                           atol=1e-6)

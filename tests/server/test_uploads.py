"""One tenant's upload never blocks another's: a file is parsed outside every shared lock.

The issue's case: a 2.2 MB DOCX of empty paragraphs uploaded with a one-namespace token made another
tenant's upload wait 49 s, because every upload queued on one server-wide lock for its whole parse.
Here Alice's parse is held (the loader waits on an event) and Bob uploads, searches and writes; he
must finish before Alice's parse is let go. No timing is measured: the outcome is the order.
"""

from __future__ import annotations

import threading

import pytest
from starlette.testclient import TestClient

import shared_core.documents.knowledge_base as knowledge_base

OCTET = {"Content-Type": "application/octet-stream"}
WAIT = 120  # seconds: generous; a pass never waits that long, a regression fails instead of hanging


@pytest.fixture
def tenants(app, tokens, base_url):
    alice = tokens[0].add("alice", ["user:alice"])
    bob = tokens[0].add("bob", ["user:bob"])
    with TestClient(app, base_url=base_url, headers={"Authorization": f"Bearer {alice}"}) as a, \
            TestClient(app, base_url=base_url, headers={"Authorization": f"Bearer {bob}"}) as b:
        yield a, b


@pytest.fixture
def held_parse(monkeypatch):
    """Parsing a file named slow.md blocks until ``release`` is set; ``started`` says one began.

    ``held_parse.events`` records ("enter"/"exit", the file's first line) in order.
    """
    started, release = threading.Event(), threading.Event()
    events: list[tuple[str, str]] = []
    real = knowledge_base.load_document

    def load(path, **kwargs):
        if path.name != "slow.md":
            return real(path, **kwargs)
        first_line = path.read_text().splitlines()[0]
        events.append(("enter", first_line))
        started.set()
        assert release.wait(WAIT), "the held parse was never released"
        try:
            return real(path, **kwargs)
        finally:
            events.append(("exit", first_line))

    monkeypatch.setattr(knowledge_base, "load_document", load)
    yield started, release, events
    release.set()


def _in_thread(call):
    out: dict[str, object] = {}
    thread = threading.Thread(target=lambda: out.update(response=call()), daemon=True)
    thread.start()
    return thread, out


def test_a_slow_upload_blocks_no_other_tenant(tenants, held_parse, server_store):
    alice, bob = tenants
    started, release, _ = held_parse
    slow, slow_out = _in_thread(lambda: alice.post("/api/kb/documents", params={"name": "slow.md"},
                                                   content=b"# Slow\n\nA long document.", headers=OCTET))
    assert started.wait(WAIT), "Alice's parse did not start"

    def bob_works():
        return [
            bob.post("/api/kb/documents", params={"name": "notes.md"}, content=b"# Notes\n\nBob's runbook.",
                     headers=OCTET),
            bob.post("/api/kb/search", json={"query": "runbook"}),
            bob.post("/api/memories", json={"text": "Bob prefers green tea"}),
            bob.post("/api/memories/search", json={"query": "green tea"}),
            alice.get("/api/kb/documents"),  # Alice's own reads go on too
        ]

    other, other_out = _in_thread(bob_works)
    other.join(WAIT)
    finished_first = not other.is_alive() and not release.is_set()
    release.set()
    slow.join(WAIT)
    other.join(WAIT)
    assert finished_first, "Bob waited for Alice's parse"
    upload, kb_hits, added, found, listed = other_out["response"]
    assert upload.status_code == 201 and kb_hits.json()[0]["file_name"] == "notes.md"
    assert added.status_code == 201 and found.json()["hits"][0]["memory"]["text"] == "Bob prefers green tea"
    assert listed.status_code == 200 and listed.json() == []  # Alice's document is not written yet
    assert slow_out["response"].status_code == 201
    assert {d.file_name for d in server_store.documents.list_documents(namespace="user:alice")} == {"slow.md"}


def test_uploads_of_one_file_take_turns(tenants, held_parse, server_store):
    """Two uploads of the same name into one namespace share its file: the second waits, then replaces it."""
    alice, _ = tenants
    started, release, events = held_parse
    first, first_out = _in_thread(lambda: alice.post("/api/kb/documents", params={"name": "slow.md"},
                                                     content=b"# One\n\nfirst version", headers=OCTET))
    assert started.wait(WAIT)
    second, second_out = _in_thread(lambda: alice.post("/api/kb/documents", params={"name": "slow.md"},
                                                       content=b"# Two\n\nsecond version", headers=OCTET))
    second.join(1)  # time for a second parse to start, were it not waiting (the order is what is checked)
    release.set()
    first.join(WAIT)
    second.join(WAIT)
    assert events == [("enter", "# One"), ("exit", "# One"), ("enter", "# Two"), ("exit", "# Two")]
    assert first_out["response"].status_code == 201 and second_out["response"].status_code == 201
    assert first_out["response"].json()["id"] == second_out["response"].json()["id"]
    (document,) = server_store.documents.list_documents(namespace="user:alice")
    assert server_store.documents.get_full_document(document.id) == "# Two\n\nsecond version"

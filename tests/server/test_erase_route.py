"""``DELETE /api/namespaces/{namespace}`` and the server's uploaded files (issue 25 part 6).

Uploads were never erased: not by ``erase_namespace``, not when their document was deleted. The
app here keeps them in a folder of its own (``upload_dir``), which it records in the database, so
an erase from another store object (another process) finds them too.
"""

from __future__ import annotations

from pathlib import Path

from starlette.testclient import TestClient

from shared_core import MemoryStore
from shared_core.files import upload_folder, upload_roots

OCTET = {"Content-Type": "application/octet-stream"}


def _upload(client: TestClient, name: str, text: str, namespace: str | None = None) -> dict:
    params = {"name": name} | ({"namespace": namespace} if namespace else {})
    answer = client.post("/api/kb/documents", params=params, content=text.encode(), headers=OCTET)
    assert answer.status_code == 201, answer.text
    return answer.json()


def test_erasing_through_the_api_needs_the_namespace_and_removes_the_uploads(app, server_store, tokens, base_url,
                                                                             client, tmp_path):
    alice_token = tokens[0].add("alice", ["user:alice"])
    _upload(client, "bob.txt", "Bob's contract", namespace="user:bob")
    folder = upload_folder(tmp_path / "uploads", "user:alice")
    with TestClient(app, base_url=base_url, headers={"Authorization": f"Bearer {alice_token}"}) as alice:
        _upload(alice, "alice.txt", "Alice's contract")
        alice.post("/api/memories", json={"text": "Alice likes oolong"})
        assert (folder / "alice.txt").is_file()
        refused = alice.delete("/api/namespaces/user:bob")
        assert refused.status_code == 403 and server_store.count(namespace="user:bob", kind="document") == 1
        answer = alice.delete("/api/namespaces/user:alice")
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["status"] == "erased" and body["complete"] and body["remaining"] == [] and body["memories"] == 2
    assert body["deleted"]["rag_documents"] == 1 and any(f.endswith("alice.txt") for f in body["files"])
    assert not any(str(tmp_path) in f for f in body["files"])  # the server's paths are not shown
    assert not folder.exists() and server_store.count(namespace="user:alice") == 0
    assert (upload_folder(tmp_path / "uploads", "user:bob") / "bob.txt").is_file()  # another tenant's stays


def test_a_bad_namespace_is_a_client_error(client):
    assert client.delete("/api/namespaces/%00").status_code == 400


def test_another_store_object_finds_the_uploads_of_a_server_with_its_own_folder(app, client, server_store, tmp_path):
    _upload(client, "notes.txt", "kept by the server", namespace="user:carol")
    folder = upload_folder(tmp_path / "uploads", "user:carol")
    assert (folder / "notes.txt").is_file()
    with MemoryStore.open(server_store.path) as other:  # as the CLI in another process would
        assert (tmp_path / "uploads").resolve() in upload_roots(other.data_dir, other.db)
        report = other.erase_namespace("user:carol")
        assert report.complete and str(folder / "notes.txt") in report.files
    assert not folder.exists()


def test_deleting_an_uploaded_document_deletes_the_servers_copy(client, tmp_path, server_store):
    document = _upload(client, "memo.txt", "a memo to delete")
    copy = upload_folder(tmp_path / "uploads", "default") / "memo.txt"
    assert copy.is_file()
    assert client.delete(f"/api/kb/documents/{document['id']}").status_code == 204
    assert not copy.exists()
    own = tmp_path / "mine.txt"
    own.write_text("the user's own file")
    ingested = server_store.documents.ingest(own).added[0]
    server_store.documents.delete_document(ingested.id)
    assert Path(own).read_text() == "the user's own file"  # a file the user ingested is never ours to delete

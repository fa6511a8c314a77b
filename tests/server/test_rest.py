"""The REST API: memories, knowledge base, insights, usage analytics, maintenance; limits and errors."""

from __future__ import annotations

import json
import os

import pytest
from starlette.testclient import TestClient

from shared_core import MemoryStore
from shared_core.errors import BusyError
from shared_core.server.rest import create_app

ALICE = {"namespace": "user:alice"}
OCTET = {"Content-Type": "application/octet-stream"}  # uploads are raw bytes of a type a page cannot send cross-site


def test_memories_crud_search_and_feedback(client, server_store):
    created = client.post("/api/memories", params=ALICE, json={
        "text": "Payment API HMAC signature: no trailing empty string", "tags": ["payments", "hmac"],
        "category": "api", "metadata": {"ticket": 42}, "importance": 0.7})
    assert created.status_code == 201 and created.json()["event"] == "created"
    memory = created.json()["memory"]
    mid = memory["id"]
    assert memory["namespace"] == "user:alice" and memory["tags"] == ["payments", "hmac"]
    assert memory["metadata"] == {"ticket": 42} and memory["source"] == "api"
    again = client.post("/api/memories", params=ALICE, json={"text": "Payment API HMAC signature: no trailing empty string"})
    assert again.status_code == 201 and again.json()["event"] == "reinforced" and again.json()["id"] == mid
    note = client.post("/api/memories", params=ALICE, json={"text": "standup moved to 10am", "kind": "note",
                                                            "ttl_seconds": 3600}).json()
    assert note["memory"]["kind"] == "note" and note["memory"]["expires_at"] == "2026-01-01T01:00:00Z"

    found = client.post("/api/memories/search", params=ALICE, json={"query": "hmac signature", "limit": 3}).json()
    assert found["namespace"] == "user:alice" and found["hits"][0]["id"] == mid
    assert found["hits"][0]["parts"]["bm25"] > 0 and found["hits"][0]["memory"]["access_count"] == 0
    assert server_store.get(mid).access_count == 1  # the search counted as an access (seed 003)
    filtered = client.post("/api/memories/search", params=ALICE, json={"query": "hmac", "where": {"ticket": 7}})
    assert filtered.json()["hits"] == []
    bad_filter = client.post("/api/memories/search", params=ALICE, json={"query": "x", "where": {"$bogus": 1}})
    assert bad_filter.status_code in (400, 422) and "$bogus" in str(bad_filter.json()["detail"])

    assert client.post(f"/api/memories/{mid}/feedback", params=ALICE, json={"signal": "reinforce"}).json()["score"] == 6
    assert client.post(f"/api/memories/{mid}/feedback", params=ALICE, json={"signal": "demote"}).json()["score"] == 5
    patched = client.patch(f"/api/memories/{mid}", params=ALICE, json={"text": "Payment API HMAC: omit the empty body",
                                                                     "category": None})
    assert patched.status_code == 200
    assert patched.json()["text"] == "Payment API HMAC: omit the empty body" and patched.json()["category"] is None
    assert patched.json()["score"] == 5 and patched.json()["tags"] == ["payments", "hmac"]
    assert client.get(f"/api/memories/{mid}", params=ALICE).json()["text"].endswith("empty body")
    listed = client.get("/api/memories", params={**ALICE, "kind": "fact"}).json()
    assert [m["id"] for m in listed] == [mid]
    assert client.get("/api/memories", params={**ALICE, "tag": "hmac"}).json()[0]["id"] == mid
    assert client.delete(f"/api/memories/{mid}", params=ALICE).status_code == 204
    gone = client.get(f"/api/memories/{mid}", params=ALICE)
    assert gone.status_code == 404 and gone.json() == {"detail": f"no memory with id '{mid}' in namespace 'user:alice'"}
    assert client.delete(f"/api/memories/{mid}", params=ALICE).status_code == 404


def test_bad_memory_input(client, server_store):
    for body in ({"text": ""}, {"text": "x", "kind": "Fact!"}, {"text": "x", "importance": 2},
                 {"text": "x", "unknown": 1}, {"text": "x", "tags": "a,b"}, {"text": "x", "ttl_seconds": -1},
                 '{"text": "\\ud800"}', '{"text": "a\\u0000b"}'):
        response = client.post("/api/memories", content=body if isinstance(body, str) else json.dumps(body),
                               headers={"Content-Type": "application/json"})
        assert response.status_code == 422, body
        assert "Traceback" not in response.text
    managed = client.post("/api/memories", json={"text": "a chunk", "kind": "document"})
    assert managed.status_code == 400 and "/api/kb" in managed.json()["detail"]
    doc = server_store.documents.ingest_text("Handbook text", name="h.md")
    chunk = server_store.list(kind="document")[0].id
    assert client.delete(f"/api/memories/{chunk}").status_code == 400  # documents are deleted as a whole
    assert client.get(f"/api/kb/documents/{doc.id}").status_code == 200
    assert client.get("/api/memories", params={"limit": 0}).status_code == 422
    assert client.get("/api/memories", params={"namespace": ""}).status_code == 400
    assert client.post("/api/memories/search", json={"query": "x", "limit": 10**12}).status_code == 422
    whitespace = client.post("/api/memories", json={"text": "   "})
    assert whitespace.status_code == 400 and "empty" in whitespace.json()["detail"]


def test_knowledge_base_upload_search_read_delete(client, tmp_path):
    handbook = b"# Leave\n\nParental leave is sixteen weeks at full pay.\n\n# Notice\n\nContractors give thirty days."
    uploaded = client.post("/api/kb/documents", params={**ALICE, "name": "handbook.md"}, content=handbook,
                           headers=OCTET)
    assert uploaded.status_code == 201, uploaded.text
    document = uploaded.json()
    assert document["file_name"] == "handbook.md" and document["namespace"] == "user:alice"
    stored = list((tmp_path / "uploads").rglob("handbook.md"))
    assert len(stored) == 1 and stored[0].read_bytes() == handbook and oct(stored[0].parent.stat().st_mode)[-3:] == "700"
    text_doc = client.post("/api/kb/documents/text", params=ALICE, json={"name": "memory.txt", "text": "Focus: billing"})
    assert text_doc.status_code == 201

    hits = client.post("/api/kb/search", params=ALICE, json={"query": "parental leave weeks"}).json()
    assert hits[0]["document_id"] == document["id"] and "sixteen weeks" in hits[0]["text"]
    assert hits[0]["metadata"]["heading"] == "Leave"
    scoped = client.post("/api/kb/search", params=ALICE, json={"query": "billing", "document_ids": [document["id"]]})
    assert scoped.json() == []
    listed = client.get("/api/kb/documents", params=ALICE).json()
    assert {d["file_name"] for d in listed} == {"handbook.md", "memory.txt"}
    content = client.get(f"/api/kb/documents/{document['id']}/content", params=ALICE).json()
    assert content == {"id": document["id"], "file_name": "handbook.md", "content": handbook.decode()}

    changed = client.post("/api/kb/documents", params={**ALICE, "name": "handbook.md"}, content=handbook + b" Updated.",
                          headers=OCTET)
    assert changed.status_code == 201 and changed.json()["id"] == document["id"]
    corrupt = client.post("/api/kb/documents", params={**ALICE, "name": "report.pdf"}, content=b"not a pdf at all",
                          headers=OCTET)
    assert corrupt.status_code == 422 and "[wrong-extension]" in corrupt.json()["detail"]
    assert not list((tmp_path / "uploads").rglob("report.pdf"))  # a refused upload leaves no file behind
    assert client.post("/api/kb/documents", params={**ALICE, "name": "empty.md"}, content=b"",
                       headers=OCTET).status_code == 400

    assert client.delete(f"/api/kb/documents/{document['id']}", params=ALICE).status_code == 204
    assert client.get(f"/api/kb/documents/{document['id']}", params=ALICE).status_code == 404
    assert client.post("/api/kb/search", params=ALICE, json={"query": "parental leave"}).json() == []


@pytest.mark.parametrize("name", [
    "../escape.md", "../../etc/passwd.md", "/etc/passwd.md", "sub/dir.md", "..\\escape.md", ".hidden.md", "..",
    "C:evil.md", "tab\tname.md", "report.exe", "noextension",
])
def test_upload_names_that_could_leave_the_upload_folder_are_refused(client, tmp_path, name):
    response = client.post("/api/kb/documents", params={"name": name}, content=b"# Title\n\ntext", headers=OCTET)
    assert response.status_code == 400, response.text
    assert not any(p.is_file() for p in tmp_path.rglob("*.md") if "uploads" not in p.parts)
    assert not (tmp_path / "escape.md").exists() and not (tmp_path.parent / "escape.md").exists()


def test_ingest_by_path_stays_inside_the_documents_roots(server_store, tokens, tmp_path, base_url):
    root = tmp_path / "docs"
    (root / "team").mkdir(parents=True)
    (root / "team" / "runbook.md").write_text("# Runbook\n\nRestart the ingest workers nightly.")
    outside = tmp_path / "secret.md"
    outside.write_text("# Secret\n\nThe root password.")
    (root / "team" / "link.md").symlink_to(outside)
    auth = {"Authorization": f"Bearer {tokens[1]}"}
    closed = create_app(server_store, tokens=tokens[0], mcp=False)
    with TestClient(closed, base_url=base_url, headers=auth) as client:
        off = client.post("/api/kb/ingest", json={"paths": [str(root)]})
        assert off.status_code == 403 and "server.documents_roots" in off.json()["detail"]
    app = create_app(server_store, tokens=tokens[0], mcp=False, documents_roots=[root])
    with TestClient(app, base_url=base_url, headers=auth) as client:
        for path in (str(outside), str(root / ".." / "secret.md"), "team/runbook.md", "/etc/hosts", str(tmp_path),
                     "~0", "~/docs", "~root/x"):
            refused = client.post("/api/kb/ingest", json={"paths": [path]})
            assert refused.status_code == 403, path
            assert "outside the documents roots" in refused.json()["detail"]
        report = client.post("/api/kb/ingest", json={"paths": [str(root)]}).json()
        assert [d["file_name"] for d in report["added"]] == ["runbook.md"]
        assert report["failed"] == [{"path": "secret.md", "reason": "outside-roots",
                                     "message": "a link that leads outside the documents roots"}]
        assert client.post("/api/kb/search", json={"query": "root password"}).json() == []
        again = client.post("/api/kb/ingest", json={"paths": [str(root / "team" / "runbook.md")]}).json()
        assert len(again["unchanged"]) == 1 and again["added"] == []


def test_body_limits(tmp_path, tokens, clock, base_url):
    config = {"server": {"max_body_bytes": 4096, "max_upload_bytes": 8192}}
    with MemoryStore.open(tmp_path / "small.db", clock=clock, config=config) as store:
        app = create_app(store, tokens=tokens[0], mcp=False, upload_dir=tmp_path / "up")
        with TestClient(app, base_url=base_url, headers={"Authorization": f"Bearer {tokens[1]}"}) as client:
            assert client.post("/api/memories", json={"text": "x" * 3000}).status_code == 201
            big = client.post("/api/memories", json={"text": "x" * 5000})
            assert big.status_code == 413 and "4,096 bytes" in big.json()["detail"]

            def chunks():  # no Content-Length: streamed, counted, refused past the limit
                for _ in range(10):
                    yield b"x" * 1000

            streamed = client.post("/api/memories", content=chunks(), headers={"Content-Type": "application/json"})
            assert streamed.status_code == 413
            ok = client.post("/api/kb/documents", params={"name": "a.md"}, content=b"# A\n\n" + b"y" * 6000,
                                 headers=OCTET)
            assert ok.status_code == 201  # uploads have their own, larger limit
            too_big = client.post("/api/kb/documents", params={"name": "b.md"}, content=b"z" * 9000,
                                      headers=OCTET)
            assert too_big.status_code == 413 and not list((tmp_path / "up").rglob("b.md"))
            assert store.count(kind="fact") == 1


def test_insights(client):
    created = client.post("/api/insights", params=ALICE, json={
        "title": "Launch moved", "description": "to March 3", "importance": "high", "urgency": "urgent",
        "task_label": "decision", "dedupe_key": "launch-date"})
    assert created.status_code == 200
    insight = created.json()
    same = client.post("/api/insights", params=ALICE, json={"title": "Launch moved again", "dedupe_key": "launch-date"})
    assert same.json()["id"] == insight["id"] and same.json()["title"] == "Launch moved again"
    client.post("/api/insights", params=ALICE, json={"title": "Coffee machine fixed", "importance": "low",
                                                     "urgency": "low"})
    ranked = client.get("/api/insights", params=ALICE).json()
    assert [r["rank"] for r in ranked] == [1, 2] and ranked[0]["insight"]["id"] == insight["id"]
    assert set(ranked[0]["value"]) >= {"score", "frequency", "freshness", "relevance", "favorite"}
    assert ranked[0]["weights"]["trend"] == "stable"
    viewed = client.post(f"/api/insights/{insight['id']}/view", params=ALICE)
    assert viewed.json()["last_access_at"] == "2026-01-01T00:00:00Z"
    assert client.post(f"/api/insights/{insight['id']}/favorite", params=ALICE, json={"on": True}).json()["favorite"]
    assert client.put(f"/api/insights/{insight['id']}/weight", params=ALICE,
                      json={"multiplier": 2.0}).json()["custom_weight"] == 2.0
    assert client.put(f"/api/insights/{insight['id']}/weight", params=ALICE, json={"multiplier": 9}).status_code == 422
    one = client.get(f"/api/insights/{insight['id']}", params=ALICE).json()
    assert one["weights"]["custom_weight_multiplier"] == 2.0 and one["weights"]["favorite_boost_active"]
    found = client.post("/api/insights/search", params=ALICE, json={"query": "launch"}).json()
    assert found[0]["insight"]["id"] == insight["id"]
    assert client.get(f"/api/insights/{insight['id']}").status_code == 404  # another namespace
    assert client.delete(f"/api/insights/{insight['id']}", params=ALICE).status_code == 204
    assert client.delete(f"/api/insights/{insight['id']}", params=ALICE).status_code == 404


def test_usage_analytics(client):
    first = client.post("/api/memories", params=ALICE, json={"text": "Alice prefers oolong tea"}).json()["id"]
    client.post("/api/memories", params=ALICE, json={"text": "Alice lives in Lisbon"})
    for _ in range(3):
        client.post("/api/memories/search", params=ALICE, json={"query": "oolong"})
    client.post(f"/api/memories/{first}/feedback", params=ALICE, json={"signal": "reinforce"})
    event = client.post("/api/usage/events", params=ALICE, json={"event_type": "task_completed", "category": "code",
                                                                  "skills": ["review"], "score": 0.8})
    assert event.status_code == 201 and event.json()["skills"] == ["review"] and event.json()["hour"] == 0
    assert [e["id"] for e in client.get("/api/usage/events", params=ALICE).json()] == [event.json()["id"]]
    assert client.get("/api/usage/patterns", params=ALICE).json() == []
    assert client.get("/api/usage/patterns", params={**ALICE, "status": "weird"}).status_code == 422
    summary = client.get("/api/usage/summary", params=ALICE).json()
    assert summary["memories"] == 2 and summary["by_kind"] == {"fact": 2}
    assert summary["accesses"] == 3 and summary["accessed"] == 1 and summary["reinforced"] == 1
    assert summary["most_accessed"][0]["id"] == first and summary["most_accessed"][0]["access_count"] == 3
    assert summary["events"] == 1 and summary["events_by_type"] == {"task_completed": 1}


def test_maintenance_status_and_run(client, server_store):
    status = client.get("/api/maintenance").json()
    assert status["schedule"] == "0 4 * * *" and status["last_run"] is None and status["last_recorded_run"] is None
    assert status["next_due"] == "2026-01-01T04:00:00Z" or status["timezone"] == "local"
    ran = client.post("/api/maintenance/run").json()
    assert ran["last_run"]["status"] == "ran" and {s["name"] for s in ran["last_run"]["steps"]} >= {"expire", "prune"}
    assert ran["last_recorded_run"]["status"] == "ran"
    assert server_store.maintenance.last_run() is not None


def test_library_errors_become_clean_responses(app, server_store, token, monkeypatch, base_url):
    with TestClient(app, base_url=base_url, headers={"Authorization": f"Bearer {token}"}, raise_server_exceptions=False) as client:
        def locked(*args, **kwargs):
            raise BusyError("server.db is being written by another process, past the busy timeout")

        monkeypatch.setattr(server_store, "search", locked)
        busy = client.post("/api/memories/search", json={"query": "x"})
        assert busy.status_code == 503 and busy.headers["retry-after"] == "1"

        def broken(*args, **kwargs):
            raise RuntimeError("secret internals at /home/me/.openkoi")

        monkeypatch.setattr(server_store, "list", broken)
        crashed = client.get("/api/memories")
        assert crashed.status_code == 500
        assert crashed.json() == {"detail": "internal error; the server log has the details"}
        assert "secret" not in crashed.text and "Traceback" not in crashed.text


def test_openapi_document_and_health(client):
    spec = client.get("/openapi.json").json()
    assert spec["info"]["title"] == "openkoi-memory"
    paths = set(spec["paths"])
    assert {"/api/memories", "/api/memories/search", "/api/memories/{memory_id}", "/api/memories/{memory_id}/feedback",
            "/api/kb/search", "/api/kb/documents", "/api/kb/documents/{document_id}/content", "/api/insights",
            "/api/usage/summary", "/api/maintenance", "/api/health"} <= paths
    assert client.get("/docs").status_code == 200
    health = client.get("/api/health").json()
    assert health == {"status": "ok", "version": health["version"], "principal": "default", "namespaces": ["*"]}
    assert os.environ.get("OPENKOI_DATA")  # conftest isolates the data dir


def test_usage_event_types_are_trimmed(client):
    event = client.post("/api/usage/events", json={"event_type": " deploy "})
    assert event.status_code == 201 and event.json()["event_type"] == "deploy"


def test_a_nul_in_a_query_value_is_never_a_server_error(client):
    """SQLite can compare with a NUL (and finds nothing); PostgreSQL cannot hold one: a 400 that says so."""
    client.post("/api/usage/events", json={"event_type": "deploy"})
    response = client.get("/api/usage/events", params={"event_type": "dep\x00loy"})
    assert response.status_code in (200, 400), response.text
    if response.status_code == 200:
        assert response.json() == []
    else:
        assert "NUL character" in response.json()["detail"]

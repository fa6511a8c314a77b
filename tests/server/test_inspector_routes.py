"""The inspector's page and routes over HTTP: the page needs no token, its data does, and a token
limited to namespaces reads and changes only those."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from shared_core.server.routes.inspector import PAGE_FILES

ALICE, BOB = "user:alice", "user:bob"


@pytest.fixture
def seeded(server_store, clock):
    tea = server_store.add("Alice prefers oolong tea", namespace=ALICE, tags=["drinks"])
    clock.advance(days=1)
    server_store.add("Alice lives in Lisbon", namespace=ALICE, category="home")
    secret = server_store.add("Bob's secret project is Falcon", namespace=BOB)
    return {"tea": tea, "secret": secret}


@pytest.fixture
def alice(app, tokens, base_url):
    token = tokens[0].add("alice-only", [ALICE])
    with TestClient(app, base_url=base_url, headers={"Authorization": f"Bearer {token}"}) as c:
        yield c


def test_the_page_loads_without_a_token_with_a_strict_policy(anonymous):
    for path, (_, media_type) in PAGE_FILES.items():
        response = anonymous.get(path)
        assert response.status_code == 200, path
        assert response.headers["content-type"] == media_type
        assert "default-src 'none'" in response.headers["content-security-policy"]
        assert response.headers["x-content-type-options"] == "nosniff"
    assert anonymous.post("/").status_code == 401  # only reading the page is open
    assert anonymous.get("/api/inspector/overview").status_code == 401
    assert anonymous.get("/ui/../api/health").status_code == 401


def test_the_page_still_refuses_a_foreign_host(anonymous):
    response = anonymous.get("/", headers={"Host": "attacker.example"})
    assert response.status_code == 421  # DNS rebinding: the browser guard comes first, even for the page


def test_search_explains_hits_and_is_not_an_access(client, seeded, server_store):
    response = client.post("/api/inspector/search", params={"namespace": ALICE}, json={"query": "oolong tea"})
    assert response.status_code == 200
    hit = response.json()["hits"][0]
    assert hit["id"] == seeded["tea"]
    assert set(hit["parts"]) >= {"bm25", "similarity", "feedback", "recency", "keyword", "vector"}
    assert hit["explanation"].startswith(f"{hit['score']:.4f} = relevance")
    assert server_store.get(seeded["tea"], namespace=ALICE).access_count == 0


def test_search_and_browse_filter_by_time(client, seeded, clock):
    day_one = clock.now().isoformat()  # Lisbon was added a day after the tea
    found = client.post("/api/inspector/search", params={"namespace": ALICE},
                        json={"query": "Alice", "since": day_one}).json()["hits"]
    assert [h["memory"]["text"] for h in found] == ["Alice lives in Lisbon"]
    listed = client.get("/api/inspector/memories", params={"namespace": ALICE, "until": day_one}).json()
    assert [m["text"] for m in listed] == ["Alice prefers oolong tea"]


def test_overview_counts_one_namespace(client, alice, seeded):
    mine = client.get("/api/inspector/overview", params={"namespace": ALICE}).json()
    assert mine["live_by_kind"] == {"fact": 2}
    assert [g["total"] for g in mine["growth"]] == [1, 2]
    assert mine["file_bytes"] > 0
    limited = alice.get("/api/inspector/overview", params={"namespace": ALICE}).json()
    assert limited["live_by_kind"] == {"fact": 2} and limited["file_bytes"] is None


def test_a_memory_with_its_curve_archive_and_restore(client, seeded, server_store):
    path = f"/api/inspector/memories/{seeded['tea']}"
    detail = client.get(path, params={"namespace": ALICE}).json()
    assert detail["editable"] and not detail["archived"]
    (curve,) = detail["curves"]
    assert curve["measure"] == "rank" and curve["points"][0]["day"] == 0
    assert curve["points"][-1]["value"] < curve["points"][0]["value"]  # nothing happens: it fades
    archived = client.post(path + "/archive", params={"namespace": ALICE}).json()
    assert archived["archived"] and archived["archive_reason"] == "manual" and archived["curves"] == []
    assert server_store.search("oolong", namespace=ALICE, track_access=False).ids == []
    restored = client.post(path + "/restore", params={"namespace": ALICE}).json()
    assert not restored["archived"]
    assert server_store.search("oolong", namespace=ALICE, track_access=False).ids == [seeded["tea"]]


def test_kept_kinds_are_archived_by_their_domain_not_here(client, server_store):
    document = server_store.documents.ingest_text("Leave is sixteen weeks.", name="leave.md", namespace=ALICE)
    chunks = client.get(f"/api/inspector/documents/{document.id}/chunks", params={"namespace": ALICE}).json()
    assert [c["content"] for c in chunks] == ["Leave is sixteen weeks."]
    response = client.post(f"/api/inspector/memories/{chunks[0]['id']}/archive", params={"namespace": ALICE})
    assert response.status_code == 400 and "its own domain" in response.json()["detail"]
    detail = client.get(f"/api/inspector/memories/{chunks[0]['id']}", params={"namespace": ALICE}).json()
    assert not detail["editable"] and detail["provenance"]["document_name"] == "leave.md"


def test_sessions_with_their_messages(client, server_store):
    session = server_store.conversations.create_session("s1", namespace=ALICE)
    server_store.conversations.append(session.id, "user", "hello there", namespace=ALICE)
    (listed,) = client.get("/api/inspector/sessions", params={"namespace": ALICE}).json()
    assert listed["id"] == "s1" and listed["messages"] == 1
    detail = client.get("/api/inspector/sessions/s1", params={"namespace": ALICE}).json()
    assert [m["content"] for m in detail["messages"]] == ["hello there"]
    assert client.get("/api/inspector/sessions/s1", params={"namespace": BOB}).status_code == 404


@pytest.mark.parametrize("method,path,body", [
    ("get", "/api/inspector/overview", None),
    ("post", "/api/inspector/search", {"query": "secret project"}),
    ("get", "/api/inspector/memories", None),
    ("get", "/api/inspector/memories/{secret}", None),
    ("post", "/api/inspector/memories/{secret}/archive", None),
    ("post", "/api/inspector/memories/{secret}/restore", None),
    ("get", "/api/inspector/sessions", None),
    ("get", "/api/inspector/sessions/s1", None),
    ("get", "/api/inspector/documents/d1/chunks", None),
])
def test_a_token_for_one_namespace_is_refused_every_other(alice, seeded, server_store, method, path, body):
    url = path.format(secret=seeded["secret"])
    kwargs = {"params": {"namespace": BOB}} | ({"json": body} if body else {})
    response = getattr(alice, method)(url, **kwargs)
    assert response.status_code == 403
    assert "Falcon" not in response.text
    assert server_store.get(seeded["secret"], namespace=BOB).archived_at is None


def test_a_memory_of_another_namespace_is_not_found_through_ones_own(alice, seeded):
    response = alice.get(f"/api/inspector/memories/{seeded['secret']}", params={"namespace": ALICE})
    assert response.status_code == 404 and "Falcon" not in response.text

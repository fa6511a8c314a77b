"""Errors that tell the truth, over REST and MCP: a bad request is 4xx with its reason (never 5xx, never
``Retry-After``, never the server's paths); only a busy store is 503 with ``Retry-After``; the server's
own faults are 500 with the trace in its log only. Each hostile case is the issue's, rerun as written,
and the server answers normally afterwards."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading

import pytest
from mcp import Client
from starlette.testclient import TestClient

from shared_core import StorageError
from shared_core.errors import BusyError
from shared_core.memories import Memory
from shared_core.server.errors import is_transient
from shared_core.server.mcp_server import create_mcp_server

JSON = {"Content-Type": "application/json"}


@pytest.fixture
def lenient(app, token, base_url):
    """A client that gets the 500 answer instead of the test client re-raising the server's error."""
    with TestClient(app, base_url=base_url, headers={"Authorization": f"Bearer {token}"},
                    raise_server_exceptions=False) as c:
        yield c


def _nested(opening: str, closing: str, depth: int, inner: str = '{"a": 1}') -> str:
    return opening * depth + inner + closing * depth


# (what, method, path, raw JSON body or None)
HOSTILE = [
    ("1,200 $and conditions", "POST", "/api/memories/search",
     json.dumps({"query": "tea", "where": {"$and": [{f"k{i}": i} for i in range(1200)]}})),
    ("2,000 $or conditions", "POST", "/api/memories/search",
     json.dumps({"query": "tea", "where": {"$or": [{"k": i} for i in range(2000)]}})),
    ("a NUL in a filter key", "POST", "/api/memories/search", json.dumps({"query": "tea", "where": {"a\x00b": 1}})),
    ("$and nested 600 deep", "POST", "/api/memories/search",
     '{"query": "tea", "where": ' + _nested('{"$and": [', "]}", 600) + "}"),
    ("$not nested 600 deep", "POST", "/api/memories/search",
     '{"query": "tea", "where": ' + _nested('{"$not": ', "}", 600) + "}"),
    ("$not nested 40 deep", "POST", "/api/memories/search",
     '{"query": "tea", "where": ' + _nested('{"$not": ', "}", 40) + "}"),
    ("a filter value nested 100 deep", "POST", "/api/memories/search",
     '{"query": "tea", "where": {"a": ' + _nested('{"b": ', "}", 100, "1") + "}}"),
    ("metadata nested 5,000 deep", "POST", "/api/memories", '{"text": "deep", "metadata": ' +
     _nested('{"a": ', "}", 5000, "1") + "}"),
    ("metadata nested 300 deep", "POST", "/api/memories", '{"text": "deep", "metadata": ' +
     _nested('{"a": ', "}", 300, "1") + "}"),
    ("metadata nested 300 deep, by PATCH", "PATCH", "/api/memories/{id}", '{"metadata": ' +
     _nested('{"a": ', "}", 300, "1") + "}"),
    ("insight details nested 300 deep", "POST", "/api/insights", '{"title": "t", "details": [' +
     _nested('{"a": ', "}", 300, "1") + "]}"),
    ("a lone surrogate in the text", "POST", "/api/memories", '{"text": "a\\ud800b"}'),
    ("a lone surrogate in a metadata key", "POST", "/api/memories", '{"text": "ab", "metadata": {"\\ud800": 1}}'),
    ("a lone surrogate in a metadata value", "POST", "/api/memories", '{"text": "ab", "metadata": {"k": "\\udfff"}}'),
    ("a lone surrogate in a tag", "POST", "/api/memories", '{"text": "ab", "tags": ["\\ud800"]}'),
    ("a lone surrogate in a filter key", "POST", "/api/memories/search", '{"query": "ab", "where": {"\\ud800": 1}}'),
    ("a lone surrogate in a filter value", "POST", "/api/memories/search", '{"query": "ab", "where": {"k": "\\ud800"}}'),
    ("a lone surrogate as the whole query", "POST", "/api/memories/search", '{"query": "\\ud800"}'),
    ("a NUL in a metadata key", "POST", "/api/memories", '{"text": "ab", "metadata": {"a\\u0000": 1}}'),
    ("a NUL in a metadata value", "POST", "/api/memories", '{"text": "ab", "metadata": {"a": "x\\u0000y"}}'),
    ("NaN in metadata", "POST", "/api/memories", '{"text": "ab", "metadata": {"a": NaN}}'),
    ("Infinity in a filter", "POST", "/api/memories/search", '{"query": "ab", "where": {"a": {"$gt": Infinity}}}'),
    ("ttl 1e300", "POST", "/api/memories", '{"text": "ab", "ttl_seconds": 1e300}'),
    ("ttl NaN", "POST", "/api/memories", '{"text": "ab", "ttl_seconds": NaN}'),
    ("a weight of NaN", "POST", "/api/memories/{id}/feedback", '{"signal": "reinforce", "weight": NaN}'),
    ("a search window past 10,000 results", "POST", "/api/memories/search",
     '{"query": "tea", "limit": 100, "offset": 10000}'),
    ("a 10,001-character query", "POST", "/api/memories/search", json.dumps({"query": "a" * 10_001})),
    ("a metadata key of 5,000 characters", "POST", "/api/memories", json.dumps({"text": "ab", "metadata": {"k" * 5000: 1}})),
]


@pytest.mark.parametrize("what, method, path, body", HOSTILE, ids=[case[0] for case in HOSTILE])
def test_a_hostile_request_is_a_client_error_and_breaks_nothing(client, server_store, what, method, path, body):
    known = server_store.add("Alice likes oolong tea", metadata={"project": "atlas"})
    response = client.request(method, path.format(id=known.id), content=body.encode("utf-8", "surrogatepass"),
                              headers=JSON)
    assert response.status_code in (400, 413, 422), (what, response.status_code, response.text[:300])
    assert "retry-after" not in response.headers
    detail = json.dumps(response.json()["detail"])
    assert str(server_store.path) not in detail and str(server_store.data_dir) not in detail
    assert "Traceback" not in response.text and "RecursionError" not in detail
    # nothing was kept, and the store answers normally afterwards
    assert server_store.get(known.id).metadata == {"project": "atlas"}
    assert server_store.count(namespace="default") == 1
    found = client.post("/api/memories/search", json={"query": "oolong tea"})
    assert found.status_code == 200 and found.json()["hits"][0]["id"] == known.id
    assert client.post("/api/memories", json={"text": "Bob likes green tea"}).status_code == 201


def test_the_refusals_say_what_is_wrong(client):
    def detail(body: str) -> str:
        return json.dumps(client.post("/api/memories/search", content=body.encode("utf-8", "surrogatepass"),
                                      headers=JSON).json()["detail"])

    assert "the limit is 1,000" in detail(HOSTILE[0][3])  # 1,200 filters in one $and list
    assert "NUL character" in detail(HOSTILE[2][3])
    assert "nested too deeply" in detail(HOSTILE[3][3])  # past what the JSON parser takes: refused while parsing
    assert "more than 32 levels" in detail(HOSTILE[5][3])
    assert "cannot be stored" in detail('{"query": "ab", "where": {"\\ud800": 1}}')
    assert "limit + offset" in client.get("/openapi.json").text


@pytest.mark.parametrize("cause", ["sqlite", "postgres"])
def test_only_a_busy_store_is_503_with_retry_after(client, server_store, monkeypatch, cause):
    path = str(server_store.path)

    def busy(*args, **kwargs):  # what the core raises when another writer holds the file past the busy timeout
        try:
            if cause == "sqlite":
                raise sqlite3.OperationalError("database is locked")
            from psycopg import errors

            raise errors.LockNotAvailable("canceling statement due to lock timeout")
        except Exception as exc:
            raise StorageError(f"{path} stayed locked by another writer for too long; retry") from exc

    monkeypatch.setattr(server_store, "search", busy)
    answer = client.post("/api/memories/search", json={"query": "x"})
    assert answer.status_code == 503 and answer.headers["retry-after"] == "1"
    assert path not in answer.text and "the database stayed locked" in answer.json()["detail"]


def test_a_storage_fault_that_is_not_busy_is_500_without_the_path(client, server_store, monkeypatch, caplog):
    path = str(server_store.path)

    def refused(*args, **kwargs):  # what a request that slipped past every check would get from SQLite
        try:
            raise sqlite3.OperationalError("k value in knn query too large, provided 5000 and the limit is 4096")
        except sqlite3.OperationalError:
            raise StorageError(f"SQLite error on {path}: k value in knn query too large") from None

    monkeypatch.setattr(server_store, "search", refused)
    answer = client.post("/api/memories/search", json={"query": "x"})
    assert answer.status_code == 500 and "retry-after" not in answer.headers
    assert path not in answer.text and "the database" in answer.json()["detail"]
    assert path in caplog.text  # the operator's log has it


@pytest.mark.parametrize("raised, status, words", [
    (RecursionError("maximum recursion depth exceeded"), 400, "nested too deeply"),
    (OverflowError("date value out of range"), 400, "out of range"),
    (UnicodeEncodeError("utf-8", "\ud800", 0, 1, "surrogates not allowed"), 400, "valid Unicode"),
    (ValueError("tags: at most 100"), 400, "tags: at most 100"),
    (KeyError("internal"), 500, "internal error"),
])
def test_raw_python_errors_from_the_core_map_to_their_meaning(lenient, server_store, monkeypatch, raised, status, words):
    def fail(*args, **kwargs):
        raise raised

    monkeypatch.setattr(server_store, "add", fail)
    answer = lenient.post("/api/memories", json={"text": "x"})
    assert answer.status_code == status and words in answer.json()["detail"]
    assert "retry-after" not in answer.headers and "Traceback" not in answer.text


def test_a_record_the_server_cannot_show_is_its_own_fault(client, server_store, monkeypatch):
    """Metadata nested past what the response serialiser takes (written from Python) is a 500, not a 400."""
    stored = server_store.add("deep")
    deep: dict = {}
    for _ in range(300):
        deep = {"a": deep}
    original = server_store.get

    def get(*args, **kwargs):
        memory = original(*args, **kwargs)
        return Memory(**{**memory.__dict__, "metadata": deep})

    monkeypatch.setattr(server_store, "get", get)
    answer = client.get(f"/api/memories/{stored.id}")
    assert answer.status_code == 500 and answer.json()["detail"] == "internal error; the server log has the details"


_HOLDER = """
import sqlite3, sys
holder = sqlite3.connect(sys.argv[1], timeout=60)
holder.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.read()  # until the test closes our stdin
holder.rollback()
"""


@pytest.mark.sqlite_only
@pytest.mark.parametrize("server_store", [{"database": {"busy_timeout_s": 1.0}}], indirect=True)  # not 10 s
def test_a_write_locked_by_another_process_is_503_and_reads_go_on(client, server_store):
    """Another process holds SQLite's write lock: the write waits the busy timeout, then 503 with Retry-After."""
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(server_store.path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        results: dict[str, object] = {}
        writer = threading.Thread(target=lambda: results.update(
            write=client.post("/api/memories", json={"text": "blocked write"})))
        writer.start()
        read = client.get("/api/memories")
        writer.join(120)
        assert not writer.is_alive()
    finally:
        holder.stdin.close()
        holder.wait(60)
    assert read.status_code == 200
    write = results["write"]
    assert write.status_code == 503 and write.headers["retry-after"] == "1", write.text
    assert str(server_store.path) not in write.text
    assert client.post("/api/memories", json={"text": "after the lock"}).status_code == 201


def test_transient_means_busy_or_unavailable():
    try:
        raise sqlite3.OperationalError("no such column: locked")  # the word, but not SQLite's busy code
    except sqlite3.OperationalError:
        try:
            raise StorageError("SQLite error on x.db: no such column: locked") from None
        except StorageError as exc:
            wrapped = exc
    assert not is_transient(wrapped)
    assert is_transient(BusyError("x.db is being written by another process, past the busy timeout"))
    assert not is_transient(StorageError("waited 10 s for the writer's turn: the store is busy"))  # words alone
    assert not is_transient(ValueError("busy"))


# -- MCP ------------------------------------------------------------------------------------------------

@pytest.fixture
def mcp_client(server_store):
    return Client(create_mcp_server(server_store, namespace="user:alice", tools="all"), read_timeout_seconds=60)


def _text(result) -> str:
    return "\n".join(block.text for block in result.content)


async def test_mcp_caps_long_queries_and_many_tags_before_any_work(mcp_client, server_store, monkeypatch):
    def never(*args, **kwargs):
        raise AssertionError("the store was reached")

    monkeypatch.setattr(server_store, "search", never)
    monkeypatch.setattr(server_store, "add", never)
    async with mcp_client as client:
        for name, args, message in (
            ("memory_query", {"query": "a" * 80_000}, "query has 80,000 characters; at most 10,000"),
            ("memory_search", {"query": "a" * 80_000}, "at most 10,000"),
            ("memory_recall", {"query": "a" * 80_000}, "at most 10,000"),
            ("searchKnowledgeBase", {"query": "a" * 80_000}, "at most 10,000"),
            ("memory_store", {"content": "x", "tags": ",".join(f"t{i}" for i in range(120_000))}, "tags has"),
            ("memory_store", {"content": "x", "tags": ",".join(f"t{i}" for i in range(101))},
             "101 comma-separated items; at most 100"),
            ("memory_save", {"content": "x" * 100_001}, "at most 100,000"),
            ("searchKnowledgeBase", {"query": "x", "documentIds": ["d"] * 5000}, "5,000 items; at most 1,000"),
            ("memory_query", {"query": "x", "namespace": "user:\x00alice"}, "no NUL characters"),
            ("memory_query", {"query": "x", "namespace": "user:\ud800"}, "valid Unicode"),
        ):
            result = await client.call_tool(name, args)
            assert result.is_error and message in _text(result), (name, _text(result)[:300])
    assert server_store.count(namespace="user:alice") == 0


async def test_mcp_errors_are_results_that_tell_the_truth(mcp_client, server_store, monkeypatch):
    path = str(server_store.path)
    raised: list[BaseException] = []

    def fail(*args, **kwargs):
        raise raised[-1]

    monkeypatch.setattr(server_store, "search", fail)
    async with mcp_client as client:
        try:
            raise sqlite3.OperationalError("database is locked")
        except sqlite3.OperationalError as exc:
            raised.append(StorageError(f"{path} stayed locked by another writer"))
            raised[-1].__cause__ = exc
        busy = await client.call_tool("memory_query", {"query": "tea"})
        assert busy.is_error and "busy, try again" in _text(busy) and path not in _text(busy)
        raised.append(RecursionError("maximum recursion depth exceeded"))
        deep = await client.call_tool("memory_query", {"query": "tea"})
        assert deep.is_error and "nested too deeply" in _text(deep)
        raised.append(RuntimeError(f"secret internals in {path}"))
        crashed = await client.call_tool("memory_query", {"query": "tea"})
        assert crashed.is_error and "failed on the server" in _text(crashed) and path not in _text(crashed)
        assert "secret" not in _text(crashed)


async def test_mcp_refuses_lone_surrogates_and_the_store_answers_afterwards(mcp_client, server_store):
    """The issue: a lone surrogate in a symbol-only query made every later search of the store fail."""
    async with mcp_client as client:
        for name, args in (("memory_query", {"query": "\ud800"}), ("memory_store", {"content": "a\ud800b"}),
                           ("memory_store", {"content": "x", "tags": "a,\udfff"}),
                           ("memory_save", {"content": "x", "category": "\udc00"}),
                           ("memory_reinforce", {"id": "\ud800"}),
                           ("searchKnowledgeBase", {"query": "x", "documentIds": ["\ud800"]})):
            result = await client.call_tool(name, args)
            assert result.is_error and "not valid Unicode" in _text(result), (name, _text(result))
        stored = await client.call_tool("memory_store", {"content": "Alice likes oolong tea"})
        assert not stored.is_error
        found = await client.call_tool("memory_query", {"query": "oolong"})
        assert not found.is_error and "Alice likes oolong tea" in _text(found)
    assert server_store.count(namespace="user:alice") == 1

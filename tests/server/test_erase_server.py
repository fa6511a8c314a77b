"""Erasing a namespace with the server running (issue 25 part 6): through the CLI beside a live
``openkoi-memory serve``, and through ``DELETE /api/namespaces/{namespace}`` while a reader holds an
old snapshot. No byte of the planted string stays in any file under the memory's paths.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from shared_core import MemoryStore

ROOT = Path(__file__).resolve().parents[2]
SECRET = "Wombatrix5Quirk"  # in no other text; FTS5 keeps it lowercased (the stemmer leaves it whole)
NS = "user:wombatrix5quirk"
OTHER = "user:bob"

READER = textwrap.dedent("""
    import sqlite3, sys
    conn = sqlite3.connect(sys.argv[1], isolation_level=None)
    conn.execute("BEGIN")
    conn.execute("SELECT count(*) FROM memory_chunks").fetchone()  # the snapshot is taken here
    print("reading", flush=True)
    sys.stdin.readline()
    conn.execute("COMMIT")
""")


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Server:
    """``openkoi-memory serve --no-auth`` on a free loopback port, in a process of its own."""

    def __init__(self, db: Path) -> None:
        self.port = _free_port()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "shared_core.cli", "--db", str(db), "serve", "--no-auth", "--no-maintenance",
             "--host", "127.0.0.1", "--port", str(self.port), "--log-level", "warning"],
            env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120  # an event to wait for (the server answering), not a speed
        while True:
            try:
                if self.call("GET", "/api/health")[0] == 200:
                    return
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise AssertionError(f"the server did not start: {self.proc.stderr.read() if self.proc.stderr else ''}")
            time.sleep(0.1)

    def call(self, method: str, path: str, body: bytes | dict | None = None,
             content_type: str = "application/json") -> tuple[int, object]:
        data = json.dumps(body).encode() if isinstance(body, dict) else body
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data, method=method,
                                         headers={"Content-Type": content_type} if data is not None else {})
        try:
            with urllib.request.urlopen(request, timeout=120) as answer:
                text = answer.read()
                return answer.status, json.loads(text) if text else None
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"null")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _plant(server: Server, db: Path) -> None:
    """SECRET through the server (a memory, an upload, a text document) and through another process's
    store (a conversation with its transcript, a workspace's files)."""
    quoted = urllib.request.quote(NS)
    for i in range(10):
        assert server.call("POST", f"/api/memories?namespace={quoted}", {"text": f"note {i} on {SECRET}",
                                                                         "dedup": False})[0] == 201
    status, _ = server.call("POST", f"/api/kb/documents?name=upload.txt&namespace={quoted}",
                            f"uploaded {SECRET}".encode(), "application/octet-stream")
    assert status == 201
    assert server.call("POST", f"/api/kb/documents/text?namespace={quoted}",
                       {"text": f"text on {SECRET}", "name": "pasted.txt"})[0] == 201
    with MemoryStore.open(db) as agent:
        agent.conversations.append("chat-secret", "user", f"my code is {SECRET}", namespace=NS)
        agent.memory_manager.memory_save(f"saved {SECRET}", namespace=NS)
        agent.memory_manager.workspace(NS).append("MEMORY.md", f"- {SECRET} matters\n")
    assert server.call("POST", f"/api/memories/search?namespace={quoted}", {"query": SECRET})[0] == 200


def _copies(root: Path) -> dict[str, int]:
    needle = SECRET.lower().encode()
    found = {}
    for path in sorted(root.rglob("*")):
        hits = str(path.relative_to(root)).lower().count(needle.decode())
        if path.is_file():
            hits += path.read_bytes().lower().count(needle)
        if hits:
            found[str(path.relative_to(root))] = hits
    return found


def _pending(db: Path) -> bool:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT 1 FROM store_meta WHERE key = 'erase_pending'").fetchone() is not None
    finally:
        conn.close()


@pytest.mark.sqlite_only  # the files' bytes; PostgreSQL: tests/core/test_erase.py checks every table
def test_erase_beside_a_running_server_leaves_no_byte(tmp_path):
    memory = tmp_path / "memory"
    db = memory / "agent.db"
    with MemoryStore.open(db) as store:
        for i in range(20):
            store.add(f"public note {i} about the garden", namespace=OTHER, dedup=False)
    server = Server(db)
    try:
        _plant(server, db)
        before = _copies(memory)
        for folder in ("sessions", "uploads", "workspaces"):
            assert any(k.startswith(f"agent.db.files/{folder}/") for k in before), (folder, before)

        # 1. from the command line, while the server has the file open
        erased = subprocess.run([sys.executable, "-m", "shared_core.cli", "--db", str(db), "erase", NS],
                                capture_output=True, text=True, env=_env(), timeout=300)
        assert erased.returncode == 0 and erased.stdout.startswith("erased: 'user:wombatrix5quirk'"), \
            erased.stdout + erased.stderr
        assert _copies(memory) == {}
        status, hits = server.call("POST", "/api/memories/search?namespace=user:bob", {"query": "garden"})
        assert status == 200 and len(hits["hits"]) > 0  # type: ignore[index]
        assert NS not in [n["namespace"] for n in server.call("GET", "/api/namespaces")[1]]  # type: ignore[union-attr]

        # 2. through the server itself, while another process reads an old snapshot
        _plant(server, db)
        assert _copies(memory)
        reader = subprocess.Popen([sys.executable, "-c", READER, str(db)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        try:
            assert reader.stdout is not None and reader.stdout.readline().strip() == "reading"
            status, report = server.call("DELETE", f"/api/namespaces/{urllib.request.quote(NS)}")
            assert status == 202 and report["status"] == "pending", report  # type: ignore[index]
            assert report["memories"] > 10 and report["files"]  # type: ignore[index,operator]
            assert not any(str(tmp_path) in text for text in report["remaining"] + report["files"])  # type: ignore[index,operator]
            assert set(_copies(memory)) <= {"agent.db", "agent.db-wal"}  # the rows' old pages only
        finally:
            assert reader.stdin is not None
            reader.stdin.write("\n")
            reader.stdin.flush()
            reader.wait(timeout=60)
        deadline = time.monotonic() + 120  # the server's own thread finishes it: wait for that event
        while _pending(db) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _pending(db)
        assert _copies(memory) == {}
        assert server.call("GET", "/api/health")[0] == 200
    finally:
        server.stop()
    assert _copies(memory) == {}

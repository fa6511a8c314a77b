"""The server beside a stuck writer: another openkoi process holds a write transaction (a notebook
inside ``with store.transaction():``, a long re-embed, a process stopped in a debugger).

Searches, gets and lists answer while it holds; writes get 503 with ``Retry-After`` within the
busy timeout (set short here) instead of waiting for as long as the holder lives. Nothing is
timed: a request that waited for the holder would never return (the holder waits for the test).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from shared_core import MemoryStore
from shared_core.server.rest import create_app

_HOLDER = textwrap.dedent("""
    import os, sys, time
    from shared_core import MemoryStore
    path, ready, release = sys.argv[1:4]
    with MemoryStore.open(path) as store, store.transaction():
        store.add("the holder's uncommitted memory", namespace="held", dedup=False)
        open(ready, "w").close()
        while not os.path.exists(release):
            time.sleep(0.01)
""")


@pytest.mark.parametrize("stopped", [False, True], ids=["holding", "sigstopped"])
def test_searches_answer_and_writes_get_503_while_another_process_holds_the_memory(tmp_path, clock, tokens, token,
                                                                                     base_url, stopped):
    path = tmp_path / "server.db"
    with MemoryStore.open(path, clock=clock, config={"database": {"busy_timeout_s": 1.0}}) as store:
        memory = store.add("the tide table for Tuesday")
        ready, release = tmp_path / "ready", tmp_path / "release"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[2]),
                                                             os.environ.get("PYTHONPATH", "")])}
        holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(path), str(ready), str(release)], env=env,
                                  stderr=subprocess.PIPE, text=True)
        try:
            while not ready.exists():
                assert holder.poll() is None, holder.stderr.read()
                threading.Event().wait(0.01)
            if stopped:
                os.kill(holder.pid, signal.SIGSTOP)
            app = create_app(store, tokens=tokens[0], mcp=False, upload_dir=tmp_path / "uploads")
            with TestClient(app, base_url=base_url, headers={"Authorization": f"Bearer {token}"}) as client:
                search = client.post("/api/memories/search", json={"query": "tide table"})
                assert search.status_code == 200 and [h["memory"]["id"] for h in search.json()["hits"]] == [memory]
                assert client.get(f"/api/memories/{memory}").status_code == 200
                assert client.get("/api/memories").status_code == 200
                write = client.post("/api/memories", json={"text": "a write while the memory is held"})
                assert write.status_code == 503 and write.headers["retry-after"], write.text
                assert str(path) not in write.text
                feedback = client.post(f"/api/memories/{memory}/feedback", json={"signal": "reinforce"})
                assert feedback.status_code == 503
                release.touch()
                if stopped:
                    os.kill(holder.pid, signal.SIGCONT)
                holder.wait(timeout=120)
                assert client.post("/api/memories", json={"text": "a write once it is free"}).status_code == 201
        finally:
            release.touch()
            if holder.poll() is None:
                os.kill(holder.pid, signal.SIGCONT)
                holder.wait(timeout=120)

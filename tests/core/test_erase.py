"""Erase means erased (issue 25 part 6): a planted string leaves every row, file and byte of a memory.

The string goes in through every door that keeps something for a namespace; after
``erase_namespace`` no table row holds it (both backends) and, on SQLite, no byte of any file
under the memory's paths (the database, ``-wal``, ``-shm``, ``-lock`` and the data folder), also
while another process reads an old snapshot during the erase: the erase then says ``pending``,
and finishes once that read ends.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from shared_core import EraseReport, MemoryStore, StorageError
from shared_core.erasure import PENDING_KEY
from shared_core.files import upload_folder

ROOT = Path(__file__).resolve().parents[2]
HAS_SERVER = importlib.util.find_spec("fastapi") is not None  # the REST upload door needs the 'server' extra
SECRET = "Quokkaflux7Zork"  # in no other text; FTS5 keeps it lowercased (the stemmer leaves it whole)
NS = "user:quokkaflux7zork"  # the namespace's name is part of what must go
OTHER = "user:bob"

READER = textwrap.dedent("""
    import sqlite3, sys
    conn = sqlite3.connect(sys.argv[1], isolation_level=None)
    conn.execute("BEGIN")
    conn.execute("SELECT count(*) FROM memory_chunks").fetchone()  # the snapshot is taken here
    print("reading", flush=True)
    sys.stdin.readline()
    conn.execute("COMMIT")
    conn.close()
""")


def _plant(store: MemoryStore, sources: Path, *, namespace: str = NS, upload: bool = False) -> bytes:
    """Store SECRET through every door that keeps something for a namespace; return one memory's vector bytes."""
    for i in range(25):
        store.add(f"public note {i} about the garden", namespace=OTHER, dedup=False)
    for i in range(30):
        store.add(f"remember {SECRET} number {i}", namespace=namespace, tags=[SECRET], metadata={"note": SECRET},
                  dedup=False)
    vector = store.embed([f"remember {SECRET} number 0"])[0].tobytes()
    store.archive(store.add(f"archived {SECRET}", namespace=namespace, dedup=False))
    edited = store.add(f"draft {SECRET} first version", namespace=namespace, dedup=False)
    store.update(edited, f"final {SECRET} second version")  # the draft's bytes stay in free space until a VACUUM
    store.delete(store.add(f"deleted before {SECRET}", namespace=namespace, dedup=False))  # no secure delete then
    store.learnings.add(f"Always check {SECRET} first", namespace=namespace)
    store.conversations.append("chat-secret", "user", f"my code is {SECRET}", namespace=namespace)
    store.conversations.append("chat-secret", "assistant", f"noted {SECRET}", namespace=namespace)
    store.episodes.add(f"met about {SECRET}", namespace=namespace)
    store.procedures.add(f"open {SECRET}", [f"turn the {SECRET} key"], namespace=namespace)
    store.insights.upsert(f"Insight on {SECRET}", f"details of {SECRET}", namespace=namespace)
    store.kv.put(f"key-{SECRET}", {"value": SECRET}, namespace=namespace)
    store.usage.log("task", description=f"worked on {SECRET}", namespace=namespace)
    task = store.tasks.start(f"task about {SECRET}", namespace=namespace)
    task.cycle(score=0.5)
    task.finding("high", "correctness", f"finding on {SECRET}")
    task.complete(final_score=0.9)
    sources.mkdir(parents=True, exist_ok=True)
    (sources / "notes.md").write_text(f"# Notes\n\nThe vault code is {SECRET}.\n", encoding="utf-8")
    store.documents.ingest(sources, namespace=namespace)  # the user's own file stays; its text and chunks go
    store.documents.ingest_text(f"text document on {SECRET}", name="pasted.txt", namespace=namespace)
    if store.memory_manager.workspace(namespace) is not None:
        store.memory_manager.memory_save(f"saved {SECRET}", namespace=namespace)  # also the workspace's daily log
        store.memory_manager.workspace(namespace).append("MEMORY.md", f"- {SECRET} matters\n")
    if upload:
        _upload(store, namespace)
    store.search(SECRET, namespace=namespace)  # access counts and co-recall links
    return vector


def _upload(store: MemoryStore, namespace: str) -> None:
    from starlette.testclient import TestClient

    from shared_core.server.rest import create_app

    with TestClient(create_app(store, tokens=None, mcp=False), base_url="http://127.0.0.1:3415") as client:
        answer = client.post("/api/kb/documents", params={"name": "upload.txt", "namespace": namespace},
                             content=f"uploaded {SECRET}".encode(), headers={"content-type": "application/octet-stream"})
    assert answer.status_code == 201, answer.text


def _copies(root: Path, *needles: bytes) -> dict[str, int]:
    """Where the needles are under ``root``: in each file's bytes (case-insensitively for text) and in names."""
    found: dict[str, int] = {}
    for path in sorted(root.rglob("*")):
        name = str(path.relative_to(root))
        hits = sum(name.lower().count(n.decode("latin-1").lower()) for n in needles if n.isascii())
        if path.is_file():
            data = path.read_bytes()
            hits += sum(data.lower().count(n.lower()) if n.isascii() else data.count(n) for n in needles)
        if hits:
            found[name] = hits
    return found


def _text_of_every_table(store: MemoryStore) -> str:
    """Every value of every table (shadow tables of the indexes too), as text, for 'no row keeps it' checks."""
    db = store.db
    if db.dialect == "postgresql":
        tables = [r[0] for r in db.query(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = ? AND table_type = 'BASE TABLE'",
            (db.schema,))]
        return "\n".join(str(r[0]) for t in tables for r in db.query(f'SELECT t::text FROM "{t}" t'))
    tables = [r[0] for r in db.query("SELECT name FROM sqlite_master WHERE type = 'table'")]
    parts = []
    for table in tables:
        for row in db.query(f'SELECT * FROM "{table}"'):
            parts += [v.decode("latin-1") if isinstance(v, bytes) else str(v) for v in row]
    return "\n".join(parts)


def _indexed(store: MemoryStore, namespace: str) -> int:
    return int(store.db.scalar("SELECT count(*) FROM memory_chunks WHERE namespace = ?", (namespace,)))


def _reader(path: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", READER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "reading"
    return proc


def _end(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None
    proc.stdin.write("\n")
    proc.stdin.flush()
    assert proc.wait(timeout=60) == 0


def _until(check, timeout: float = 120.0) -> bool:
    """Poll ``check()`` until true (a generous bound: the test waits for an event, not for a speed)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return check()


def _cli(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "shared_core.cli", "--db", str(db), *args], capture_output=True,
                          text=True, env=env, timeout=300)


# -- every file, with a reader holding a snapshot ---------------------------------------------------


@pytest.mark.sqlite_only  # the file's bytes; PostgreSQL: test_every_table_loses_the_namespace below
def test_a_planted_string_leaves_every_file_while_a_reader_holds_a_snapshot(tmp_path):
    memory = tmp_path / "memory"
    path = memory / "agent.db"
    with MemoryStore.open(path) as store:
        vector = _plant(store, tmp_path / "sources", upload=HAS_SERVER)
        before = _copies(memory, SECRET.encode(), vector)
        assert store.db.scalar("SELECT count(*) FROM memory_fts_vocab WHERE term = ?", (SECRET.lower(),))
        # the string reached the database, the log, the transcripts, the uploads and the workspace
        assert any(k.startswith("agent.db") and ".files" not in k for k in before), before
        for folder in ("sessions", "workspaces", *(("uploads",) if HAS_SERVER else ())):
            assert any(k.startswith(f"agent.db.files/{folder}/") for k in before), (folder, before)
        indexed = _indexed(store, NS)
        reader = _reader(path)
        try:
            report = store.erase_namespace(NS)
            assert isinstance(report, EraseReport) and report.status == "pending" and not report.complete
            assert report.memories == indexed and report.deleted["raw_messages"] == 2
            assert report.deleted["rag_documents"] == 2 + HAS_SERVER  # a local file, a text and an upload
            assert any("snapshot" in r and "--verify" in r for r in report.remaining), report.remaining
            assert {Path(f).parent.name for f in report.files} >= {"sessions", "memory", *(
                (upload_folder(Path(), NS).name,) if HAS_SERVER else ())}
            during = _copies(memory, SECRET.encode(), vector)
            # what the reader still sees cannot be dropped yet: only the database and its log hold it
            assert during and all(k in ("agent.db", "agent.db-wal") for k in during), during
            assert not store.verify_erase(NS).complete
            assert store.count(namespace=NS) == 0 and store.count(namespace=OTHER) == 25
        finally:
            _end(reader)
        # the store's own thread finishes the erase once the read has ended
        assert _until(lambda: store.verify_erase(NS).complete), store.verify_erase(NS).remaining
        assert _copies(memory, SECRET.encode(), vector) == {}
        assert store.search("garden", namespace=OTHER, limit=30).ids and store.count(namespace=OTHER) == 25
        assert store.db.scalar("PRAGMA integrity_check") == "ok"
    assert _copies(memory, SECRET.encode(), vector) == {}
    assert (tmp_path / "sources" / "notes.md").read_text(encoding="utf-8").count(SECRET) == 1  # the user's own file


@pytest.mark.sqlite_only
def test_without_a_reader_the_erase_is_complete_at_once(tmp_path):
    memory = tmp_path / "memory"
    with MemoryStore.open(memory / "agent.db") as store:
        vector = _plant(store, tmp_path / "sources")
        report = store.erase_namespace(NS)
        assert report.complete and report.status == "erased" and report.remaining == () and report.notes == ()
        assert store.db.get_meta(PENDING_KEY) is None
        assert _copies(memory, SECRET.encode(), vector) == {}
        assert "erased: 'user:quokkaflux7zork'" in str(report) and json.loads(json.dumps(report.to_dict()))["complete"]


@pytest.mark.sqlite_only
def test_stale_index_statistics_lose_the_namespace_too(tmp_path):
    """ANALYZE (migrate-backend runs it) samples index keys into sqlite_stat4: the namespace's name among them."""
    memory = tmp_path / "memory"
    with MemoryStore.open(memory / "agent.db") as store:
        for i in range(40):
            store.add(f"note {i}", namespace=NS, dedup=False)
            store.add(f"note {i}", namespace=OTHER, dedup=False)
        store.db.execute("ANALYZE")
        if not store.db.scalar("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_stat4'"):
            pytest.skip(f"this SQLite build ({store.db.driver.sqlite_version}) keeps no sampled keys (no STAT4)")
        assert SECRET.lower() in str(store.db.query("SELECT sample FROM sqlite_stat4")).lower()
        assert store.erase_namespace(NS).complete
        assert store.db.scalar("SELECT count(*) FROM sqlite_stat4")  # rebuilt, not dropped
    assert _copies(memory, SECRET.encode()) == {}


# -- every table, on both backends --------------------------------------------------------------


def test_every_table_loses_the_namespace(tmp_path, backend):
    with MemoryStore.open(tmp_path / "memory" / "agent.db") as store:
        _plant(store, tmp_path / "sources")
        assert SECRET.lower() in _text_of_every_table(store).lower()
        indexed = _indexed(store, NS)
        report = store.erase_namespace(NS)
        assert report.complete and report.memories == indexed > 30 and report.deleted["sessions"] == 1
        text = _text_of_every_table(store).lower()
        assert SECRET.lower() not in text
        assert store.count(namespace=OTHER) == 25 and store.search("garden", namespace=OTHER).ids
        assert store.verify_erase(NS).complete
        if backend == "postgres":  # what the server keeps is said, not hidden
            assert report.notes and "WAL" in report.notes[0] and "backups" in report.notes[0]


def test_verify_reports_what_was_written_after_the_erase(tmp_path):
    with MemoryStore.open(tmp_path / "memory" / "agent.db") as store:
        store.add("first", namespace=NS)
        assert store.erase_namespace(NS).complete
        store.add("written later", namespace=NS)
        stray = upload_folder(Path(store.data_dir) / "uploads", NS) / "late.txt"
        stray.parent.mkdir(parents=True)
        stray.write_text("late upload")
        check = store.verify_erase(NS)
        assert not check.complete and check.action == "verify" and check.deleted == {}
        assert any("memory_chunks (1)" in r for r in check.remaining), check.remaining
        assert any(str(stray) in r for r in check.remaining), check.remaining
        assert str(check).startswith("2 thing(s) of 'user:quokkaflux7zork' remain")
        assert store.erase_namespace(NS).complete and not stray.exists() and store.verify_erase(NS).complete


def test_an_in_memory_store_erases_completely(store):
    store.add(f"in memory {SECRET}", namespace=NS)
    report = store.erase_namespace(NS)
    assert report.complete and report.memories == 1 and store.count(namespace=NS) == 0


# -- pending, and finishing later --------------------------------------------------------------------


@pytest.mark.sqlite_only
def test_the_cli_verifies_and_finishes_an_erase_another_process_left_pending(tmp_path):
    memory = tmp_path / "memory"
    path = memory / "agent.db"
    with MemoryStore.open(path) as store:
        _plant(store, tmp_path / "sources")
        indexed = _indexed(store, NS)
    reader = _reader(path)
    try:
        erased = _cli(path, "erase", NS, "--json")
        assert erased.returncode == 3, erased.stderr  # pending
        body = json.loads(erased.stdout)
        assert body["status"] == "pending" and body["memories"] == indexed and body["remaining"]
        check = _cli(path, "erase", NS, "--verify")
        assert check.returncode == 3 and "unfinished" in check.stdout, check.stdout
        assert _copies(memory, SECRET.encode())  # still in the database or its log
    finally:
        _end(reader)
    finished = _cli(path, "erase", "--finish")
    assert finished.returncode == 0 and finished.stdout.startswith("erased"), finished.stdout + finished.stderr
    assert _cli(path, "erase", NS, "--verify").returncode == 0
    assert _copies(memory, SECRET.encode()) == {}


@pytest.mark.sqlite_only
def test_opening_or_maintaining_the_memory_finishes_a_pending_erase(tmp_path):
    path = tmp_path / "memory" / "agent.db"
    with MemoryStore.open(path) as store:
        store.add(f"a {SECRET} fact", namespace=NS)
        reader = _reader(path)
        try:
            assert store.erase_namespace(NS).status == "pending"
        finally:
            store.close()  # its own retries stop with it: the marker stays in the file
            _end(reader)
    with MemoryStore.open(path, config={"database": {"background_checkpoints": False}}) as store:
        assert store.db.get_meta(PENDING_KEY) is None  # the open finished it
    assert _copies(path.parent, SECRET.encode()) == {}
    with MemoryStore.open(path) as store:
        store.add(f"again {SECRET}", namespace=NS)
        reader = _reader(path)
        try:
            assert store.erase_namespace(NS).status == "pending"
            store.erasure.stop_finisher()  # leave it to maintenance
            report = store.maintain(steps=["finish_erase"])
            assert not report.steps[0].changed and "still pending" in report.steps[0].summary
        finally:
            _end(reader)
        report = store.maintain(steps=["finish_erase"])
        assert report.steps[0].changed and report.steps[0].summary == "pending erase finished"
        assert store.maintain(steps=["finish_erase"]).steps[0].summary == "no erase pending"
    assert _copies(path.parent, SECRET.encode()) == {}


WRITER = textwrap.dedent("""
    import sqlite3, sys
    conn = sqlite3.connect(sys.argv[1], isolation_level=None)
    sys.stdin.readline()
    conn.execute("BEGIN IMMEDIATE")  # the write lock, held until told
    print("writing", flush=True)
    sys.stdin.readline()
    conn.execute("COMMIT")
""")


@pytest.mark.sqlite_only
def test_a_writer_in_the_way_of_the_rewrite_leaves_it_pending_and_finish_erase_completes_it(tmp_path):
    path = tmp_path / "memory" / "agent.db"
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        with MemoryStore.open(path, config={"database": {"busy_timeout_s": 0.5}}) as store:
            store.add(f"a {SECRET} fact", namespace=NS)
            store.update(store.add(f"draft {SECRET}", namespace=NS, dedup=False), f"final {SECRET}")

            def take_the_lock() -> None:  # the moment the erase's rows are committed, before the rewrite
                assert writer.stdin is not None and writer.stdout is not None
                writer.stdin.write("\n")
                writer.stdin.flush()
                assert writer.stdout.readline().strip() == "writing"

            store.kernel.hooks.erasers.append(lambda namespace: store.db.after_commit(take_the_lock))
            report = store.erase_namespace(NS)
            assert report.status == "pending" and "not rewritten yet" in report.remaining[0], report.remaining
            assert json.loads(store.db.get_meta(PENDING_KEY))["stage"] == "vacuum"
            assert store.count(namespace=NS) == 0 and not store.verify_erase(NS).complete
            _end(writer)
            assert store.finish_erase(wait=120).complete and store.verify_erase(NS).complete
    finally:
        writer.kill()
        writer.wait()
    assert _copies(path.parent, SECRET.encode()) == {}


def test_an_erase_inside_a_transaction_is_refused(tmp_path):
    with MemoryStore.open(tmp_path / "agent.db") as store:
        store.add("kept", namespace=NS)
        with pytest.raises(StorageError, match="cannot run inside store.transaction"), store.transaction():
            store.erase_namespace(NS)
        assert store.count(namespace=NS) == 1


@pytest.mark.sqlite_only
def test_finish_erase_waits_for_the_reader_when_asked(tmp_path):
    import threading

    path = tmp_path / "memory" / "agent.db"
    with MemoryStore.open(path) as store:
        store.add(f"a {SECRET} fact", namespace=NS)
        reader = _reader(path)
        try:
            assert store.erase_namespace(NS).status == "pending"
            store.erasure.stop_finisher()
            assert not store.finish_erase().complete  # no wait: the reader is still there
        except BaseException:
            _end(reader)
            raise
        ender = threading.Thread(target=_end, args=(reader,))
        ender.start()
        try:
            assert store.finish_erase(wait=120).complete  # returns once the read has ended
        finally:
            ender.join()
    assert _copies(path.parent, SECRET.encode()) == {}


def test_the_erase_command_needs_a_namespace(tmp_path):
    path = tmp_path / "memory" / "agent.db"
    MemoryStore.open(path).close()
    from click.testing import CliRunner

    from shared_core.cli import main

    runner = CliRunner()
    missing = runner.invoke(main, ["--db", str(path), "erase"])
    assert missing.exit_code == 2 and "name the namespace" in missing.output
    both = runner.invoke(main, ["--db", str(path), "erase", "--verify", "--finish"])
    assert both.exit_code == 2 and "cannot be combined" in both.output
    nothing = runner.invoke(main, ["--db", str(path), "erase", "--verify"])
    assert nothing.exit_code == 0 and nothing.output.startswith("nothing remains\n")  # PostgreSQL adds its notes


def test_the_privacy_page_examples_run(tmp_path, monkeypatch):
    doc = ROOT / "docs" / "privacy.md"
    blocks = re.findall(r"```python\n(.*?)```", doc.read_text(encoding="utf-8"), flags=re.DOTALL)
    assert len(blocks) == 2
    monkeypatch.chdir(tmp_path)
    for index, block in enumerate(blocks):
        exec(compile(block, f"{doc.name}[python {index + 1}]", "exec"), {"__name__": "docs_example"})  # noqa: S102
    assert not list((tmp_path / "agent.db.files" / "sessions").glob("*.jsonl"))

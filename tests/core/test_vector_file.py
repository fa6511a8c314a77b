"""The vector index file beside an SQLite memory (shared_core/index/vector_file.py): a new store maps
it instead of reading the vectors, it follows a process that is writing, a process killed in the
middle of writing it leaves a file the next open searches correctly with, and a file that cannot be
trusted (missing, torn, cut short, ahead of its database, of another database, behind a trimmed
log) is rebuilt from the rows."""

from __future__ import annotations

import json
import mmap
import os
import shutil
import struct
import subprocess
import sys
import textwrap
import zlib
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from shared_core import MemoryStore
from shared_core.embed import HashingEmbedder
from shared_core.index.codes import sign_code
from shared_core.index.mirror import stamp_hash
from shared_core.index.protocols import epoch_of, stamp_of
from shared_core.index.scope import Scope
from shared_core.index.vector_file import (
    _CRC,
    _HEADER,
    PAGE,
    VERSION,
    VectorFile,
    current_boot,
    file_path,
    unused_ranges,
)

ROOT = Path(__file__).resolve().parents[2]
# The hashing embedder throughout: these texts differ only in numbers, which the default static
# embedder does not read, so its vectors would tie and exact and fast searches could order them apart.
pytestmark = pytest.mark.sqlite_only  # the SQLite backend's index; PostgreSQL keeps vectors in pgvector


def _check(store: MemoryStore) -> None:
    """The mirror holds exactly the rows that have a vector, each with its stored vector, sign bits and
    stamp, and its searches agree with sqlite-vec's exact ones."""
    index = store.kernel.memories.vectors
    mirror = index.sync()
    stored = {int(r): np.frombuffer(b, dtype=np.float32) for r, b in store.db.query(
        "SELECT chunk_rowid, embedding FROM memory_vec")}
    stamps = {int(r): stamp_hash(stamp_of(e, h)) for r, e, h in store.db.query(
        "SELECT chunk_rowid, embedded_at, content_hash FROM memory_chunks")}
    created = dict(store.db.query("SELECT chunk_rowid, created_at FROM memory_chunks"))
    live = np.flatnonzero(mirror.alive[: mirror.size])
    assert sorted(int(r) for r in mirror.rowids[live]) == sorted(stored)
    for rowid, vector in stored.items():
        slot = mirror.slot_of(rowid)
        assert slot is not None and np.array_equal(mirror.vectors[slot], vector)
        assert np.array_equal(mirror.codes[:, slot], sign_code(vector, mirror.words))
        assert int(mirror.stamp[slot]) == stamps[rowid]
        assert mirror.created[slot] == epoch_of(created[rowid])
    scope = Scope(namespaces=None, current_only=False)
    for rowid, query in sorted(stored.items())[:: max(1, len(stored) // 5)]:
        found = index.search(query, 5, scope, now=0.0)
        assert found[0][0] == rowid
        assert [r for r, _ in found] == [r for r, _ in index._search_sqlite_vec(query, 5, scope)]


def _header(path: Path):
    return VectorFile(file_path(str(path))).read_header()[0]


def test_a_new_store_maps_the_file_instead_of_reading_the_vectors(tmp_path):
    path = tmp_path / "m.db"
    with MemoryStore.open(path, embedder=HashingEmbedder()) as store:
        ids = store.add_many([f"note {i} about the topic {i % 7}" for i in range(600)])
    assert file_path(str(path)).exists()
    with MemoryStore.open(path, embedder=HashingEmbedder()) as store:
        seen: list[str] = []
        store.db.conn.set_trace_callback(seen.append)
        hits = store.search("note 5 about the topic 5", fusion="vector", limit=3).ids
        store.db.conn.set_trace_callback(None)
        assert ids[5] in hits
        assert not [s for s in seen if "memory_vec" in s]  # no vector was read from SQLite
        assert store.kernel.memories.vectors._mirror.file_backed
        _check(store)


WRITER = textwrap.dedent(
    """
    import json, sys
    sys.path.insert(0, {root!r})
    from shared_core import MemoryStore
    from shared_core.embed import HashingEmbedder
    with MemoryStore.open({path!r}, embedder=HashingEmbedder()) as store:
        for i in range({rounds}):
            ids = store.add_many([f"round {{i}} memory {{j}} of the writer" for j in range(40)], batch_size=40)
            if i % 5 == 4:
                store.delete(ids[:3])
                ids = ids[3:]
            print(json.dumps(ids), flush=True)
    """
)


def test_a_store_opened_while_another_process_writes_finds_every_committed_memory(tmp_path):
    path = tmp_path / "shared.db"
    MemoryStore.open(path, embedder=HashingEmbedder()).close()
    proc = subprocess.Popen([sys.executable, "-c", WRITER.format(root=str(ROOT), path=str(path), rounds=40)],
                            stdout=subprocess.PIPE, text=True)
    committed: list[str] = []
    assert proc.stdout is not None
    for n, line in enumerate(proc.stdout):
        committed += json.loads(line)
        if n % 4 == 0:  # a cold open, as a new process would: every acknowledged memory is searchable
            with MemoryStore.open(path, embedder=HashingEmbedder()) as store:
                mirror = store.kernel.memories.vectors.sync()
                rowids = np.array([store.get(i).rowid for i in committed], dtype=np.int64)
                slots = mirror.slots_of(rowids)
                assert (slots >= 0).all() and mirror.alive[slots].all()
    assert proc.wait(timeout=600) == 0
    with MemoryStore.open(path, embedder=HashingEmbedder()) as store:
        assert store.count() == len(committed) == 40 * 40 - 8 * 3
        _check(store)
    assert _header(path) is not None and _header(path).capacity > 1024  # it grew: written anew along the way


KILLED = textwrap.dedent(
    """
    import os, signal, sys
    sys.path.insert(0, {root!r})
    from shared_core import MemoryStore
    from shared_core.embed import HashingEmbedder
    from shared_core.index import vector_file

    def stop(stage):
        if stage == {stage!r}.split("@")[0] and armed:
            os.kill(os.getpid(), signal.SIGKILL)

    armed = False
    vector_file.write_hook = stop
    store = MemoryStore.open({path!r}, embedder=HashingEmbedder())
    ids = store.add_many([f"memory {{j}} before the crash" for j in range(300)], batch_size=300)
    armed = True
    if {stage!r}.endswith("@append"):  # new rows written straight into the file by a bulk load
        for i in range(3):
            store.add_many([f"memory {{j}} of batch {{i}}" for j in range(50)], batch_size=50)
    elif {stage!r} == "whole:rename":  # past the file's 1,024 slots: it is written anew
        for i in range(10):
            store.add_many([f"memory {{j}} of batch {{i}}" for j in range(100)], batch_size=100)
    else:  # new vectors for rows the file holds: saved in place once 256 changed
        for n, memory_id in enumerate(ids):
            store.update(memory_id, f"rewritten memory {{n}} with other words")
    print("not killed", flush=True)
    """
)


@pytest.mark.parametrize("stage", ["slots:q", "slots:stamp", "slots:header", "whole:rename", "slots:q@append",
                                   "slots:header@append"])
def test_a_process_killed_while_it_writes_the_file_leaves_one_the_next_open_searches_correctly(tmp_path, stage):
    path = tmp_path / "killed.db"
    MemoryStore.open(path, embedder=HashingEmbedder()).close()
    proc = subprocess.run([sys.executable, "-c", KILLED.format(root=str(ROOT), path=str(path), stage=stage)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == -9 and "not killed" not in proc.stdout, proc.stderr
    with MemoryStore.open(path, embedder=HashingEmbedder()) as store:
        _check(store)
        if stage in ("slots:q", "slots:stamp", "slots:header"):
            assert store.search("rewritten memory 7 with other words", fusion="vector", limit=1).ids
    assert _header(path) is not None


def _spoil_missing(path: Path, file: Path) -> None:
    file.unlink()


def _spoil_torn(path: Path, file: Path) -> None:
    with open(file, "r+b") as f:
        f.seek(20)
        f.write(b"\xff" * 16)


def _spoil_cut_short(path: Path, file: Path) -> None:
    with open(file, "r+b") as f:
        f.truncate(file.stat().st_size // 3)


def _spoil_names(path: Path, file: Path) -> None:
    header = VectorFile(file).read_header()[0]
    with open(file, "r+b") as f:
        f.seek(header.names_offset)
        f.write(b"{")


def _spoil_version(path: Path, file: Path) -> None:
    """The header of the file's previous format (before the created column), whole and checksummed."""
    with open(file, "r+b") as f:
        body = bytearray(f.read(_HEADER.size))
        struct.pack_into("<I", body, 8, VERSION - 1)
        f.seek(0)
        f.write(bytes(body) + _CRC.pack(zlib.crc32(bytes(body))))


SPOILERS = {"missing": _spoil_missing, "torn header": _spoil_torn, "cut short": _spoil_cut_short,
            "torn names": _spoil_names, "an older format": _spoil_version}


@pytest.mark.parametrize("how", list(SPOILERS))
def test_a_missing_or_damaged_file_is_rebuilt_from_the_rows(tmp_path, how):
    path = tmp_path / "d.db"
    with MemoryStore.open(path, embedder=HashingEmbedder()) as store:
        store.add_many([f"memory {i} about the harbour" for i in range(400)])
    SPOILERS[how](path, file_path(str(path)))
    with MemoryStore.open(path, embedder=HashingEmbedder()) as store:
        _check(store)
        newest = int(store.db.scalar("SELECT max(seq) FROM index_log"))
    header = _header(path)
    assert header is not None and header.size == 400 and header.seq == newest


def test_a_file_ahead_of_its_database_is_rebuilt(tmp_path):
    path = tmp_path / "a.db"
    with MemoryStore.open(path, embedder=HashingEmbedder()) as store:
        store.add_many([f"early memory {i}" for i in range(300)])
    backup = tmp_path / "backup.db"
    shutil.copy(path, backup)
    with MemoryStore.open(path, embedder=HashingEmbedder()) as store:
        store.add_many([f"later memory {i}" for i in range(300)])
    shutil.copy(backup, path)  # the database restored from its backup; the vector file is the newer one
    with MemoryStore.open(path, embedder=HashingEmbedder()) as store:
        assert store.count() == 300
        _check(store)
        assert store.search("later", fusion="keyword").ids == []


def test_a_file_of_another_database_is_rebuilt(tmp_path):
    one, other = tmp_path / "one.db", tmp_path / "other.db"
    with MemoryStore.open(one, embedder=HashingEmbedder()) as store:
        store.add_many([f"first database memory {i}" for i in range(300)])
    with MemoryStore.open(other, embedder=HashingEmbedder()) as store:
        store.add_many([f"second database note {i}" for i in range(300)])
        store.delete(store.search("second database note", fusion="keyword", limit=1).ids)
        store.add("one more to move the log")
    shutil.copy(file_path(str(other)), file_path(str(one)))
    with MemoryStore.open(one, embedder=HashingEmbedder()) as store:
        _check(store)


def test_a_file_behind_a_trimmed_log_is_rebuilt(tmp_path):
    path = tmp_path / "t.db"
    with MemoryStore.open(path, embedder=HashingEmbedder()) as store:
        store.add_many([f"memory {i} of the first lot" for i in range(300)])
    old = tmp_path / "old.idx"
    shutil.copy(file_path(str(path)), old)
    with MemoryStore.open(path, embedder=HashingEmbedder()) as store:
        store.add_many([f"memory {i} of the second lot" for i in range(300)])
        store.db.execute("DELETE FROM index_log WHERE seq <= (SELECT max(seq) FROM index_log) - 10")
    shutil.copy(old, file_path(str(path)))  # from before the trim: the log no longer reaches back to it
    with MemoryStore.open(path, embedder=HashingEmbedder()) as store:
        _check(store)
        assert store.count() == 600


def test_a_closed_store_leaves_a_file_a_crash_of_the_machine_cannot_spoil(tmp_path):
    path = tmp_path / "c.db"
    store = MemoryStore.open(path, embedder=HashingEmbedder())
    store.add_many([f"memory {i} kept over a restart" for i in range(300)], batch_size=100)  # saves 2 and 3: unsynced
    store.add("one more, written on its own")
    assert _header(path).boot == current_boot()  # trusted in this boot only, until it is synced
    store.close()  # the store object lives on: its finalizer has not run
    header = _header(path)
    assert header is not None and header.boot == 0  # synced and marked so: trusted in any later boot
    assert store.closed


def test_an_unsynced_file_from_an_earlier_boot_is_rebuilt(tmp_path):
    path = tmp_path / "b.db"
    with MemoryStore.open(path, embedder=HashingEmbedder()) as store:
        store.add_many([f"memory {i} of the day before" for i in range(300)])
    vector_file = VectorFile(file_path(str(path)))
    header, inode = vector_file.read_header()
    assert header is not None
    earlier = replace(header, boot=current_boot() ^ 0x5A5A)  # saved without a sync, before a restart
    with open(vector_file.path, "r+b") as f:
        f.write(earlier.pack())
    with MemoryStore.open(path, embedder=HashingEmbedder()) as store:
        _check(store)
    header, rebuilt = vector_file.read_header()
    assert header is not None and header.boot in (0, current_boot()) and rebuilt != inode


def test_a_mapped_file_does_not_read_ahead_into_the_slots_rows_will_be_appended_to(tmp_path, monkeypatch):
    # those slots are holes: a fault there read ahead read_ahead_kb of zeros (8 MB: 1-2 ms a column)
    path = tmp_path / "h.db"
    with MemoryStore.open(path, embedder=HashingEmbedder()) as store:
        store.add_many([f"memory {i} of a sparse file" for i in range(300)])
    advised = []

    class Recording(mmap.mmap):
        def madvise(self, option, start=0, length=None):
            advised.append((option, start, start + length))
            return super().madvise(option, start, length)

    monkeypatch.setattr(mmap, "mmap", Recording)
    header, columns, *_ = VectorFile(file_path(str(path))).map()
    ranges = [(start, stop) for option, start, stop in advised if option == mmap.MADV_RANDOM]
    assert ranges == unused_ranges(header.dims, header.capacity, header.size)
    base = np.frombuffer(columns["centre"], dtype=np.uint8).ctypes.data - PAGE
    for name, array in columns.items():
        if name == "centre":
            continue
        runs = array if array.shape[-1] == header.capacity and array.ndim == 2 else [array]
        for run in runs:
            used_end, last = (run[slot:].ctypes.data - base for slot in (header.size, header.capacity - 1))
            first = used_end - used_end % mmap.PAGESIZE  # rows' data before that page: not advised
            assert any(start == first and last < stop for start, stop in ranges), name


def test_a_reader_reads_only_the_new_rows_vectors(tmp_path, monkeypatch):
    path = tmp_path / "r.db"
    with MemoryStore.open(path, embedder=HashingEmbedder()) as reader, MemoryStore.open(path, embedder=HashingEmbedder()) as writer:
        writer.add_many([f"memory {i} written first" for i in range(300)])
        reader.search("memory written first", fusion="vector")
        keeper = reader.kernel.memories.vectors._keeper
        fetched: list[int] = []
        vectors = keeper._vectors
        monkeypatch.setattr(keeper, "_vectors", lambda rowids: fetched.extend(rowids) or vectors(rowids))
        new = [writer.add(f"a new memory number {i} about sailing", dedup=False) for i in range(10)]
        writer.update(new[0], "a changed memory about rowing boats")
        hits = reader.search("a changed memory about rowing boats", fusion="vector", limit=3).ids
        assert hits[0] == new[0]
        assert sorted(fetched) == sorted(reader.get(i).rowid for i in new)  # and nothing else
        _check(reader)


def test_an_erase_scrubs_the_erased_vectors_from_the_file(tmp_path):
    path = tmp_path / "e.db"
    with MemoryStore.open(path, embedder=HashingEmbedder()) as store:
        store.add_many([f"public memory {i}" for i in range(300)], namespace="keep")
        secret = store.add("the combination is 4-8-15-16", namespace="gone")
        vector = store.kernel.memories.vectors.vectors_of([store.get(secret).rowid])
        blob = next(iter(vector.values())).tobytes()
        store.search("combination", namespace="gone")
        assert blob in file_path(str(path)).read_bytes() or store.kernel.memories.vectors._mirror.size > 300
        store.erase_namespace("gone")
        _check(store)
    data = b"".join(p.read_bytes() for p in file_path(str(path)).parent.iterdir() if p.is_file())
    assert blob not in data and b'"gone"' not in data


def test_a_reembed_with_other_dimensions_builds_a_new_file(tmp_path):
    from shared_core import HashingEmbedder

    path = tmp_path / "re.db"
    with MemoryStore.open(path, embedder=HashingEmbedder(384)) as store:
        store.add_many([f"memory {i} before the new embedder" for i in range(300)])
        store.search("memory before", fusion="vector")
    assert _header(path).dims == 384
    with MemoryStore.open(path, embedder=HashingEmbedder(256), reembed=True) as store:
        assert store.search("memory 7 before the new embedder", fusion="vector", limit=1).ids
        _check(store)
    assert _header(path).dims == 256


@pytest.mark.skipif(not hasattr(os, "posix_fadvise"), reason="no posix_fadvise on this platform")
def test_scattered_rows_are_asked_of_the_disk_together(tmp_path, monkeypatch):
    """The rows a search or an add reads from the file (its candidates' vectors) are announced to the
    kernel before the first is read, so an uncached file reads them together (about half the time of
    one read after another on this machine's disk) instead of one disk read waiting for the last."""
    from shared_core.index.vector_file import RowReader

    rows = np.arange(40, dtype=np.float32).reshape(10, 4)
    path = tmp_path / "rows.bin"
    path.write_bytes(b"head" + rows.tobytes())
    calls: list[tuple] = []
    advise, pread = os.posix_fadvise, os.pread
    monkeypatch.setattr(os, "posix_fadvise", lambda *a: calls.append(("advise", *a[1:])) or advise(*a))
    monkeypatch.setattr(os, "pread", lambda fd, n, at: calls.append(("read", n, at)) or pread(fd, n, at))
    reader = RowReader(os.open(path, os.O_RDONLY), {"vectors": (4, np.float32, (10, 4))})
    assert np.array_equal(reader.rows("vectors", np.array([7, 2, 5])), rows[[7, 2, 5]])
    assert calls == [("advise", 4 + 16 * s, 16, os.POSIX_FADV_WILLNEED) for s in (7, 2, 5)] + [
        ("read", 16, 4 + 16 * s) for s in (7, 2, 5)]
    calls.clear()
    assert np.array_equal(reader.rows("vectors", np.array([3])), rows[[3]])
    assert calls == [("read", 16, 4 + 16 * 3)]  # one row: nothing to read together

    def refuse(*args):
        raise OSError(22, "Invalid argument")

    monkeypatch.setattr(os, "posix_fadvise", refuse)  # a file system without the advice reads as before
    assert np.array_equal(reader.rows("vectors", np.array([9, 0])), rows[[9, 0]])

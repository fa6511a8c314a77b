"""The vector index file: the compact codes of every vector of a memory, beside its database.

``<data folder>/vectors.idx`` holds, for each row that has a vector, what the scans need and
nothing more: its sign bits (raw and centred), its vector in int8 with a scale, its row id,
its filter columns (namespace, kind, expiry, current, alive) and a hash of its embedding stamp.
And the vector itself in float32, read only for the few final candidates of a search (SQLite's
vec0 table answers a point lookup in about 0.25 ms: too slow for the hundred of a search).
A new process maps it (copy-on-write: its own later changes stay private) instead of reading
every vector out of SQLite, so opening a memory of a million rows takes milliseconds, and the
pages are the operating system's, shared by every process that maps the file.

**Consistency.** The file is derived data. Its header names its database (``store_id``) and
says which ``index_log`` sequence number it reflects (and the row id logged there); a process catches up from the log past that number, as it does
between searches. A process writes the file only after its transaction committed, under an
exclusive lock on ``vectors.idx.lock``, in this order: vector columns, then the state columns
and stamps, then the header (with a CRC). A process killed half-way leaves the old header, so
the next open replays the log from the old number; a slot written before the kill either has
its new stamp and its new codes, or its old stamp (and is re-read from SQLite). A header that
is torn, of another version or dimension, ahead of the database, or older than the log's
oldest entry means the file is rebuilt from the rows. Capacity is fixed per file; growing, or
compacting away deleted rows, writes a new file beside it and renames it over the old one (a
process that still maps the old one notices the new inode and reloads).
"""

from __future__ import annotations

import json
import mmap
import os
import struct
import weakref
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no file locks here, so no shared file (the index stays in memory)
    fcntl = None  # type: ignore[assignment]

__all__ = ["Header", "RowReader", "VectorFile", "column_specs", "copy_slots", "current_boot", "file_path", "supported",
           "trusted", "unused_ranges"]

MAGIC = b"OKVECIX1"
VERSION = 2  # 2: the created column (a file of version 1 is rebuilt from the rows)
PAGE = 4096
_HEADER = struct.Struct("<8sIIQQQQqQQQQQQI")  # magic, version, dims, capacity, size, sorted_upto, seq, seq_rowid,
# store, generation, centred_at, boot, names_offset, names_length, names_crc; then the CRC of those bytes
_CRC = struct.Struct("<I")
LEGACY_NAME = "openkoi.db"  # as shared_core.files: seed 000's file keeps its data folder beside it

#: called with a stage name as a write goes ("slots:<column>", "slots:header", "whole:rename"): the
#: crash tests stop a process there
write_hook: Callable[[str], None] | None = None


def current_boot() -> int:
    """This boot of the machine as a number (Linux's boot_id; 1 elsewhere: every write is then synced)."""
    try:
        with open("/proc/sys/kernel/random/boot_id", "rb") as f:
            return zlib.crc32(f.read()) or 1
    except OSError:
        return 1


def trusted(header: Header) -> bool:
    """Whether a header can be believed: written after its slots reached the disk, or in this boot
    (a crash of the machine may have kept a header whose slots were still in memory)."""
    return header.boot == 0 or (header.boot == current_boot() and header.boot != 1)


def supported() -> bool:
    """Whether this platform has the file locks the shared file needs."""
    return fcntl is not None


def file_path(database: str) -> Path:
    """``vectors.idx`` in the data folder of the database file ``database`` (see :mod:`shared_core.files`)."""
    file = Path(database)
    folder = file.parent if file.name == LEGACY_NAME else file.parent / f"{file.name}.files"
    return folder / "vectors.idx"


def column_specs(dims: int) -> list[tuple[str, Any, tuple[int, ...], bool]]:
    """(name, dtype, shape per row, column-major) of each column, in the file's order.

    Vector columns come first, state columns after them, so a write in file order leaves a
    slot's stamp older than its codes, never newer (see the module docs).
    """
    words = -(-dims // 64)
    head = min(2, words)
    return [
        ("vectors", np.float32, (dims,), False),  # read only for the final candidates of a search
        ("codes", np.uint64, (words,), True),  # column-major: word w of every code is one contiguous array
        ("centred_head", np.uint64, (head,), True),
        ("centred_tail", np.uint64, (words - head,), False),
        ("q", np.int8, (dims,), False),
        ("scale", np.float32, (), False),
        ("rowids", np.int64, (), False),
        ("ns", np.int32, (), False),
        ("kind", np.int32, (), False),
        ("expires", np.float64, (), False),
        ("created", np.float64, (), False),
        ("current", np.bool_, (), False),
        ("alive", np.bool_, (), False),
        ("stamp", np.int64, (), False),
    ]


def unused_ranges(dims: int, capacity: int, size: int) -> list[tuple[int, int]]:
    """The byte ranges of every column's slots from ``size`` on (holes in the file until rows are
    appended there), each from the start of the page that holds slot ``size``."""
    layout, _ = _layout(dims, capacity)
    ranges = []
    for name, dtype, row, column_major in column_specs(dims):
        offset, _, _ = layout[name]
        width = int(np.dtype(dtype).itemsize) * (1 if column_major else int(np.prod(row)))
        runs = range(row[0]) if column_major else range(1)  # column-major: one run of slots per word
        for run in runs:
            base = offset + run * capacity * width
            start, end = base + size * width, base + capacity * width
            if end > start:
                ranges.append((start - start % mmap.PAGESIZE, end))
    return ranges


def _round_up(n: int, to: int = PAGE) -> int:
    return -(-n // to) * to


def _layout(dims: int, capacity: int) -> tuple[dict[str, tuple[int, Any, tuple[int, ...]]], int]:
    """Offsets of the centre and of every column for ``capacity`` rows; and where the arrays end."""
    out: dict[str, tuple[int, Any, tuple[int, ...]]] = {"centre": (PAGE, np.float32, (dims,))}
    offset = _round_up(PAGE + 4 * dims)
    for name, dtype, row, column_major in column_specs(dims):
        shape = (row[0], capacity) if column_major else (capacity, *row)
        out[name] = (offset, dtype, shape)
        offset = _round_up(offset + int(np.dtype(dtype).itemsize) * int(np.prod(shape)))
    return out, offset


@dataclass(frozen=True)
class Header:
    """What a vector file holds: ``size`` slots (rows ``[0, sorted_upto)`` in row id order), up to log entry ``seq``."""

    dims: int
    capacity: int
    size: int
    sorted_upto: int
    seq: int
    seq_rowid: int  # the chunk_rowid index_log holds at ``seq`` (-1 when seq is 0)
    store: int  # the database's store_id (store_meta), as a number
    generation: int  # random, new for every file written whole
    centred_at: int  # rows the file held when its centre was computed
    boot: int = 0  # 0: the slots it counts were on disk before it was written; else the boot it was written in
    names_offset: int = 0
    names_length: int = 0
    names_crc: int = 0

    def pack(self) -> bytes:
        body = _HEADER.pack(MAGIC, VERSION, self.dims, self.capacity, self.size, self.sorted_upto, self.seq,
                            self.seq_rowid, self.store, self.generation, self.centred_at, self.boot, self.names_offset, self.names_length, self.names_crc)
        return body + _CRC.pack(zlib.crc32(body))

    @staticmethod
    def unpack(data: bytes) -> Header | None:
        """The header in ``data``, or None if it is not one this version wrote whole."""
        if len(data) < _HEADER.size + _CRC.size:
            return None
        body = data[: _HEADER.size]
        if _CRC.unpack_from(data, _HEADER.size)[0] != zlib.crc32(body):
            return None
        magic, version, *fields = _HEADER.unpack(body)
        if magic != MAGIC or version != VERSION:
            return None
        header = Header(*fields)
        return header if 0 <= header.sorted_upto <= header.size <= header.capacity else None


class RowReader:
    """Reads rows of the file's row-major columns with ``pread``: the pages stay the operating system's
    cache instead of joining the process's memory (a mapped page drags its neighbours in with it:
    2,000 reads of single rows made 240 MB of a mapping resident)."""

    def __init__(self, fd: int, layout: dict[str, tuple[int, Any, tuple[int, ...]]]) -> None:
        self.fd = fd
        self.layout = layout
        self._finalizer = weakref.finalize(self, os.close, fd)

    def rows(self, name: str, slots: np.ndarray) -> np.ndarray:
        offset, dtype, shape = self.layout[name]
        size = int(np.dtype(dtype).itemsize * int(np.prod(shape[1:])))
        pread, fd = os.pread, self.fd
        positions = [offset + slot * size for slot in slots.tolist()]
        advise = getattr(os, "posix_fadvise", None)
        if advise is not None and len(positions) > 1:
            # every row asked for before the first is read: the kernel reads those not cached together
            # (scattered rows of an uncached file in half the time of one read after another here;
            # 0.3 us a row when they are cached)
            with suppress(OSError):  # advice: a file system that refuses it is read as before
                for position in positions:
                    advise(fd, position, size, os.POSIX_FADV_WILLNEED)
        data = b"".join([pread(fd, size, position) for position in positions])
        return np.frombuffer(data, dtype=dtype).reshape(len(slots), *shape[1:])


class VectorFile:
    """One vector file: its header, its columns mapped copy-on-write, and the locked writes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock_path = path.with_name(path.name + ".lock")
        self._held = 0  # lock() is re-entrant within this object (a save inside a load)

    # -- reading --------------------------------------------------------------------------------

    def read_header(self) -> tuple[Header | None, int | None]:
        """(the header, or None if there is no valid one; the file's inode, or None if there is no file)."""
        try:
            with open(self.path, "rb") as f:
                return Header.unpack(f.read(_HEADER.size + _CRC.size)), os.fstat(f.fileno()).st_ino
        except FileNotFoundError:
            return None, None

    def inode(self) -> int | None:
        try:
            return os.stat(self.path).st_ino
        except FileNotFoundError:
            return None

    def map(self) -> tuple[Header, dict[str, np.ndarray], dict[str, list[str]], int, RowReader] | None:
        """(header, columns, names, inode, a reader of its rows) of the file, mapped copy-on-write; None
        if it is missing or torn."""
        try:
            f = open(self.path, "rb")
        except FileNotFoundError:
            return None
        with f:
            header = Header.unpack(f.read(_HEADER.size + _CRC.size))
            if header is None:
                return None
            layout, end = _layout(header.dims, header.capacity)
            length = os.fstat(f.fileno()).st_size
            if length < end or length < header.names_offset + header.names_length:
                return None  # cut short
            f.seek(header.names_offset)
            raw = f.read(header.names_length)
            if zlib.crc32(raw) != header.names_crc:
                return None
            try:
                names = json.loads(raw) if raw else {"ns": [], "kind": []}
            except ValueError:
                return None
            buffer = mmap.mmap(f.fileno(), end, access=mmap.ACCESS_COPY)  # private: our changes never reach the file
            if hasattr(mmap, "MADV_RANDOM"):
                # the first write into a hole (an appended row's page) would read ahead the file's
                # holes around it, read_ahead_kb of zeros (8 MB here: 1-2 ms a column, 10-125 ms
                # an add every 512 adds); only the unused slots are advised, scans still read ahead
                with suppress(OSError):  # advice: a system that refuses it maps the file as before
                    for start, stop in unused_ranges(header.dims, header.capacity, header.size):
                        buffer.madvise(mmap.MADV_RANDOM, start, stop - start)
            columns = {name: np.frombuffer(buffer, dtype=dtype, count=int(np.prod(shape)), offset=offset).reshape(shape)
                       for name, (offset, dtype, shape) in layout.items()}
            return header, columns, names, os.fstat(f.fileno()).st_ino, RowReader(os.dup(f.fileno()), layout)

    # -- writing (callers hold lock()) --------------------------------------------------------

    @contextmanager
    def lock(self) -> Iterator[None]:
        """The file's writers take turns (processes, and stores of one process, alike)."""
        assert fcntl is not None
        if self._held:
            self._held += 1
            try:
                yield
            finally:
                self._held -= 1
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            self._held = 1
            yield
        finally:
            self._held = 0
            os.close(fd)  # closing lets go of the lock

    def write_whole(self, dims: int, capacity: int, fill: Any) -> Header:
        """Write a new file of ``capacity`` slots and put it in place of the old one in one rename:
        ``fill(arrays)`` writes the columns (and ``centre``) and returns (header, names)."""
        layout, end = _layout(dims, capacity)
        for left in self.path.parent.glob(f"{self.path.name}.*.new"):
            left.unlink(missing_ok=True)  # of a process killed while it wrote (we hold the lock)
        temp = self.path.with_name(f"{self.path.name}.{os.getpid()}.new")
        with open(temp, "wb+") as f:
            f.truncate(end)  # sparse: the slots past ``size`` take no disk
            buffer = mmap.mmap(f.fileno(), end, access=mmap.ACCESS_WRITE)
            try:
                arrays = {name: np.frombuffer(buffer, dtype=dtype, count=int(np.prod(shape)), offset=offset).reshape(shape)
                          for name, (offset, dtype, shape) in layout.items()}
                header, names = fill(arrays)
                del arrays
                buffer.flush()
            finally:
                buffer.close()
            raw = json.dumps(names).encode()
            header = replace(header, names_offset=end, names_length=len(raw), names_crc=zlib.crc32(raw))
            f.seek(end)
            f.write(raw)
            f.seek(0)
            f.write(header.pack())
            f.flush()
            os.fsync(f.fileno())
        if write_hook is not None:
            write_hook("whole:rename")
        os.replace(temp, self.path)
        return header

    def write_slots(self, header: Header, columns: dict[str, np.ndarray], slots: np.ndarray,
                    names: dict[str, list[str]] | None, *, durable: bool, shift: int = 0) -> Header:
        """Write ``slots`` (ascending) of ``columns`` (whose row 0 is slot ``shift``) into the file in
        place, then ``header`` (with the names, when they changed, appended at the end); ``durable``:
        sync the slots to disk first. Returns the header written."""
        layout, end = _layout(header.dims, header.capacity)
        starts = np.flatnonzero(np.diff(slots, prepend=-2) != 1)  # contiguous runs of slots
        runs = [(int(slots[a]), int(slots[b - 1]) + 1) for a, b in zip(starts, [*starts[1:], slots.size], strict=True)]
        with open(self.path, "r+b") as f:
            fd = f.fileno()
            for name, dtype, row, column_major in column_specs(header.dims):
                offset, _, shape = layout[name]
                item = int(np.dtype(dtype).itemsize)
                column = columns[name]
                if column_major:
                    for word in range(shape[0]):
                        for a, b in runs:
                            os.pwrite(fd, column[word, a - shift : b - shift].tobytes(),
                                      offset + (word * shape[1] + a) * item)
                else:
                    size = item * int(np.prod(row))
                    for a, b in runs:
                        os.pwrite(fd, column[a - shift : b - shift].tobytes(), offset + a * size)
                if write_hook is not None:
                    write_hook(f"slots:{name}")
            if names is not None:
                raw = json.dumps(names).encode()
                offset = max(end, _round_up(os.fstat(fd).st_size, 8))
                os.pwrite(fd, raw, offset)
                header = replace(header, names_offset=offset, names_length=len(raw), names_crc=zlib.crc32(raw))
            if durable:
                os.fsync(fd)  # the slots reach the disk before a header that counts them
            header = replace(header, boot=0 if durable else current_boot())
            if write_hook is not None:
                write_hook("slots:header")
            os.pwrite(fd, header.pack(), 0)
        return header

    def settle(self) -> None:
        """Sync the file and mark its header as written after its slots (a process's last act, so a
        crash of the machine later does not make the next open rebuild it). Skipped while another
        writer holds the lock (it runs from a finalizer, maybe in the middle of this process's own
        write: waiting there would never end)."""
        if fcntl is None or not self.lock_path.exists():
            return
        try:
            fd = os.open(self.lock_path, os.O_RDWR)
        except OSError:
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            with open(self.path, "r+b") as f:
                header = Header.unpack(f.read(_HEADER.size + _CRC.size))
                if header is not None and header.boot == current_boot():
                    os.fsync(f.fileno())
                    f.seek(0)
                    f.write(replace(header, boot=0).pack())
                    f.flush()
                    os.fsync(f.fileno())
        except OSError:
            pass  # busy, or gone (a test's folder, an erased memory): nothing to settle
        finally:
            os.close(fd)

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


def copy_slots(target: dict[str, np.ndarray], source: dict[str, np.ndarray], rows: Any, into: Any,
               hook: Callable[[str], None] | None = None) -> None:
    """``target[name][into] = source[name][rows]`` for every column, in the file's order."""
    for name, _, _, column_major in column_specs(int(source["q"].shape[1])):
        if column_major:
            target[name][:, into] = source[name][:, rows]
        else:
            target[name][into] = source[name][rows]
        if hook is not None:
            hook(f"slots:{name}")

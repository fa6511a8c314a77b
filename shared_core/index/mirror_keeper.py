"""Keeps a process's :class:`~.mirror.Mirror` in step with ``memory_vec`` and with the vector file.

Loading: map the memory's vector file (:mod:`.vector_file`) when its header matches the
database, else build the mirror from the rows (written to a new file when the memory has a
writable data folder). Then, before every search, apply what ``index_log`` says changed past the
mirror's position (sequence numbers have no gaps: AUTOINCREMENT, and a rollback takes its
numbers back, except where maintenance trimmed the log's old end). Own writes reach the mirror
after commit, never before, so a rolled-back write cannot leak into search.

Saving: once :data:`CHECKPOINT_ROWS` slots changed since the file was mapped, the changed and new
slots are written into the file (a checkpoint), so the next process catches up from a recent
position instead of from the log's far past. A process writes only when the file is still the
one it mapped, as it left it; else another process saved meanwhile and this one reloads first.
"""

from __future__ import annotations

import logging
import secrets
import time
import weakref
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from ..db import Database
from .codes import sign_code
from .mirror import Mirror, encode, stamp_hash
from .protocols import RowState, epoch_of, stamp_of
from .vector_file import (
    Header,
    VectorFile,
    column_specs,
    copy_slots,
    current_boot,
    file_path,
    supported,
    trusted,
)

__all__ = ["CHECKPOINT_ROWS", "MirrorKeeper"]

logger = logging.getLogger("openkoi.store")

CHECKPOINT_ROWS = 256  # changed slots that make a process save them into the vector file
_BULK_ROWS = 16  # writes of this many new rows go straight into the file; fewer are copied pages, saved later
SYNC_SECONDS = 30.0  # a save syncs the file to disk when the last synced one is this old (and at exit)
_POINT_LOOKUPS = 256  # up to this many vectors are read one by one (vec0 takes ~0.1 ms a lookup)
_SCAN_BATCH = 20_000  # rowids per IN (...) list past that (each list is a scan of the vec0 table)
_BUILD_ROWS = 65_536  # vectors encoded at a time when a mirror is built from the rows
_STATE_COLUMNS = "chunk_rowid, namespace, kind, expires_at, valid_to IS NULL, embedded_at, content_hash, created_at"
_JOINED_STATE_COLUMNS = ", ".join(f"c.{column}" for column in _STATE_COLUMNS.split(", "))


def _state(row: Sequence[Any]) -> RowState:
    return RowState(row[1], row[2], epoch_of(row[3]), bool(row[4]), stamp_of(row[5], row[6]), epoch_of(row[7]))


def _capacity(rows: int) -> int:
    return max(1024, 1 << max(0, 2 * rows - 1).bit_length())


class MirrorKeeper:
    """The mirror of one :class:`~.vectors.SqliteVectorIndex`: loaded, caught up and saved."""

    def __init__(self, db: Database, dims: int) -> None:
        self.db = db
        self.dims = dims
        self.file = VectorFile(file_path(db.path)) if db.path != ":memory:" and supported() else None
        self.writable = self.file is not None and not db.read_only
        self.mirror: Mirror | None = None
        self.last_seq = 0
        self.last_rowid = -1  # the chunk_rowid logged at last_seq
        self.synced_at: tuple[int, int] | None = None  # the db.snapshot the mirror last caught up with
        self.inode: int | None = None  # of the file the mirror maps
        self.rebase = False  # another process saved the file since we mapped it: reload before saving
        self._synced = 0.0  # time.monotonic() of the last save synced to disk
        self._moved = False  # the direct append already moved our log position past its rows
        # at close or exit, the last saves are synced and the header marked so: a later crash of the
        # machine then finds a file it can trust instead of rebuilding it
        self._settle = weakref.finalize(self, self.file.settle) if self.writable and self.file is not None else None

    def close(self) -> None:
        """Settle the file now (once; the store is closing) rather than when this object goes."""
        if self._settle is not None:
            self._settle()

    # -- loading --------------------------------------------------------------------------------

    def sync(self) -> Mirror:
        """The mirror, loaded on first use and caught up with the log."""
        mirror = self.mirror
        if mirror is None or self.rebase:
            return self.load()
        if self.db.has_uncommitted_writes:
            return mirror  # this transaction's writes are in the log; they reach the mirror after commit
        snapshot = self.db.snapshot
        if snapshot is not None and snapshot == self.synced_at:
            return mirror  # caught up earlier in this write transaction: no one else can have written since
        if mirror.file_backed and self.file is not None and self.file.inode() != self.inode:
            return self.load()  # a new file (grown, compacted or scrubbed by an erase) replaced ours
        if not self._catch_up():
            return self.load(rebuild=True)
        self.synced_at = snapshot
        assert self.mirror is not None
        return self.mirror

    def load(self, *, rebuild: bool = False) -> Mirror:
        """Map the vector file when it matches the database, else build the mirror from the rows."""
        self.mirror, self.rebase = None, False
        if self.file is not None and not rebuild and self._map():
            if self._catch_up():
                self.synced_at = self.db.snapshot
                assert self.mirror is not None
                return self.mirror
        if self.writable:
            assert self.file is not None
            with self.file.lock():
                # another process may have rebuilt it while we waited for the lock
                if rebuild or not self._map() or not self._catch_up():
                    self._build_file()
        else:
            self._build_in_memory()
        if not self._catch_up():  # the rows of the build and the log position came from one snapshot
            raise RuntimeError("the vector index's change log moved backwards while it was loaded")
        self.synced_at = self.db.snapshot
        assert self.mirror is not None
        return self.mirror

    def _map(self) -> bool:
        """Use the vector file if its header matches the database; False if there is none that does."""
        assert self.file is not None
        mapped = self.file.map()
        if mapped is None:
            return False
        header, columns, names, inode, reader = mapped
        if not trusted(header):
            return False  # saved without a sync before the machine restarted: its slots may not have reached the disk
        newest, oldest, rowid_there = self.db.query(
            "SELECT (SELECT max(seq) FROM index_log), (SELECT min(seq) FROM index_log), "
            "(SELECT chunk_rowid FROM index_log WHERE seq = ?)", (header.seq,))[0]
        newest = int(newest or 0)
        if header.store != self._store_id() or header.dims != self.dims or header.seq > newest:
            return False  # another database's, another embedder's, or ahead of its database (restored from a backup)
        if rowid_there is not None:
            if int(rowid_there) != header.seq_rowid:
                return False  # a file of another database
        elif oldest is not None and int(oldest) != header.seq + 1:
            return False  # the log no longer reaches back to the file's position
        self.mirror = Mirror.mapped(self.dims, header.size, header.sorted_upto, header.generation, columns, names,
                                    reader)
        self.mirror._centred_at = header.centred_at
        self.last_seq, self.last_rowid, self.inode = header.seq, header.seq_rowid, inode
        return True

    def _store_id(self) -> int:
        """The database's ``store_id`` as a number (0 for a database without one)."""
        text = self.db.get_meta("store_id") or ""
        try:
            return int(text, 16) & (2**63 - 1)
        except ValueError:
            return stamp_hash(text) & (2**63 - 1)

    def _catch_up(self) -> bool:
        """Apply the log past our position; False when entries are missing (trimmed): rebuild."""
        while True:
            mirror = self.mirror
            assert mirror is not None
            limit = 5000
            log = self.db.query(
                f"SELECT l.seq, l.chunk_rowid, {_JOINED_STATE_COLUMNS} FROM index_log l LEFT JOIN memory_chunks c "
                f"ON c.chunk_rowid = l.chunk_rowid WHERE l.seq > ? ORDER BY l.seq LIMIT {limit}",
                (self.last_seq,),
            )
            if not log:
                return True
            if int(log[0][0]) != self.last_seq + 1:
                return False
            if len(log) == limit and mirror.file_backed and self.file is not None:
                header, inode = self.file.read_header()
                if header is not None and header.seq > self.last_seq + limit and not self.rebase:
                    if self._map():  # another process saved further than we are: start from there
                        continue
                    self.mirror = mirror
            self._apply(log)
            if len(log) < limit:
                return True

    def _apply(self, log: list[Any]) -> None:
        changed = list(dict.fromkeys(int(r[1]) for r in log))
        mirror = self._room_for(len(changed))
        states = {int(r[1]): _state(r[2:]) for r in log if r[2] is not None}  # a deleted row joins nothing
        stale = []
        for rowid, state in states.items():
            slot = mirror.slot_of(rowid)
            if slot is None or not mirror.alive[slot] or int(mirror.stamp[slot]) != stamp_hash(state.stamp):
                stale.append(rowid)
        fetched = self._vectors(stale)
        for rowid in changed:
            now = states.get(rowid)
            if now is None:
                mirror.remove(rowid)
            elif rowid in fetched:
                mirror.upsert(rowid, now, fetched[rowid])
            elif rowid in stale:
                mirror.remove(rowid)  # a row without a vector is not vector-searchable
            else:
                mirror.upsert(rowid, now, None)
        self.last_seq, self.last_rowid = int(log[-1][0]), int(log[-1][1])
        self.save()

    def _vectors(self, rowids: list[int]) -> dict[int, np.ndarray]:
        """Some rows' vectors from ``memory_vec``: one lookup each for a few (vec0 scans the whole
        table for an IN list), else in large batches."""
        fetched: dict[int, np.ndarray] = {}
        if len(rowids) <= _POINT_LOOKUPS:
            for rowid in rowids:
                found = self.db.query("SELECT embedding FROM memory_vec WHERE chunk_rowid = ?", (rowid,))
                if found:
                    fetched[rowid] = np.frombuffer(found[0][0], dtype=np.float32)
            return fetched
        batch = max(1, min(_SCAN_BATCH, self.db.capabilities.max_parameters))
        for start in range(0, len(rowids), batch):
            part = rowids[start : start + batch]
            for rowid, blob in self.db.query(
                f"SELECT chunk_rowid, embedding FROM memory_vec WHERE chunk_rowid IN ({', '.join('?' for _ in part)})",
                part,
            ):
                fetched[int(rowid)] = np.frombuffer(blob, dtype=np.float32)
        return fetched

    # -- own writes (after commit) ----------------------------------------------------------------

    def apply_own(self, rows: list[tuple[int, np.ndarray, RowState]], removed: Sequence[int] = ()) -> None:
        """This process's committed writes, straight into the mirror. A memory with a vector file
        keeps the file current even in a process that never searched (loading it costs little)."""
        try:
            if self.mirror is None:
                if self.writable and not self.db.conn.in_transaction:
                    self.load()  # reads the log, which holds these writes
                return
            mirror = self._room_for(len(rows))
            self._moved = False
            if removed or len(rows) < _BULK_ROWS or not self._append_to_file(mirror, rows) and not mirror.append_many(rows):
                for rowid, vector, state in rows:
                    mirror.upsert(rowid, state, vector)
            for rowid in removed:
                mirror.remove(rowid)
            # then the log up to and past these writes: it moves our position, so a save tells the next
            # process to start here
            if not self.db.conn.in_transaction and not self._skip_own(rows, removed) and not self._catch_up():
                self.mirror = None
                return
            self.save()
        except OSError as exc:  # the write committed; the index catches up from the log at the next search
            logger.warning("the vector index of %s could not be updated (%s); it is reloaded at the next search",
                           self.db.path, exc)
            self.mirror = None

    def _append_to_file(self, mirror: Mirror, rows: list[tuple[int, np.ndarray, RowState]]) -> bool:
        """New rows written straight into the file (and seen through the mapping), when the file is
        as this process mapped it and the process has written nothing into its mapping: a bulk
        load's batches then cost no copied pages. False: the caller appends them in memory."""
        if (not rows or not mirror.file_backed or not self.writable or self.rebase or mirror.private
                or mirror.size != mirror.base_size or mirror.dirty):
            return False
        assert self.file is not None
        with self.file.lock():
            header, inode = self.file.read_header()
            if (header is None or inode != self.inode or header.generation != mirror.generation
                    or header.size != mirror.size):
                return False

            def write(start: int, part: dict[str, np.ndarray]) -> None:
                assert self.file is not None and header is not None
                end = start + len(rows)
                position = self._own_entries(rows, ())  # the header can say the file holds them
                if position is not None:
                    self.last_seq, self.last_rowid = position
                    self._moved = True
                new = replace(header, size=end, sorted_upto=end, seq=self.last_seq, seq_rowid=self.last_rowid)
                durable = time.monotonic() - self._synced > SYNC_SECONDS or current_boot() == 1
                self.file.write_slots(new, part, np.arange(start, end), mirror.names() if mirror.names_dirty else None,
                                      durable=durable, shift=start)
                if durable:
                    self._synced = time.monotonic()
                mirror.names_dirty = False

            return mirror.append_many(rows, write)

    def _own_entries(self, rows: list[tuple[int, np.ndarray, RowState]], removed: Sequence[int]) -> tuple[int, int] | None:
        """The log position past the writes just applied, when the log past ours holds exactly one
        entry for each of them and nothing else (no other writer, no later change to them in the
        same transaction); None: catch up the usual way."""
        own = {rowid for rowid, _, _ in rows} | set(removed)
        log = self.db.query("SELECT seq, chunk_rowid FROM index_log WHERE seq > ? ORDER BY seq LIMIT ?",
                            (self.last_seq, len(own) + 1))
        if len(log) != len(own) or int(log[0][0]) != self.last_seq + 1 or {int(r[1]) for r in log} != own:
            return None
        return int(log[-1][0]), int(log[-1][1])

    def _skip_own(self, rows: list[tuple[int, np.ndarray, RowState]], removed: Sequence[int]) -> bool:
        """Move past the log entries of writes just applied (:meth:`_own_entries`), if that can be done."""
        if self._moved:
            self._moved = False
            return True
        position = self._own_entries(rows, removed)
        if position is None:
            return False
        self.last_seq, self.last_rowid = position
        return True

    # -- saving ---------------------------------------------------------------------------------

    def save(self, *, force: bool = False) -> None:
        """Write the slots changed since the file was mapped into it (a checkpoint), once there are
        :data:`CHECKPOINT_ROWS` of them (or any, with ``force``)."""
        mirror = self.mirror
        if mirror is None or not self.writable or not mirror.file_backed or self.rebase:
            return
        pending = mirror.size - mirror.base_size + len(mirror.dirty)
        if pending < (1 if force else CHECKPOINT_ROWS) and not (force and mirror.names_dirty):
            return
        assert self.file is not None
        with self.file.lock():
            header, inode = self.file.read_header()
            if (header is None or inode != self.inode or header.generation != mirror.generation
                    or header.size != mirror.base_size):
                self.rebase = True  # someone else saved: our slots may not be theirs
                return
            slots = np.concatenate([np.fromiter(sorted(mirror.dirty), dtype=np.int64, count=len(mirror.dirty)),
                                    np.arange(mirror.base_size, mirror.size, dtype=np.int64)])
            new = replace(header, size=mirror.size, sorted_upto=mirror.sorted_upto, seq=self.last_seq,
                          seq_rowid=self.last_rowid)
            # syncing every save cost 40 ms each on a busy disk (a bulk load saves every batch); an
            # unsynced save is trusted only until the machine restarts (Header.boot)
            durable = time.monotonic() - self._synced > SYNC_SECONDS or current_boot() == 1
            self.file.write_slots(new, mirror.columns, slots, mirror.names() if mirror.names_dirty else None,
                                  durable=durable)
            if durable:
                self._synced = time.monotonic()
            mirror.base_size = mirror.size
            mirror.dirty.clear()
            mirror.names_dirty = False
            # the file now holds what this process had copied pages for: map it afresh, without them
            # (and write the next bulk batches straight into it)
            if not self._map():
                self.mirror = mirror

    def _room_for(self, rows: int) -> Mirror:
        """The mirror, with room for ``rows`` more slots: a file-backed one full of slots is written
        anew, bigger and without its dead slots (in memory, the arrays just grow)."""
        mirror = self.mirror
        assert mirror is not None
        if mirror.size + rows <= mirror.capacity or not mirror.file_backed or not self.writable:
            return mirror
        self.rewrite(extra=rows)
        assert self.mirror is not None
        return self.mirror

    def rewrite(self, *, extra: int = 0) -> None:
        """Write the mirror as a new file: live slots only, in row id order, room for ``extra`` more."""
        mirror = self.mirror
        assert mirror is not None and self.file is not None
        keep = np.flatnonzero(mirror.alive[: mirror.size])
        keep = keep[np.argsort(mirror.rowids[keep], kind="stable")]
        recentre = len(keep) >= 2 * max(mirror._centred_at, 512)

        def fill(arrays: dict[str, np.ndarray]) -> tuple[Header, dict[str, list[str]]]:
            n = len(keep)
            copy_slots(arrays, mirror.columns, keep, slice(0, n))
            centre = mirror.centre
            if recentre and n:
                total = np.zeros(self.dims, dtype=np.float64)
                for start in range(0, n, _BUILD_ROWS):
                    total += mirror.vectors[keep[start : start + _BUILD_ROWS]].sum(axis=0, dtype=np.float64)
                centre = (total / n).astype(np.float32)
                for start in range(0, n, _BUILD_ROWS):
                    part = sign_code(mirror.vectors[keep[start : start + _BUILD_ROWS]] - centre, mirror.words)
                    arrays["centred_head"][:, start : start + len(part)] = part[:, : mirror.head].T
                    arrays["centred_tail"][start : start + len(part)] = part[:, mirror.head :]
            arrays["centre"][:] = centre
            header = Header(self.dims, _capacity(n + extra), n, n, self.last_seq, self.last_rowid, self._store_id(),
                            secrets.randbits(63), n if recentre else mirror._centred_at)
            names = {}  # only the names live rows still hold: an erased namespace's name goes too
            for column, table in (("ns", mirror.ns_names), ("kind", mirror.kind_names)):
                used = np.unique(arrays[column][:n])
                renumber = np.zeros(max(len(table), 1), dtype=np.int32)
                renumber[used] = np.arange(used.size, dtype=np.int32)
                arrays[column][:n] = renumber[arrays[column][:n]]
                names[column] = [table[int(c)] for c in used]
            return header, names

        with self.file.lock():
            self.file.write_whole(self.dims, _capacity(len(keep) + extra), fill)
            if not self._map():
                raise RuntimeError(f"the vector file {self.file.path} just written does not read back")

    def scrub(self) -> None:
        """After an erase: zero the erased rows' codes in the file, then write it anew without them."""
        if self.file is None or not self.writable:
            self.mirror = None
            return
        mirror = self.load()
        if not mirror.file_backed:
            return
        dead = np.flatnonzero(~mirror.alive[: mirror.size])
        if dead.size:
            for name, _, _, column_major in column_specs(self.dims):
                if name not in ("rowids", "alive"):
                    if column_major:
                        mirror.columns[name][:, dead] = 0
                    else:
                        mirror.columns[name][dead] = 0
            mirror.dirty.update(int(s) for s in dead if s < mirror.base_size)
            self.save(force=True)
        self.rewrite()

    def forget(self) -> None:
        """Drop the mirror and the file (the vectors were rewritten: a re-embed)."""
        self.mirror = None
        self.last_seq, self.last_rowid, self.inode = 0, -1, None
        if self.file is not None and self.writable:
            with self.file.lock():
                self.file.remove()

    # -- building from the rows -------------------------------------------------------------------

    def _build_file(self) -> None:
        assert self.file is not None

        def fill(arrays: dict[str, np.ndarray]) -> tuple[Header, dict[str, list[str]]]:
            return self._build(arrays)

        count = int(self.db.scalar("SELECT count(*) FROM memory_chunks") or 0)
        self.file.write_whole(self.dims, _capacity(count), fill)
        if not self._map():
            raise RuntimeError(f"the vector file {self.file.path} just written does not read back")

    def _build_in_memory(self) -> None:
        count = int(self.db.scalar("SELECT count(*) FROM memory_chunks") or 0)
        mirror = Mirror(self.dims, _capacity(count))
        header, names = self._build(mirror.columns, mirror.centre)
        mirror.size = mirror.sorted_upto = mirror._centred_at = header.size
        mirror.centre_norm = float(np.sqrt(mirror.centre @ mirror.centre))
        mirror.ns_names, mirror.kind_names = names["ns"], names["kind"]
        mirror.ns_codes = {name: i for i, name in enumerate(mirror.ns_names)}
        mirror.kind_codes = {name: i for i, name in enumerate(mirror.kind_names)}
        self.mirror = mirror

    def _build(self, arrays: dict[str, np.ndarray], centre: np.ndarray | None = None) -> tuple[Header, dict[str, list[str]]]:
        """Encode every vector and row state into ``arrays`` (in one read snapshot); the header and names."""
        db = self.db
        words = -(-self.dims // 64)
        head = min(2, words)
        centre_array = arrays["centre"] if "centre" in arrays else centre
        assert centre_array is not None
        capacity = arrays["rowids"].shape[0]
        major = {name for name, _, _, column_major in column_specs(self.dims) if column_major}
        own_snapshot = not db.conn.in_transaction
        with db.lock:
            if own_snapshot:
                db.execute("BEGIN")  # one read snapshot for the log position and the rows
            try:
                newest = db.query("SELECT seq, chunk_rowid FROM index_log ORDER BY seq DESC LIMIT 1")
                n = 0
                cursor = db.conn.execute("SELECT chunk_rowid, embedding FROM memory_vec")
                while rows := cursor.fetchmany(_BUILD_ROWS):
                    if n + len(rows) > capacity:
                        raise RuntimeError("more vectors than rows while building the vector index")
                    matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), self.dims)
                    if n == 0:
                        centre_array[:] = matrix.mean(axis=0, dtype=np.float64)
                    arrays["rowids"][n : n + len(rows)] = [r[0] for r in rows]
                    for name, part in encode(matrix, centre_array, words, head).items():
                        if name in major:
                            arrays[name][:, n : n + len(rows)] = part
                        else:
                            arrays[name][n : n + len(rows)] = part
                    n += len(rows)
                order = np.argsort(arrays["rowids"][:n], kind="stable")
                if n and np.any(order != np.arange(n)):
                    copy_slots(arrays, {k: np.array(v[:, :n] if k in major else v[:n]) for k, v in arrays.items()
                                        if k != "centre"}, order, slice(0, n))
                names: dict[str, list[str]] = {"ns": [], "kind": []}
                codes: dict[str, dict[str, int]] = {"ns": {}, "kind": {}}

                def code(table: str, name: str) -> int:
                    found = codes[table].get(name)
                    if found is None:
                        found = codes[table][name] = len(names[table])
                        names[table].append(name)
                    return found

                rowids = arrays["rowids"][:n]
                cursor = db.conn.execute(f"SELECT {_STATE_COLUMNS} FROM memory_chunks ORDER BY chunk_rowid")
                while rows := cursor.fetchmany(_BUILD_ROWS):
                    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
                    at = np.minimum(rowids.searchsorted(ids), max(0, n - 1))
                    held = rowids[at] == ids if n else np.zeros(len(rows), dtype=bool)
                    for row, slot in zip((r for r, h in zip(rows, held, strict=True) if h), at[held], strict=True):
                        state = _state(row)
                        arrays["ns"][slot] = code("ns", state.namespace)
                        arrays["kind"][slot] = code("kind", state.kind)
                        arrays["expires"][slot] = state.expires
                        arrays["created"][slot] = state.created
                        arrays["current"][slot] = state.current
                        arrays["stamp"][slot] = stamp_hash(state.stamp)
                        arrays["alive"][slot] = True
            finally:
                if own_snapshot:
                    db.execute("COMMIT")
        seq, rowid = (int(newest[0][0]), int(newest[0][1])) if newest else (0, -1)
        self.last_seq, self.last_rowid = seq, rowid
        return Header(self.dims, capacity, n, n, seq, rowid, self._store_id(), secrets.randbits(63), n), names

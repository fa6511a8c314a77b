"""The compact copy of a memory's vectors that searches and near-duplicate checks scan.

Per vector: two sign codes (binary quantisation), the vector in int8 with a scale and in
float32, beside its row id and filter columns. Small scopes are scored in int8; large ones are
ranked by the bits that differ from the query's signs (:mod:`.codes`) and the best
``rerank_pool`` scored in int8; only the final candidates are scored exactly, from their float32
rows. The arrays live in memory (``:memory:`` stores) or are the columns of the memory's vector
file (:mod:`.vector_file`), mapped copy-on-write, so a process only holds the pages it read;
:class:`~.vectors.SqliteVectorIndex` keeps them in step with ``memory_vec``.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from concurrent.futures import wait

import numpy as np

from . import workers
from .codes import popcount, sign_code
from .protocols import RowState, epoch_of
from .scope import Scope
from .vector_file import RowReader, column_specs

try:  # the near-duplicate scan compiled (setup.py builds it where a C compiler is); else numpy
    import shared_core._speedups as _speedups
except ImportError:  # pragma: no cover - exercised by the tests that force numpy
    _speedups = None

__all__ = ["Mirror", "SMALL_MIRROR", "dot", "encode", "quantise", "stamp_hash"]

SMALL_MIRROR = 1024  # rows below which a near-duplicate check just scans every vector
_SPLIT_ROWS = 1 << 18  # rows from which the near-duplicate scan runs on two cores


def dot(matrix: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """Row-by-vector products with numpy's own single-threaded loop, not BLAS.

    A matrix-vector product is memory-bound, so threads gain little, and a multi-threaded
    BLAS waits for its slowest thread: on a busy 2-core machine a 10k x 384 product took
    11.5 ms through BLAS and 0.6 ms through einsum.
    """
    return np.einsum("ij,j->i", matrix, vector)


_BITS_OF_BYTE = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1).astype(np.float32)  # first bit first


def stamp_hash(stamp: str) -> int:
    """A row's embedding stamp (:func:`~.protocols.stamp_of`) as a signed 64-bit number, for the files' stamp column."""
    return int.from_bytes(hashlib.blake2b(stamp.encode(), digest_size=8).digest(), "little", signed=True)


def quantise(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(int8 rows, float32 scale per row) with ``rows * scale`` close to ``vectors`` (one vector or a matrix)."""
    scale = np.abs(vectors).max(axis=-1) / 127.0
    scale = np.where(scale > 0, scale, 1.0).astype(np.float32)
    q = np.rint(vectors / scale[..., None]).astype(np.int8)
    return q, scale


def encode(vectors: np.ndarray, centre: np.ndarray, words: int, head: int) -> dict[str, np.ndarray]:
    """The vector columns of some rows (a matrix): raw and centred sign codes, int8 rows and scales."""
    q, scale = quantise(vectors)
    centred = sign_code(vectors - centre, words)
    return {"vectors": vectors, "codes": sign_code(vectors, words).T, "centred_head": centred[:, :head].T,
            "centred_tail": centred[:, head:], "q": q, "scale": scale}


class Mirror:
    """Arrays of codes, int8 vectors and filter columns, addressed by slot.

    Two sign codes per vector: ``codes``, its own signs, which pick search's candidates, and
    the signs of the vector minus ``centre`` (about the mean of the stored vectors), for the
    near-duplicate check: their first two words column-major in ``centred_head`` (scanned for
    every row), the rest row-major in ``centred_tail`` (read for the few rows that pass: one
    cache line each). Embeddings share a common direction (the mean of 100k hashing vectors has
    norm 0.46, of all-MiniLM-L6-v2 vectors 0.50), so the raw signs of unrelated texts agree in
    many places; centred, 3.6x fewer rows passed the check's first stage. Search keeps the raw
    signs: they rank by cosine similarity itself (centred ones lost recall with all-MiniLM-L6-v2).

    Slots ``[0, sorted_upto)`` hold increasing row ids (found by binary search); a row appended
    out of order is found through ``extra``. A deleted row's slot stays, dead, until the arrays are
    compacted. Slots below ``base_size`` came from the file; ``dirty`` are those changed since.
    """

    # the columns (vector_file.column_specs), set by _allocate() or mapped()
    vectors: np.ndarray
    codes: np.ndarray
    centred_head: np.ndarray
    centred_tail: np.ndarray
    q: np.ndarray
    scale: np.ndarray
    rowids: np.ndarray
    ns: np.ndarray
    kind: np.ndarray
    expires: np.ndarray
    created: np.ndarray
    current: np.ndarray
    alive: np.ndarray
    stamp: np.ndarray

    def __init__(self, dims: int, capacity: int = 1024) -> None:
        self.dims = dims
        self.words = -(-dims // 64)  # uint64 words per sign code (the last one zero-padded)
        self.head = min(2, self.words)  # words of the centred code in the near-duplicate check's first stage
        self.size = 0
        self.sorted_upto = 0
        self.extra: dict[int, int] = {}
        self.base_size = 0
        self.dirty: set[int] = set()
        self.names_dirty = False
        self.private = False  # whether this process wrote into its copy-on-write mapping
        self.file_backed = False
        self.generation = 0
        self.centre = np.zeros(dims, dtype=np.float32)
        self.centre_norm = 0.0
        self._centred_at = 0  # how many rows the mirror held when ``centre`` was computed
        self._last_centred: tuple[np.ndarray, np.ndarray, float, np.ndarray] | None = None  # see centred()
        self.ns_names: list[str] = []
        self.kind_names: list[str] = []
        self.ns_codes: dict[str, int] = {}
        self.kind_codes: dict[str, int] = {}
        self.columns: dict[str, np.ndarray] = {}
        self.reader: RowReader | None = None  # reads the file's rows of a file-backed mirror
        self._allocate(max(1, capacity))

    @classmethod
    def mapped(cls, dims: int, size: int, sorted_upto: int, generation: int, columns: dict[str, np.ndarray],
               names: dict[str, list[str]], reader: RowReader) -> Mirror:
        """A mirror over the columns of a vector file (:meth:`.vector_file.VectorFile.map`)."""
        mirror = cls(dims, capacity=1)
        mirror.reader = reader
        mirror.columns = {name: array for name, array in columns.items() if name != "centre"}
        mirror.__dict__.update(mirror.columns)
        mirror.capacity = int(columns["rowids"].shape[0])
        mirror.size = mirror.base_size = mirror._centred_at = size
        mirror.sorted_upto = sorted_upto
        mirror.file_backed = True
        mirror.generation = generation
        mirror.centre = np.array(columns["centre"])
        mirror.centre_norm = math.sqrt(float(mirror.centre @ mirror.centre))
        mirror.ns_names, mirror.kind_names = list(names.get("ns", [])), list(names.get("kind", []))
        mirror.ns_codes = {name: i for i, name in enumerate(mirror.ns_names)}
        mirror.kind_codes = {name: i for i, name in enumerate(mirror.kind_names)}
        rowids = mirror.rowids
        mirror.extra = {int(rowids[s]): s for s in range(sorted_upto, size)}
        return mirror

    def names(self) -> dict[str, list[str]]:
        return {"ns": self.ns_names, "kind": self.kind_names}

    def _allocate(self, capacity: int) -> None:
        """Room for ``capacity`` slots in memory, the first ``size`` copied over."""
        fresh: dict[str, np.ndarray] = {}
        for name, dtype, row, column_major in column_specs(self.dims):
            shape = (row[0], capacity) if column_major else (capacity, *row)
            array = np.zeros(shape, dtype=dtype)
            old = self.columns.get(name)
            if old is not None:
                if column_major:
                    array[:, : self.size] = old[:, : self.size]
                else:
                    array[: self.size] = old[: self.size]
            fresh[name] = array
        self.columns = fresh
        self.__dict__.update(fresh)
        self.capacity = capacity
        self.file_backed = False  # whatever came from a file is copied into memory now

    def _code(self, name: str, table: dict[str, int], names: list[str]) -> int:
        code = table.get(name)
        if code is None:
            code = table[name] = len(names)
            names.append(name)
            self.names_dirty = True
        return code

    # -- finding rows ---------------------------------------------------------------------------

    def slot_of(self, rowid: int) -> int | None:
        if self.sorted_upto:
            sorted_ids = self.rowids[: self.sorted_upto]
            i = int(sorted_ids.searchsorted(rowid))
            if i < self.sorted_upto and sorted_ids[i] == rowid:
                return i
        return self.extra.get(rowid)

    def slots_of(self, rowids: np.ndarray) -> np.ndarray:
        """The slot of each row id (-1 for rows not held)."""
        rowids = np.asarray(rowids, dtype=np.int64)
        out = np.full(rowids.shape, -1, dtype=np.int64)
        if self.sorted_upto:
            sorted_ids = self.rowids[: self.sorted_upto]
            found = np.minimum(sorted_ids.searchsorted(rowids), self.sorted_upto - 1)
            hit = sorted_ids[found] == rowids
            out[hit] = found[hit]
        if self.extra:
            for i in np.flatnonzero(out < 0):
                out[i] = self.extra.get(int(rowids[i]), -1)
        return out

    def live_count(self) -> int:
        return int(np.count_nonzero(self.alive[: self.size]))

    # -- changes --------------------------------------------------------------------------------

    def upsert(self, rowid: int, state: RowState, vector: np.ndarray | None) -> None:
        """Hold ``rowid`` with ``state`` (and ``vector``, when it changed or is new)."""
        slot = self.slot_of(rowid)
        if slot is None:
            if vector is None:
                return  # a state change for a row we never saw with a vector
            if self.size == self.capacity:
                self._allocate(self.capacity * 2)
            if not self.file_backed and self.size >= 2 * max(self._centred_at, SMALL_MIRROR // 2):
                self._recentre()
            slot = self.size
            self.size += 1
            self.rowids[slot] = rowid
            if self.sorted_upto == slot and (slot == 0 or self.rowids[slot - 1] < rowid):
                self.sorted_upto += 1
            else:
                self.extra[rowid] = slot
        elif slot < self.base_size:
            self.dirty.add(slot)
        self.private = True
        self.alive[slot] = True
        self.ns[slot] = self._code(state.namespace, self.ns_codes, self.ns_names)
        self.kind[slot] = self._code(state.kind, self.kind_codes, self.kind_names)
        self.expires[slot] = state.expires
        self.created[slot] = state.created
        self.current[slot] = state.current
        if vector is not None:
            q, scale = quantise(vector)
            self.vectors[slot] = vector
            self.q[slot], self.scale[slot] = q, scale
            self.codes[:, slot] = sign_code(vector, self.words)
            centred = self.centred(vector)[1]
            self.centred_head[:, slot] = centred[: self.head]
            self.centred_tail[slot] = centred[self.head :]
            self.stamp[slot] = stamp_hash(state.stamp)

    def append_many(self, rows: list[tuple[int, np.ndarray, RowState]],
                    write: Callable[[int, dict[str, np.ndarray]], None] | None = None) -> bool:
        """Hold new rows in one go (a bulk load's batch), when all are new and their row ids ascend
        past every held one; False, changing nothing, otherwise (then :meth:`upsert` each).
        ``write(start, columns)``: the rows' columns go there (into the mapped file) instead of into
        the arrays, which then show them through the mapping."""
        n = len(rows)
        if n == 0:
            return False
        rowids = np.fromiter((r for r, _, _ in rows), dtype=np.int64, count=n)
        start = self.size
        last = int(self.rowids[start - 1]) if start else -1
        if self.sorted_upto != start or rowids[0] <= last or np.any(np.diff(rowids) <= 0):
            return False
        if write is None:
            while start + n > self.capacity:
                self._allocate(self.capacity * 2)
        elif start + n > self.capacity:
            return False
        states = [s for _, _, s in rows]
        part = encode(np.stack([v for _, v, _ in rows]).astype(np.float32, copy=False), self.centre, self.words,
                      self.head)
        part.update(
            rowids=rowids, alive=np.ones(n, dtype=bool),
            ns=np.array([self._code(s.namespace, self.ns_codes, self.ns_names) for s in states], dtype=np.int32),
            kind=np.array([self._code(s.kind, self.kind_codes, self.kind_names) for s in states], dtype=np.int32),
            expires=np.array([s.expires for s in states], dtype=np.float64),
            created=np.array([s.created for s in states], dtype=np.float64),
            current=np.array([s.current for s in states], dtype=bool),
            stamp=np.array([stamp_hash(s.stamp) for s in states], dtype=np.int64),
        )
        end = start + n
        if write is not None:
            write(start, part)
            self.base_size = end
        else:
            for name, _, _, column_major in column_specs(self.dims):
                if column_major:
                    self.columns[name][:, start:end] = part[name]
                else:
                    self.columns[name][start:end] = part[name]
            self.private = True
        self.size = self.sorted_upto = end
        if not self.file_backed and self.size >= 2 * max(self._centred_at, SMALL_MIRROR // 2):
            self._recentre()
        return True

    def remove(self, rowid: int) -> None:
        slot = self.slot_of(rowid)
        if slot is None or not self.alive[slot]:
            return
        self.alive[slot] = False
        self.stamp[slot] = 0
        self.private = True
        if slot < self.base_size:
            self.dirty.add(slot)
        if not self.file_backed:
            dead = self.size - self.live_count()
            if dead > 1024 and dead > self.size // 4:
                self._compact()

    def _compact(self) -> None:
        """Keep the live slots only, in row id order (in memory; a file is compacted by writing a new one)."""
        keep = np.flatnonzero(self.alive[: self.size])
        keep = keep[np.argsort(self.rowids[keep], kind="stable")]
        for name, _, _, column_major in column_specs(self.dims):
            array = self.columns[name]
            if column_major:
                array[:, : len(keep)] = array[:, keep]
            else:
                array[: len(keep)] = array[keep]
        self.alive[len(keep) : self.size] = False
        self.size = self.sorted_upto = len(keep)
        self.extra = {}

    def bulk_load(self, rowids: np.ndarray, states: list[RowState], vectors: np.ndarray) -> None:
        """Replace what the mirror holds with these rows (in memory)."""
        order = np.argsort(np.asarray(rowids), kind="stable")
        rowids, vectors = np.asarray(rowids)[order], vectors[order]
        states = [states[i] for i in order]
        n = len(rowids)
        self.size = self.sorted_upto = self.base_size = 0
        self.extra, self.dirty = {}, set()
        self.columns = {}
        self._allocate(max(1024, 1 << max(0, (n - 1)).bit_length()))
        self.size = self.sorted_upto = n
        self.rowids[:n] = rowids
        self.alive[:n] = True
        self.ns[:n] = [self._code(s.namespace, self.ns_codes, self.ns_names) for s in states]
        self.kind[:n] = [self._code(s.kind, self.kind_codes, self.kind_names) for s in states]
        self.expires[:n] = [s.expires for s in states]
        self.created[:n] = [s.created for s in states]
        self.current[:n] = [s.current for s in states]
        self.stamp[:n] = [stamp_hash(s.stamp) for s in states]
        self.centre = vectors.mean(axis=0, dtype=np.float64).astype(np.float32) if n else self.centre
        self.centre_norm = math.sqrt(float(self.centre @ self.centre))
        self._centred_at = n
        for start in range(0, n, 65536):  # in parts: the sign matrix of a million rows is large
            self.put_vectors(start, vectors[start : start + 65536])

    def put_vectors(self, start: int, vectors: np.ndarray) -> None:
        """The vector columns of slots ``start, start + 1, ...`` from ``vectors``."""
        end = start + len(vectors)
        major = {name for name, _, _, column_major in column_specs(self.dims) if column_major}
        for name, part in encode(vectors, self.centre, self.words, self.head).items():
            array = self.columns[name]
            if name in major:
                array[:, start:end] = part
            else:
                array[start:end] = part

    def rows(self, name: str, slots: np.ndarray) -> np.ndarray:
        """Rows of a row-major column at ``slots``: a file-backed mirror reads the rows the file holds
        with ``pread`` (random rows of the mapping would make their neighbours resident too)."""
        column = self.columns[name]
        if self.reader is None or not self.file_backed:
            return column[slots]
        slots = np.asarray(slots, dtype=np.int64)
        in_file = slots < self.base_size
        if self.dirty:
            in_file &= ~np.isin(slots, np.fromiter(self.dirty, dtype=np.int64, count=len(self.dirty)))
        if in_file.all():
            return self.reader.rows(name, slots)
        out = np.empty((len(slots), *column.shape[1:]), dtype=column.dtype)
        out[in_file] = self.reader.rows(name, slots[in_file])
        out[~in_file] = column[slots[~in_file]]
        return out

    def centred_code(self, vector: np.ndarray) -> np.ndarray:
        """The centred sign code of a vector (or of each row of a matrix)."""
        return sign_code(vector - self.centre, self.words)

    def centred(self, vector: np.ndarray) -> tuple[float, np.ndarray]:
        """(|vector - centre|, its centred code) of one vector, remembered for the last vector asked
        about: an ``add`` asks for its new vector in the near-duplicate check and again when the
        vector is stored (the array is the same object; the memo holds it, so it stays unique)."""
        last = self._last_centred
        if last is not None and last[0] is vector and last[1] is self.centre:
            return last[2], last[3]
        diff = vector - self.centre
        norm, code = math.sqrt(float(diff @ diff)), sign_code(diff, self.words)
        self._last_centred = (vector, self.centre, norm, code)
        return norm, code

    def _recentre(self) -> None:
        """``centre`` := the mean of the stored vectors, and every centred code again from it."""
        n = self.size
        if n == 0:
            return
        total = np.zeros(self.dims, dtype=np.float64)
        for start in range(0, n, 65536):
            total += self.vectors[start : min(n, start + 65536)].sum(axis=0, dtype=np.float64)
        self.centre = (total / n).astype(np.float32)
        self.centre_norm = math.sqrt(float(self.centre @ self.centre))
        for start in range(0, n, 65536):
            part = self.centred_code(self.vectors[start : min(n, start + 65536)])
            self.centred_head[:, start : start + len(part)] = part[:, : self.head].T
            self.centred_tail[start : start + len(part)] = part[:, self.head :]
        self._centred_at = n

    # -- scans ----------------------------------------------------------------------------------
    def near_centred(self, code: np.ndarray, head_bound: int, bound: int) -> tuple[np.ndarray, np.ndarray]:
        """Slots whose centred code differs from ``code`` in at most ``head_bound`` bits of the
        head words and ``bound`` bits in all, with those distances."""
        if _speedups is not None and self.head == 2:
            return self._near_compiled(code, head_bound, bound)
        # one head word at a time, xor with a scalar: broadcasting a column over the whole head
        # took 175 us at 100k rows against 120; at most 128 bits, so the sums fit in a byte
        distances = popcount(self.centred_head[0, : self.size] ^ code[0])
        for word in range(1, self.head):
            distances += popcount(self.centred_head[word, : self.size] ^ code[word])
        # nonzero() called directly: np.flatnonzero is a Python frame
        near = (distances <= head_bound).nonzero()[0]
        if self.words == self.head or near.size == 0:
            return near, distances[near]
        # take(): a third faster than fancy indexing for the few hundred rows that pass at 100k
        total = distances.take(near).astype(np.uint16)
        total += np.add.reduce(popcount(self.centred_tail.take(near, axis=0) ^ code[self.head :]), axis=1, dtype=np.uint16)
        keep = total <= bound
        return near[keep], total[keep]

    def _near_compiled(self, code: np.ndarray, head_bound: int, bound: int) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`near_centred` in one compiled pass (``shared_core/_speedups.c``): at 100k rows ~135 us
        of an add against numpy's ~230. A big mirror is scanned in two halves on two cores: at a
        million rows the pass reads 16 MB, 2.0 ms of an add on one core of a 2-core VM, 1.3-1.5 on two."""
        code = np.ascontiguousarray(code, dtype=np.uint64)
        half = self.size // 2
        second = workers.submit(self._near_rows, code, head_bound, bound, half, self.size) \
            if self.size >= _SPLIT_ROWS else None
        if second is None:
            return self._near_rows(code, head_bound, bound, 0, self.size)
        try:
            slots, distances = self._near_rows(code, head_bound, bound, 0, half)
        finally:
            wait([second])  # the caller's lock covers the whole scan, never just half of it
        more, more_distances = second.result()
        return np.concatenate((slots, more + half)), np.concatenate((distances, more_distances))

    def _near_rows(self, code: np.ndarray, head_bound: int, bound: int, start: int,
                   end: int) -> tuple[np.ndarray, np.ndarray]:
        """The compiled pass over slots ``start`` to ``end``, numbered from ``start``."""
        room = 4096  # rows that pass (a few hundred at 100k); more: a second call with room for all
        while True:
            slots, distances = np.empty(room, np.int64), np.empty(room, np.uint16)
            count = _speedups.near(self.centred_head[0, start:end], self.centred_head[1, start:end],
                                   self.centred_tail[start:end], self.words - 2, end - start, code,
                                   head_bound, bound, slots, distances)
            if count <= room:
                return slots[:count], distances[:count]
            room = count

    def signed(self, slots: np.ndarray, query: np.ndarray) -> np.ndarray:
        """``query`` against the sign bits of ``slots`` (the sum of its components where the row's are
        positive): ranks rows by similarity far better than a Hamming distance, from the codes alone.
        Summed a byte of code at a time from the query's sum for each of a byte's 256 values: 2.3 ms
        for 7,812 rows of 384 bits, against 6.5 for the bits unpacked into a matrix."""
        padded = np.zeros(self.words * 64, dtype=np.float32)
        padded[: self.dims] = query
        sums = padded.reshape(-1, 8) @ _BITS_OF_BYTE.T  # (bytes of a code, 256)
        data = self.codes.take(slots, axis=1).view(np.uint8).reshape(self.words, slots.size, 8)
        out = np.zeros(slots.size, dtype=np.float32)
        for word in range(self.words):
            for byte in range(8):
                out += sums[word * 8 + byte].take(data[word, :, byte])
        return out

    def approx(self, slots: np.ndarray, query: np.ndarray, *, read: bool = False) -> np.ndarray:
        """Cosine similarity of ``query`` to the int8 vectors of ``slots`` (within about 0.005 of the exact
        one). ``read``: rows of a file-backed mirror come by ``pread`` (scattered rows), else through
        the mapping (a small scope's, whose pages then stay resident, shared with other processes)."""
        rows = self.rows("q", slots) if read else self.q[slots]
        return (rows.astype(np.float32) @ query.astype(np.float32)) * self.scale[slots]

    def scores(self, slots: np.ndarray, query: np.ndarray) -> np.ndarray:
        """Cosine similarity of ``query`` to the float32 vectors of a few ``slots``: compiled, their rows
        are fetched from memory together instead of one after another."""
        if self.file_backed:
            return dot(self.rows("vectors", slots), query)
        if _speedups is None:
            return dot(self.vectors[slots], query)
        sims = np.empty(slots.size, dtype=np.float64)
        _speedups.similarities(self.vectors, np.ascontiguousarray(slots, dtype=np.int64),
                               np.ascontiguousarray(query, dtype=np.float32), sims)
        return sims

    def mask(self, scope: Scope, now: float, slots: np.ndarray | None = None) -> np.ndarray:
        """Which slots (all of them, or just ``slots``) are live and in ``scope``'s own columns."""
        def take(array: np.ndarray) -> np.ndarray:
            return array[: self.size] if slots is None else array[slots]

        mask = take(self.alive).copy()
        if scope.namespaces is not None:
            codes = [self.ns_codes[ns] for ns in scope.namespaces if ns in self.ns_codes]
            mask &= take(self.ns) == codes[0] if len(codes) == 1 else np.isin(take(self.ns), codes)
        if scope.namespace_prefix:
            codes = [c for name, c in self.ns_codes.items() if name.startswith(scope.namespace_prefix)]
            mask &= np.isin(take(self.ns), codes)
        if scope.kinds is not None:
            codes = [self.kind_codes[k] for k in scope.kinds if k in self.kind_codes]
            mask &= take(self.kind) == codes[0] if len(codes) == 1 else np.isin(take(self.kind), codes)
        if scope.live_at is not None:
            mask &= take(self.expires) > now
        if scope.current_only:
            mask &= take(self.current)
        if scope.created_from is not None:
            mask &= take(self.created) >= epoch_of(scope.created_from)
        if scope.created_before is not None:
            mask &= take(self.created) < epoch_of(scope.created_before)
        return mask

    def nearest(self, mask: np.ndarray | None, query_code: np.ndarray, pool: int,
                planes: np.ndarray | None = None) -> np.ndarray:
        """The ``pool`` slots in ``mask`` (None: every slot) whose codes are nearest ``query_code`` in
        Hamming distance, each differing bit weighted by ``planes`` when given (:func:`.codes.weight_planes`),
        ties to the lower slot, in slot order: the candidates a search scores again."""
        codes, size = self.codes, self.size
        levels = 1 if planes is None else len(planes)
        unranked = ((1 << levels) - 1) * 64 * self.words + 1
        if mask is not None and np.count_nonzero(mask[:size]) * 16 < size:
            # a scope of few rows (a namespace in a big file): their codes gathered; past a sixteenth of
            # the rows one pass over every code costs less (a million rows: 2.2 ms gathered for 10k, 5.5 whole)
            slots = mask[:size].nonzero()[0]
            return slots[_least(self._distances(query_code, slots, planes), pool, unranked)]
        if _speedups is not None:
            found = np.empty(max(pool, 0), dtype=np.int64)
            mask_arg = None if mask is None else np.ascontiguousarray(mask[:size], dtype=np.bool_)
            count = _speedups.nearest(codes, self.words, codes.shape[1], size, mask_arg,
                                      np.ascontiguousarray(query_code, dtype=np.uint64), pool, found,
                                      None if planes is None else np.ascontiguousarray(planes, dtype=np.uint64))
            return found[:count]
        distances = self._distances(query_code, None, planes)
        if mask is not None:
            distances[~mask[:size]] = unranked
        return _least(distances, pool, unranked)

    def _distances(self, query_code: np.ndarray, slots: np.ndarray | None = None,
                   planes: np.ndarray | None = None) -> np.ndarray:
        """Distances (uint16) from ``query_code`` to the codes of ``slots`` (None: every slot): the
        bits that differ, each counted by its weight in ``planes`` when given."""
        rows = slice(0, self.size) if slots is None else slots
        distances = np.zeros(self.size if slots is None else len(slots), dtype=np.uint16)
        for word in range(self.words):
            differ = self.codes[word, rows] ^ query_code[word]
            if planes is None:
                distances += popcount(differ)
                continue
            for level in range(len(planes)):
                distances += popcount(differ & planes[level, word]).astype(np.uint16) << level
        return distances


def _least(distances: np.ndarray, pool: int, limit: int) -> np.ndarray:
    """Positions of the ``pool`` least of ``distances`` below ``limit``, ties to the lower position, in order."""
    reached = np.cumsum(np.bincount(distances, minlength=limit + 1)[:limit])
    cutoff = int(np.searchsorted(reached, pool))  # the first distance at which ``pool`` rows are reached
    if cutoff >= limit:
        return (distances < limit).nonzero()[0]
    below = (distances < cutoff).nonzero()[0]
    at = (distances == cutoff).nonzero()[0][: pool - below.size]
    return np.sort(np.concatenate([below, at]))

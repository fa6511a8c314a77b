"""Cold start and memory of a big store: open + first hybrid search in a NEW process, and its RSS.

Used by bench/scaling.py (``--cached``): the store of each size is built once through the bulk
path (``add_many``) and kept in bench/.cache (``scaling-<vectors>-<size>-<key>.db`` and its data
folder, which holds the vector file); every later run measures on it:

* cold start: ``runs`` fresh Python processes each open the store and run one hybrid search
  (the query embedded by the process itself), timed from just before ``MemoryStore.open`` to the
  results; then 50 more hybrid searches and the process's RSS (``VmRSS``, and its parts:
  ``RssAnon``, memory of its own, and ``RssFile``, pages of mapped files shared with every other
  process). The operating system's page cache is warm (the files were read recently, as after a
  process restart); imports are timed apart.
* warm: hybrid and vector-only search p50/p95 and recall@10 against numpy's exact scan, in one
  process, with ``track_access=False`` (the cached store stays as built); then single ``add()``
  calls (embedding, dedup on) on a copy of the store.
* uncached: the same hybrid searches, then a round of single adds, each after the vector file's
  pages were dropped from the operating system's cache (``POSIX_FADV_DONTNEED``): the rows a
  search or an add reads from the file then come from the disk, as for a memory that has not
  been used since its file left the cache.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH))

from core import (  # noqa: E402
    CACHE,
    corpus,
    embedder_for,
    percentiles,
    settle,
    time_searches,
    time_single_adds,
    time_sqlite_vec,
    vectors_cached,
)

from shared_core import MemoryStore, NewMemory  # noqa: E402

CHILD = """
import json, sys, time
started = time.perf_counter()
sys.path.insert(0, {root!r})
from shared_core import MemoryStore
imported = time.perf_counter()

def rss():
    out = {{}}
    for line in open("/proc/self/status"):
        key, _, value = line.partition(":")
        if key in ("VmRSS", "RssAnon", "RssFile"):
            out[key] = int(value.split()[0]) / 1024
    return out

queries = {queries!r}
opened = time.perf_counter()
store = MemoryStore.open({path!r})  # the embedder the memory recorded, as a user opens it
ready = time.perf_counter()
store.search(queries[0], namespace="bench", limit=10, track_access=False)
first = time.perf_counter()
after_first = rss()
warm = []
for text in queries[1:]:
    began = time.perf_counter()
    store.search(text, namespace="bench", limit=10, track_access=False)
    warm.append((time.perf_counter() - began) * 1000)
print(json.dumps({{"import_ms": (imported - started) * 1000, "open_ms": (ready - opened) * 1000,
                  "cold_ms": (first - opened) * 1000, "rss_first": after_first, "rss": rss(),
                  "warm_p50": sorted(warm)[len(warm) // 2]}}))
store.close()
"""


def _key(texts: list[str]) -> str:
    return hashlib.sha1("\n".join(texts[:1000]).encode()).hexdigest()[:12]


def _remove(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-lock", ".json"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    shutil.rmtree(Path(str(path) + ".files"), ignore_errors=True)


def cached_store(size: int, kind: str, texts: list[str], vectors: np.ndarray) -> tuple[Path, dict[str, Any]]:
    """The store of ``size`` memories in bench/.cache, built by ``add_many`` the first time."""
    path = CACHE / f"scaling-{kind}-{size}-{_key(texts)}.db"
    info_path = Path(str(path) + ".json")
    if path.exists() and info_path.exists():
        return path, json.loads(info_path.read_text())
    _remove(path)
    CACHE.mkdir(parents=True, exist_ok=True)
    items = [NewMemory(text=t, vector=v, namespace="bench") for t, v in zip(texts, vectors, strict=True)]
    started = time.perf_counter()
    with MemoryStore.open(path, embedder=embedder_for(kind)) as store:
        store.add_many(items, batch_size=1000)
    seconds = time.perf_counter() - started
    info = {"size": size, "ingest_s": seconds, "ingest_per_s": size / seconds}
    info_path.write_text(json.dumps(info))
    return path, info


def copy_store(source: Path, copy: Path) -> None:
    """A copy of ``source`` and its data folder (sparse, as they are; through symlinks, so that a cache
    folder of links never has the copy write into the original's vector file), synced: the copy's
    gigabytes are not written back during what is measured next."""
    _remove(copy)
    subprocess.run(["cp", "-L", "--sparse=always", str(source), str(copy)], check=True)
    subprocess.run(["cp", "-rL", "--sparse=always", str(source) + ".files", str(copy) + ".files"], check=True)
    settle()


def drop_from_page_cache(path: Path) -> bool:
    """Ask the operating system to drop ``path``'s cached pages (pages a process maps stay); False
    where it cannot be asked."""
    if not hasattr(os, "posix_fadvise") or not path.exists():
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    return True


def cold_starts(path: Path, queries: list[str], runs: int) -> dict[str, Any]:
    """The median of ``runs`` new processes: open + first hybrid search, and RSS."""
    results = []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", CHILD.format(root=str(ROOT), path=str(path), queries=queries)],
                             capture_output=True, text=True, timeout=3600, check=True)
        results.append(json.loads(out.stdout.strip().splitlines()[-1]))
    results.sort(key=lambda r: r["cold_ms"])
    middle = results[len(results) // 2]
    return {"cold_ms": middle["cold_ms"], "cold_runs_ms": [r["cold_ms"] for r in results],
            "cold_open_ms": middle["open_ms"], "import_ms": middle["import_ms"],
            "rss_mb": middle["rss"]["VmRSS"], "rss_anon_mb": middle["rss"]["RssAnon"],
            "rss_file_mb": middle["rss"]["RssFile"], "rss_first_mb": middle["rss_first"]["VmRSS"],
            "cold_warm_p50": middle["warm_p50"]}


def cached_run(size: int, kind: str, turns: list[str], questions: list[str], n_queries: int, workdir: Path,
               runs: int = 5, add_rounds: int = 5) -> dict[str, Any]:
    """bench/core.py's measurements on the cached store of ``size``, with the cold start and RSS."""
    texts = corpus(size, turns)
    vectors = vectors_cached(kind, texts)
    rng = random.Random(size)
    query_texts = rng.sample(questions, n_queries)
    query_vectors = vectors_cached(kind, query_texts, seed=2)
    path, info = cached_store(size, kind, texts, vectors)
    result: dict[str, Any] = {"size": size, "vectors": kind, "cached": True, **info}
    result.update(cold_starts(path, query_texts[:51], runs))
    result["first_search_ms"] = result["cold_ms"]
    result["file_mb"] = sum(p.stat().st_blocks * 512 for p in Path(str(path) + ".files").glob("vectors.idx")) / 2**20

    exact = []
    numpy_ms = []
    for q in query_vectors:
        began = time.perf_counter()
        scores = vectors @ q
        top = np.argpartition(-scores, 10)[:10]
        exact.append(top[np.argsort(-scores[top])])
        numpy_ms.append((time.perf_counter() - began) * 1000)
    result["numpy_p50"], result["numpy_p95"] = percentiles(numpy_ms)
    with MemoryStore.open(path, embedder=embedder_for(kind)) as store:
        store.search(query_texts[0], namespace="bench", limit=10, track_access=False)
        rowids = np.array(store.db.query("SELECT chunk_rowid FROM memory_chunks ORDER BY chunk_rowid"))[:, 0]
        result.update(time_searches(store, query_texts, query_vectors, exact,
                                    lambda rowid: int(np.searchsorted(rowids, rowid)), track_access=False))
        if drop_from_page_cache(Path(str(path) + ".files") / "vectors.idx"):
            uncached = []
            for text, q in zip(query_texts, query_vectors, strict=True):
                started = time.perf_counter()
                store.search(text, vector=q, namespace="bench", limit=10, track_access=False)
                uncached.append((time.perf_counter() - started) * 1000)
            result["uncached_hybrid_p50"], result["uncached_hybrid_p95"] = percentiles(uncached)
    result["sqlite_vec_p50"], result["sqlite_vec_p95"] = time_sqlite_vec(path, embedder_for(kind), query_vectors[:20])
    result["hybrid_vs_numpy"] = result["hybrid_p50"] / result["numpy_p50"]

    copy = workdir / f"adds-{kind}-{size}.db"  # single adds change the store: on a copy (sparse, as it is)
    copy_store(path, copy)
    with MemoryStore.open(copy, embedder=embedder_for(kind)) as store:
        store.search(query_texts[0], namespace="bench", limit=10, track_access=False)
        result.update(time_single_adds(store, turns, add_rounds))
        if drop_from_page_cache(Path(str(copy) + ".files") / "vectors.idx"):
            result["uncached_single_add_per_s"] = time_single_adds(store, turns, 1, seed=98)["single_add_per_s"]
    _remove(copy)
    return result

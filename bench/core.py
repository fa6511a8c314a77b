"""Core speed: ingest, single adds, search latency and vector recall, against numpy in the same run.

    python bench/core.py                                   # 10k and 100k, hashing + random vectors
    python bench/core.py --sizes 10000 --vectors minilm    # real sentence embeddings (cached; slow first time)
    python bench/core.py --vectors static                  # the default static embedder (its store embeds the single adds)
    python bench/core.py --vectors static-uncentred        # the same with its common direction kept (static/minilm-256)

For each size and kind of vector it builds a store from precomputed vectors and reports:
bulk ingest (memories/s, the median of three loads into fresh files up to 100k memories),
single ``add`` with dedup on, embedded by the store's embedder (the static one with static
vectors, else the hashing one; adds/s, the median of five rounds of 200),
the first search of a new store object (loading the vector mirror), ``search()`` p50/p95
(hybrid, the default), vector-only search through the mirror and through sqlite-vec, and a
numpy brute-force scan of the same vectors as the floor, on one BLAS thread and on all of them
(threadpoolctl, from the bench extra; without it, once, with the threads OPENBLAS_NUM_THREADS
allows); recall@10 of the vector search against that exact scan. Texts are LoCoMo turns recombined (realistic word statistics);
queries are LoCoMo questions. Prints Markdown for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import hashlib
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from shared_core import HashingEmbedder, MemoryStore, NewMemory  # noqa: E402
from shared_core.embed import StaticEmbedder  # noqa: E402

sys.path.insert(0, str(ROOT / "bench" / "quality"))
sys.path.insert(0, str(ROOT / "bench"))
from locomo import DEFAULT_DATA as LOCOMO  # noqa: E402
from machine import describe as describe_machine  # noqa: E402

CACHE = ROOT / "bench" / ".cache"


def locomo_texts() -> tuple[list[str], list[str]]:
    if not LOCOMO.exists():
        raise SystemExit(f"LoCoMo data not found at {LOCOMO}: set LOCOMO_PATH to locomo10.json "
                         "(LoCoMo, snap-research/LoCoMo, data/locomo10.json)")
    data = json.loads(LOCOMO.read_text(encoding="utf-8"))
    turns = [t["text"] for conv in data for key, value in conv["conversation"].items()
             if key.startswith("session_") and isinstance(value, list) for t in value]
    questions = [qa["question"] for conv in data for qa in conv["qa"]]
    return turns, questions


def corpus(n: int, turns: list[str], seed: int = 7) -> list[str]:
    """n distinct memory-like texts: halves of two random LoCoMo turns, numbered to stay unique."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        a, b = rng.choice(turns).split(), rng.choice(turns).split()
        out.append(" ".join(a[: max(1, len(a) // 2)] + b[len(b) // 2 :]) + f" (note {i})")
    return out


def vectors_for(kind: str, texts: list[str], dims: int = 384, seed: int = 1) -> np.ndarray:
    if kind == "hashing":  # in parts: the embedder's work arrays for a million texts at once would not fit in RAM
        embedder = HashingEmbedder(dims)
        return np.concatenate([embedder.embed(texts[i : i + 10_000]) for i in range(0, len(texts), 10_000)])
    if kind == "random":
        rng = np.random.default_rng(seed + len(texts))
        x = rng.standard_normal((len(texts), dims)).astype(np.float32)
        return x / np.linalg.norm(x, axis=1, keepdims=True)
    if kind == "minilm":
        return _minilm(texts)
    if kind in ("static", "static-uncentred"):  # the default embedder: fast enough to need no cache
        return embedder_for(kind).embed(texts)
    raise SystemExit(f"unknown vectors {kind!r}")


def embedder_for(kind: str) -> HashingEmbedder | StaticEmbedder:
    """The store's embedder: the one that made the vectors where the dimensions must match, else hashing."""
    if kind in ("static", "static-uncentred"):
        return StaticEmbedder(centred=kind == "static")
    return HashingEmbedder()


def vectors_cached(kind: str, texts: list[str], dims: int = 384, seed: int = 1) -> np.ndarray:
    """``vectors_for``, kept in bench/.cache: the hashing embedder needs minutes for 100k texts on 2 busy cores."""
    if kind != "hashing":
        return vectors_for(kind, texts, dims, seed)  # random vectors are instant; minilm caches itself
    key = hashlib.sha1("\n".join(texts).encode()).hexdigest()[:16]
    path = CACHE / f"{kind}-{dims}-{len(texts)}-{key}.npy"
    if path.exists():
        return np.load(path)
    vectors = vectors_for(kind, texts, dims, seed)
    CACHE.mkdir(parents=True, exist_ok=True)
    np.save(path, vectors)
    return vectors


def _minilm(texts: list[str]) -> np.ndarray:
    """all-MiniLM-L6-v2 vectors, cached in 4,096-text chunks (a smaller corpus is a prefix of a larger one)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    embedder = None
    parts = []
    started = time.perf_counter()
    for start in range(0, len(texts), 4096):
        chunk = texts[start : start + 4096]
        path = CACHE / f"minilm-chunk-{hashlib.sha1(chr(0).join(chunk).encode()).hexdigest()[:20]}.npy"
        if path.exists():
            parts.append(np.load(path))
            continue
        if embedder is None:
            from shared_core.embed import SentenceTransformerEmbedder

            embedder = SentenceTransformerEmbedder("all-MiniLM-L6-v2", batch_size=128)
        vectors = embedder.embed(chunk).astype(np.float32)
        np.save(path, vectors)
        parts.append(vectors)
        done = start + len(chunk)
        print(f"  minilm: {done}/{len(texts)} ({done / (time.perf_counter() - started):.0f}/s)", file=sys.stderr)
    return np.concatenate(parts) if parts else np.zeros((0, 384), dtype=np.float32)


def blas_threads(limit: int) -> Any:
    """numpy's BLAS held to ``limit`` threads inside the block (threadpoolctl, from the bench extra);
    without threadpoolctl, whatever OPENBLAS_NUM_THREADS says."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(limits=limit, user_api="blas")


def blas_thread_count() -> int | None:
    """How many threads numpy's BLAS uses by default here; None without threadpoolctl."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return None
    return max((pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"), default=1)


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


def _fresh(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-lock"):
        Path(str(path) + suffix).unlink(missing_ok=True)


def time_searches(store: MemoryStore, query_texts: list[str], query_vectors: np.ndarray, exact: list[np.ndarray],
                  position: Callable[[int], int], *, track_access: bool = True) -> dict[str, float]:
    """Hybrid and vector-only searches of the ``bench`` namespace: p50/p95 ms each, and the vector
    side's recall@10 against ``exact`` (positions in the scan's order; ``position`` maps a rowid to one)."""
    hybrid_ms, vector_ms, recalls = [], [], []
    for text, q, truth in zip(query_texts, query_vectors, exact, strict=True):
        started = time.perf_counter()
        store.search(text, vector=q, namespace="bench", limit=10, track_access=track_access)
        hybrid_ms.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        hits = store.search(vector=q, namespace="bench", limit=10, fusion="vector", track_access=False)
        vector_ms.append((time.perf_counter() - started) * 1000)
        found = {position(h.memory.rowid) for h in hits}
        recalls.append(len(found & {int(t) for t in truth}) / 10)
    (hybrid_p50, hybrid_p95), (vector_p50, vector_p95) = percentiles(hybrid_ms), percentiles(vector_ms)
    return {"hybrid_p50": hybrid_p50, "hybrid_p95": hybrid_p95, "vector_p50": vector_p50, "vector_p95": vector_p95,
            "recall10": float(np.mean(recalls))}


def time_sqlite_vec(path: Path, embedder: Any, query_vectors: np.ndarray) -> tuple[float, float]:
    """p50/p95 ms of vector-only searches through sqlite-vec's exact index instead of the fast path."""
    with MemoryStore.open(path, embedder=embedder, config={"search": {"vector_index": "sqlite-vec"}}) as store:
        ms = []
        for q in query_vectors:
            started = time.perf_counter()
            store.search(vector=q, namespace="bench", limit=10, fusion="vector", track_access=False)
            ms.append((time.perf_counter() - started) * 1000)
    return percentiles(ms)


def time_single_adds(store: MemoryStore, turns: list[str], rounds: int, *, seed: int = 99) -> dict[str, Any]:
    """``rounds`` rounds of 200 single ``add()`` calls of new texts (another ``seed``: other texts):
    each round's rate, their median, p50/p95 ms."""
    single = [f"single add {i}: " + t for i, t in enumerate(corpus(200 * rounds, turns, seed=seed))]
    rates, latencies = [], []
    for start in range(0, len(single), 200):
        round_started = time.perf_counter()
        for text in single[start : start + 200]:
            started = time.perf_counter()
            store.add(text, namespace="bench")
            latencies.append((time.perf_counter() - started) * 1000)
        rates.append(200 / (time.perf_counter() - round_started))
    p50, p95 = percentiles(latencies)
    return {"single_add_rounds_per_s": rates, "single_add_per_s": statistics.median(rates),
            "single_add_p50": p50, "single_add_p95": p95}


def settle() -> None:
    """Write the OS's dirty pages out, so that one phase's writeback is not billed to the next."""
    if hasattr(os, "sync"):
        os.sync()


def run(size: int, kind: str, turns: list[str], questions: list[str], n_queries: int, workdir: Path,
        ingest_runs: int | None = None, add_rounds: int = 5) -> dict:
    """One size and kind of vector. Ingest is the median of ``ingest_runs`` loads into fresh files
    (3 up to 100k memories, else 1); single adds, the median rate of ``add_rounds`` rounds of 200."""
    texts = corpus(size, turns)
    vectors = vectors_cached(kind, texts)
    rng = random.Random(size)
    query_texts = rng.sample(questions, n_queries)
    query_vectors = vectors_cached(kind, query_texts, seed=2)
    path = workdir / f"bench-{kind}-{size}.db"
    result: dict = {"size": size, "vectors": kind}

    ingest_runs = ingest_runs or (3 if size <= 100_000 else 1)
    seconds = []
    for _ in range(ingest_runs):
        _fresh(path)
        settle()
        with MemoryStore.open(path, embedder=embedder_for(kind)) as store:
            items = [NewMemory(text=t, vector=v, namespace="bench") for t, v in zip(texts, vectors, strict=False)]
            gc.collect()
            started = time.perf_counter()
            store.add_many(items, batch_size=1000)
            seconds.append(time.perf_counter() - started)
            del items
    result["ingest_runs_s"] = seconds
    result["ingest_s"] = statistics.median(seconds)
    result["ingest_per_s"] = size / result["ingest_s"]
    settle()

    # numpy floor: exact top-10 over the same vectors, same queries
    exact = []

    def numpy_scan(q: np.ndarray) -> np.ndarray:
        scores = vectors @ q
        top = np.argpartition(-scores, 10)[:10]
        return top[np.argsort(-scores[top])]

    def timed_scans(keep: bool) -> list[float]:
        ms = []
        for q in query_vectors:
            started = time.perf_counter()
            top = numpy_scan(q)
            ms.append((time.perf_counter() - started) * 1000)
            if keep:
                exact.append(top)
        return ms

    # numpy's scan on one BLAS thread (steady on a shared machine: see docs/benchmarks.md) and on
    # all of them (numpy's default), each the floor of one ratio
    with blas_threads(1):
        result["numpy_p50"], result["numpy_p95"] = percentiles(timed_scans(keep=True))
    result["blas_threads"] = blas_thread_count()
    if result["blas_threads"] is not None:
        result["numpy_all_p50"], result["numpy_all_p95"] = percentiles(timed_scans(keep=False))

    with MemoryStore.open(path, embedder=embedder_for(kind)) as store:
        started = time.perf_counter()
        store.search(query_texts[0], vector=query_vectors[0], namespace="bench", limit=10, track_access=False)
        result["first_search_ms"] = (time.perf_counter() - started) * 1000  # includes loading the mirror
        rowid_to_index = {m.rowid: i for i, m in enumerate(store.list(namespace="bench", order_by="chunk_rowid"))}
        result.update(time_searches(store, query_texts, query_vectors, exact, rowid_to_index.__getitem__))

        # single adds with the store's embedder (its caches start empty, as in a new process)
        settle()
        result.update(time_single_adds(store, turns, add_rounds))

    result["sqlite_vec_p50"], result["sqlite_vec_p95"] = time_sqlite_vec(path, embedder_for(kind), query_vectors[:50])
    result["hybrid_vs_numpy"] = result["hybrid_p50"] / result["numpy_p50"]
    if "numpy_all_p50" in result:
        result["hybrid_vs_numpy_all"] = result["hybrid_p50"] / result["numpy_all_p50"]
    _fresh(path)
    return result


def table(rows: list[dict]) -> str:
    threads = next((r["blas_threads"] for r in rows if r.get("blas_threads")), None)
    head = ("| memories | vectors | ingest /s | single add /s | first search ms | search p50 / p95 ms | "
            f"numpy p50 / p95 ms, 1 / {threads or 'all'} BLAS threads | search / numpy | "
            "vector (mirror) p50 / p95 | sqlite-vec p50 / p95 | recall@10 |")
    lines = [head, "|---" * (head.count("|") - 1) + "|"]
    for r in rows:
        numpy_all = (f"{r['numpy_all_p50']:.1f} / {r['numpy_all_p95']:.1f}", f"{r['hybrid_vs_numpy_all']:.2f}x") \
            if "numpy_all_p50" in r else ("-", "-")  # no threadpoolctl: one measurement, as the environment says
        lines.append(
            f"| {r['size']:,} | {r['vectors']} | {r['ingest_per_s']:,.0f} | {r['single_add_per_s']:,.0f} | "
            f"{r['first_search_ms']:,.0f} | {r['hybrid_p50']:.1f} / {r['hybrid_p95']:.1f} | "
            f"{r['numpy_p50']:.1f} / {r['numpy_p95']:.1f}; {numpy_all[0]} | "
            f"{r['hybrid_vs_numpy']:.2f}x; {numpy_all[1]} | "
            f"{r['vector_p50']:.1f} / {r['vector_p95']:.1f} | {r['sqlite_vec_p50']:.1f} / {r['sqlite_vec_p95']:.1f} | "
            f"{r['recall10']:.3f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--vectors", default="hashing,random", help="comma list of hashing, static, static-uncentred, random, minilm")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--json", type=Path, help="also write raw results here")
    args = parser.parse_args(argv)
    turns, questions = locomo_texts()
    rows = []
    with tempfile.TemporaryDirectory(prefix="openkoi-bench-") as tmp:
        for size in args.sizes:
            for kind in args.vectors.split(","):
                print(f"running {size:,} x {kind} ...", file=sys.stderr)
                rows.append(run(size, kind, turns, questions, args.queries, Path(tmp)))
                print(table(rows[-1:]).splitlines()[-1], file=sys.stderr)
    print(f"machine: {describe_machine()}\n")
    print(f"command: python bench/core.py {' '.join(argv if argv is not None else sys.argv[1:])}\n")
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

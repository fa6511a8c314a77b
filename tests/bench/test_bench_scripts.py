"""The benchmark scripts still run (tiny sizes, random vectors, no LoCoMo file needed).

They measure nothing here: this keeps ``make bench`` from rotting between full runs.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
TURNS = [f"turn {i}: we talked about hiking, the ferry at {i % 24}:00 and a cat called Mochi" for i in range(60)]
QUESTIONS = [f"what did we say about topic {i}?" for i in range(40)]


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_peers_in_one_run(monkeypatch, tmp_path, capsys):
    peers = _load("peers")
    monkeypatch.setattr(peers, "locomo_texts", lambda: (TURNS, QUESTIONS))
    out = tmp_path / "peers.json"
    assert peers.main(["--sizes", "300", "--queries", "8", "--min-queries", "4", "--vectors", "random",
                       "--json", str(out)]) == 0
    rows = {r["system"]: r for r in json.loads(out.read_text())["rows"]}
    assert {"numpy", "openkoi vector", "openkoi hybrid"} <= set(rows)
    for name, row in rows.items():
        assert row["queries"] == 8 and row["p50"] > 0
        if name not in ("openkoi hybrid", "Chroma"):  # hybrid is not a vector search; HNSW approximates
            assert row["recall10"] == 1.0, name
    assert rows["openkoi vector"]["search_ratio"] == 1.0 and rows["openkoi vector"]["ingest_s"] > 0
    printed = capsys.readouterr()
    assert "| 300 | openkoi vector |" in printed.out
    for key, peer_class in peers.PEERS.items():  # every absent peer says how to get it
        if key not in ("numpy", "openkoi") and peer_class.name not in rows:
            assert f"{peer_class.name}: skipped: pip install" in printed.err


@pytest.mark.sqlite_only  # the script measures the SQLite store
@pytest.mark.parametrize("threads", [2, None])
def test_core_times_numpy_on_one_blas_thread_and_on_all(monkeypatch, tmp_path, capsys, threads):
    """With threadpoolctl (the bench extra) numpy's scan is timed twice; without it, once."""
    import contextlib

    core = _load("core")
    monkeypatch.setattr(core, "locomo_texts", lambda: (TURNS, QUESTIONS))
    monkeypatch.setattr(core, "blas_threads", lambda limit: contextlib.nullcontext())
    monkeypatch.setattr(core, "blas_thread_count", lambda: threads)
    out = tmp_path / "core.json"
    assert core.main(["--sizes", "300", "--queries", "8", "--vectors", "random", "--json", str(out)]) == 0
    (row,) = json.loads(out.read_text())
    assert row["numpy_p50"] > 0 and row["recall10"] == 1.0 and row["single_add_per_s"] > 0
    assert ("numpy_all_p50" in row) == (threads is not None)
    printed = capsys.readouterr().out
    line = next(line for line in printed.splitlines() if line.startswith("| 300 |"))
    if threads:
        assert "1 / 2 BLAS threads" in printed and row["hybrid_vs_numpy_all"] > 0
        assert f"{row['hybrid_vs_numpy']:.2f}x; {row['hybrid_vs_numpy_all']:.2f}x |" in line
    else:
        assert "1 / all BLAS threads" in printed and f"{row['hybrid_vs_numpy']:.2f}x; - |" in line


def test_peers_refuses_unknown_names():
    peers = _load("peers")
    with pytest.raises(SystemExit):
        peers.main(["--peers", "openkoi,pinecone"])


def test_scaling_plot(tmp_path):
    pytest.importorskip("matplotlib")
    scaling = _load("scaling")
    rows = [{"size": n, "ingest_per_s": 3000.0, "single_add_per_s": 80.0,
             **{f"{key}_{p}": n / 1000 * (2 if p == "p95" else 1) for key, _ in scaling.SEARCHES for p in ("p50", "p95")}}
            for n in (1000, 10000, 100000)]
    target = tmp_path / "docs" / "scaling.png"
    scaling.plot(rows, target, "test")
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.sqlite_only  # the SQLite vector file's cold start
def test_scaling_cached_run_measures_a_cold_start(monkeypatch, tmp_path):
    cold = _load("cold_start")
    monkeypatch.setattr(cold, "CACHE", tmp_path / "cache")
    row = cold.cached_run(300, "random", TURNS, QUESTIONS, 6, tmp_path, runs=1, add_rounds=1)
    assert row["cold_ms"] > 0 and row["rss_mb"] >= row["rss_anon_mb"] > 0 and row["file_mb"] > 0
    assert row["recall10"] == 1.0 and row["single_add_per_s"] > 0 and row["ingest_per_s"] > 0
    if hasattr(os, "posix_fadvise"):  # the same searches, and adds, with the vector file's pages dropped
        assert row["uncached_hybrid_p50"] > 0 and row["uncached_single_add_per_s"] > 0
    again = cold.cached_run(300, "random", TURNS, QUESTIONS, 6, tmp_path, runs=1, add_rounds=1)
    assert again["ingest_s"] == row["ingest_s"]  # the store was built once and kept
    assert list((tmp_path / "cache").glob("scaling-random-300-*.db"))


@pytest.mark.sqlite_only  # the SQLite vector file
def test_a_copy_of_a_cached_store_never_writes_into_the_original(tmp_path):
    # a cache folder of symlinks (the cache on another disk) once had `cp -r` copy the data folder's
    # link: the measured adds then wrote into the cached store's vector file
    from shared_core import MemoryStore

    cold = _load("cold_start")
    real, links = tmp_path / "real", tmp_path / "cache"
    real.mkdir()
    links.mkdir()
    with MemoryStore.open(real / "s.db") as store:
        store.add_many([f"memory {i} about the harbour" for i in range(300)])
    for name in ("s.db", "s.db.files"):
        (links / name).symlink_to(real / name)
    original = (real / "s.db.files" / "vectors.idx").read_bytes()
    cold.copy_store(links / "s.db", tmp_path / "copy.db")
    assert not (tmp_path / "copy.db.files").is_symlink()
    with MemoryStore.open(tmp_path / "copy.db") as store:
        store.add_many([f"memory {i} added to the copy" for i in range(300)])
    assert (real / "s.db.files" / "vectors.idx").read_bytes() == original


@pytest.mark.slow
@pytest.mark.sqlite_only  # it starts its own PostgreSQL; the PostgreSQL session need not run it twice
def test_postgres_bench_runs(monkeypatch, tmp_path, capsys):
    pytest.importorskip("pgserver")
    pytest.importorskip("psycopg")
    postgres = _load("postgres")
    monkeypatch.setattr(postgres.core, "locomo_texts", lambda: (TURNS, QUESTIONS))
    out = tmp_path / "postgres.json"
    assert postgres.main(["--sizes", "300", "--vectors", "random", "--queries", "5", "--processes", "1",
                          "--json", str(out)]) == 0
    (row,) = json.loads(out.read_text())["postgres"]
    assert row["size"] == 300 and row["ingest_per_s"] > 0 and 0 <= row["recall10"] <= 1 and row["qps"] > 0
    assert row["big_namespace_add_per_s"] > 0
    # 300 memories are scanned exactly: the check finds every planted near-duplicate
    (checked,) = row["near_duplicates"].values()  # at the default ef_search only
    assert (checked["found"], checked["planted"]) == (300, 300)
    assert "| 300 | random (384-d) |" in capsys.readouterr().out
    assert not _orphaned_servers("openkoi-bench-pg-")  # its private server stopped with it


def _orphaned_servers(prefix: str) -> list[str]:
    """Data directories (named ``prefix``...) of PostgreSQL servers still running after their directory went."""
    import psutil

    orphans = []
    for process in psutil.process_iter(["cmdline"]):
        line = process.info["cmdline"] or []
        if line and line[0].endswith("postgres") and "-D" in line[:-1]:
            data = line[line.index("-D") + 1]
            if prefix in data and not os.path.exists(data):
                orphans.append(data)
    return orphans


@pytest.mark.sqlite_only  # it times SQLite's FTS5 on a file of its own
def test_keyword_gate_bench_runs(monkeypatch, tmp_path, capsys):
    gate = _load("keyword_gate")
    monkeypatch.setattr(gate, "locomo_texts", lambda: (TURNS, QUESTIONS))
    assert gate.main(["--rows", "2600", "--scope-rows", "100", "--queries", "5", "--workdir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "| file-wide (before) |" in out and "| within the scope (now) |" in out

"""Shared fixtures: stores on :memory: or tmp_path, a manual clock, a deterministic fake embedder.

``OPENKOI_TEST_BACKEND=postgres`` runs the same tests on PostgreSQL: every store a test opens
(``:memory:`` or a path) becomes a schema on one server for the session (tests/pgmode).
Tests of SQLite itself are marked ``sqlite_only``; tests of the PostgreSQL backend alone,
``postgres_only``; tests whose subject is the same on every backend, ``backend_free`` (the SQLite
run has them).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
import tempfile
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import pytest

from shared_core import ManualClock, MemoryStore

BACKEND = os.environ.get("OPENKOI_TEST_BACKEND", "sqlite").strip().lower() or "sqlite"
if BACKEND not in ("sqlite", "postgres"):
    raise pytest.UsageError(f"OPENKOI_TEST_BACKEND={BACKEND!r}: use sqlite or postgres")
_PGMODE = Path(__file__).parent / "pgmode"
_harness = None


def pytest_configure(config):
    global _harness
    if BACKEND != "postgres" or _harness is not None:
        return
    sys.path.insert(0, str(_PGMODE))
    from harness import ENV_URL, SERVERS, installed_harness, start_server

    if os.environ.get("PYTEST_XDIST_WORKER") and os.environ.get(ENV_URL):  # the server pytest -n started
        _harness = installed_harness(os.environ[ENV_URL])
        return
    kind = os.environ.get("OPENKOI_TEST_PGSERVER", "pgserver")
    if kind not in SERVERS:
        raise pytest.UsageError(f"OPENKOI_TEST_PGSERVER={kind!r}: use {' or '.join(SERVERS)}")
    url = os.environ.get("OPENKOI_TEST_DATABASE_URL") or start_server(Path(tempfile.mkdtemp(prefix="openkoi-pg-")), kind)
    os.environ[ENV_URL] = url
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(_PGMODE), os.environ.get("PYTHONPATH", "")) if p)
    _harness = installed_harness(url)


def pytest_collection_modifyitems(config, items):
    # the slow tests first: spread over the cores (pytest-xdist), a minute-long test begun near the
    # end would keep one core busy after the other has finished
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
    skip = pytest.mark.skip(reason=f"not for the {BACKEND} backend")
    same = pytest.mark.skip(reason="the same on every backend: the SQLite run has it")
    for item in items:
        if (BACKEND == "postgres" and "sqlite_only" in item.keywords) or (
            BACKEND == "sqlite" and "postgres_only" in item.keywords
        ):
            item.add_marker(skip)
        elif BACKEND == "postgres" and "backend_free" in item.keywords:
            item.add_marker(same)


@pytest.fixture(autouse=True)
def _free_postgres_schemas(request):
    yield
    if _harness is not None:
        _harness.release_test(request.node.nodeid)


@pytest.fixture
def sqlite_paths():
    """Within the test, paths open real SQLite files even in a PostgreSQL session."""
    if _harness is not None:
        _harness.bypass = True
    yield
    if _harness is not None:
        _harness.bypass = False


@pytest.fixture
def pg_url(request) -> str:
    """A fresh, empty PostgreSQL memory (a schema) for this test; postgres sessions only."""
    if _harness is None:
        pytest.skip("needs OPENKOI_TEST_BACKEND=postgres")
    from harness import schema_url

    schema = _harness.allocate()
    yield schema_url(_harness.base_url, schema)
    _harness.release(schema)


@pytest.fixture
def pg_alone_url(pg_server):
    """A memory in a PostgreSQL database of its own, dropped afterwards: for a test that must not share
    the database's sessions with the tests pytest-xdist runs beside it (their transactions hold back
    what VACUUM may mark and when a new index may be used; a test that ends every session of the
    database must end only its own)."""
    import psycopg
    from harness import schema_url

    name = f"openkoi_alone_{uuid.uuid4().hex[:12]}"  # a new URL: the session's pools linger on old ones
    with psycopg.connect(pg_server, autocommit=True) as server:
        server.execute(f'CREATE DATABASE "{name}"')
        url = urlsplit(pg_server)._replace(path=f"/{name}").geturl()
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION vector SCHEMA public")
        yield schema_url(url, "memory")
        server.execute(f'DROP DATABASE "{name}" WITH (FORCE)')  # FORCE: those lingering pools


@pytest.fixture
def pg_server() -> str:
    """The session's PostgreSQL server (a database URL without a schema); postgres sessions only."""
    if _harness is None:
        pytest.skip("needs OPENKOI_TEST_BACKEND=postgres")
    return _harness.base_url


@pytest.fixture(scope="session")
def backend() -> str:
    """``sqlite`` or ``postgres``: what this session's stores run on."""
    return BACKEND


class FakeEmbedder:
    """Deterministic, tiny and exact: each distinct word gets a fixed random direction.

    Texts with the same words get the same vector; one shared word out of many gives a
    small similarity. Good for testing plumbing without depending on the hashing embedder.
    """

    def __init__(self, dims: int = 16, name: str = "fake-embedder") -> None:
        self.dims = dims
        self.name = f"{name}-{dims}"

    def _word(self, word: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.sha256(word.encode()).digest()[:8], "little")
        return np.random.default_rng(seed).standard_normal(self.dims)

    def embed(self, texts):
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        for i, text in enumerate(texts):
            words = text.lower().split() or [text]
            for word in words:
                out[i] += self._word(word)
            out[i] /= np.linalg.norm(out[i]) or 1.0
        return out


@contextlib.contextmanager
def _statements(db, method: str, keep):
    seen: list[tuple[str, tuple]] = []
    original = getattr(db, method)

    def spy(sql, params=()):
        if keep(sql):
            seen.append((sql, tuple(params)))
        return original(sql, params)

    setattr(db, method, spy)
    try:
        yield seen
    finally:
        delattr(db, method)  # the class's method again


@pytest.fixture
def sql_spy():
    """``with sql_spy(store.db, "query", keep) as seen:``: the (sql, params) of the statements that
    ``db.query`` (or another method) ran inside the block and ``keep(sql)`` accepted."""
    return _statements


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock("2026-01-01T00:00:00Z")


@pytest.fixture
def store(clock):
    with MemoryStore.open(":memory:", clock=clock, config={}) as s:
        yield s


@pytest.fixture
def file_store(tmp_path, clock):
    with MemoryStore.open(tmp_path / "openkoi.db", clock=clock, config={}) as s:  # seed 000 layout
        yield s


@pytest.fixture(params=["compiled", "fallback"])
def speedups(request, monkeypatch) -> str:
    """The test runs twice: with shared_core._speedups (skipped where no C compiler built it) and with
    the numpy and Python code each of its loops stands in for."""
    if request.param == "compiled":
        pytest.importorskip("shared_core._speedups")  # built where a C compiler was at install
    else:
        from shared_core.embed import hashes, hashing
        from shared_core.index import mirror

        monkeypatch.setattr(mirror, "_speedups", None)
        monkeypatch.setattr(hashes, "_compiled_fnv", None)
        monkeypatch.setattr(hashing, "_compiled_signs", None)
        monkeypatch.setattr(hashing, "_compiled_project", None)
    return request.param


@pytest.fixture(params=["avx512", "avx2", "popcnt", "portable"])
def kernel(request):
    """Each kernel of the compiled scans (``near``, ``nearest``) this CPU can run (``portable`` is in
    every build)."""
    compiled = pytest.importorskip("shared_core._speedups")  # built where a C compiler was at install
    if request.param not in compiled.near_kernels():
        pytest.skip(f"this CPU cannot run the {request.param} kernel")
    before = compiled.use_near_kernel(request.param)
    yield request.param
    compiled.use_near_kernel(before)


@pytest.fixture
def fake_embedder() -> FakeEmbedder:
    return FakeEmbedder()


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory, monkeypatch):
    """Never read the developer's ~/.openkoi/config.toml or write to their data dir."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("OPENKOI_DATA", str(home / "data"))
    monkeypatch.delenv("OPENKOI_CONFIG", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))

"""Settings of where a memory runs: its database and the server."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigError

__all__ = ["DatabaseConfig", "ServerConfig"]


@dataclass
class DatabaseConfig:
    """Where the memory lives and the PostgreSQL backend's settings (issue 10, docs/scaling.md).

    ``url``: the memory ``MemoryStore.open()`` opens when given no path (``$OPENKOI_DATABASE_URL``
    wins over it): a ``postgresql://`` URL, or a file path; "" means ``<data_dir>/openkoi.db``.
    """

    url: str = ""
    pool_size: int = 8  # connections per process and memory (psycopg-pool)
    hnsw_m: int = 16  # pgvector HNSW build settings (pgvector's default m)
    hnsw_ef_construction: int = 128  # twice pgvector's 64: the build takes twice as long, recall@10 at 1M needs it
    hnsw_ef_search: int = 1000  # candidates per HNSW search (pgvector's limit: recall@10 >= 0.95 at 1M real-text vectors needs it)
    exact_scan_rows: int = 2000  # scopes up to this many rows skip the index: an exact scan, fast at this size
    index_after_load_rows: int = 100  # an add_many this big that at least doubles the memory builds HNSW after it (0: never)
    hnsw_build_memory_mb: int = 0  # that build's maintenance_work_mem (0: the server's); too small: a warning
    cache_mb: int = 64  # SQLite page cache per connection (SQLite's own default is 2 MB)
    checkpoint_pages: int = 10_000  # WAL pages that trigger a checkpoint (SQLite's default 1,000; 4 KB each)
    background_checkpoints: bool = True  # copy committed WAL pages from a thread as well (shared_core/db/sqlite/checkpoints.py)
    busy_timeout_s: float = 10.0  # how long a write waits for another writer before BusyError (REST: 503)

    def __post_init__(self) -> None:
        if self.cache_mb < 1:
            raise ConfigError("database.cache_mb must be at least 1")
        if self.checkpoint_pages < 1:
            raise ConfigError("database.checkpoint_pages must be at least 1")
        if self.pool_size < 1:
            raise ConfigError("database.pool_size must be at least 1")
        if not 0 <= self.busy_timeout_s <= 3600:
            raise ConfigError("database.busy_timeout_s must be 0-3600 seconds")
        if not 2 <= self.hnsw_m <= 100 or not 4 <= self.hnsw_ef_construction <= 1000:
            raise ConfigError("database.hnsw_m must be 2-100 and database.hnsw_ef_construction 4-1000 (pgvector's limits)")
        if not 1 <= self.hnsw_ef_search <= 1000:
            raise ConfigError("database.hnsw_ef_search must be 1-1000 (pgvector's limit)")
        if self.exact_scan_rows < 0:
            raise ConfigError("database.exact_scan_rows must not be negative")
        if self.index_after_load_rows < 0 or self.hnsw_build_memory_mb < 0:
            raise ConfigError("database.index_after_load_rows and database.hnsw_build_memory_mb must not be negative")


@dataclass
class ServerConfig:
    """``openkoi-memory serve`` (REST API) and ``openkoi-memory mcp`` (docs/server.md)."""

    host: str = "127.0.0.1"  # seed 003: the API is local, http://localhost:3415/api/
    port: int = 3415  # seed 003
    tokens_file: str = ""  # "" = $OPENKOI_TOKENS, else tokens.toml beside config.toml
    max_body_bytes: int = 2**20  # larger request bodies are refused with 413
    max_upload_bytes: int = 50 * 2**20  # larger document uploads are refused with 413
    documents_roots: tuple[str, ...] = ()  # folders POST /api/kb/ingest may read from; none: off
    allowed_hosts: tuple[str, ...] = ()  # Host names it answers to besides its address ("*": any); docs/server.md
    allowed_origins: tuple[str, ...] = ()  # web apps (https://app.example) that may write through a browser
    maintenance: bool = True  # run maintain(if_due=True) on memory.prune_schedule in the background
    maintenance_poll_seconds: float = 60.0  # how often the background thread asks whether a run is due

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535:
            raise ConfigError(f"server.port must be between 0 and 65535, got {self.port}")
        for name in ("max_body_bytes", "max_upload_bytes"):
            if getattr(self, name) < 1024:
                raise ConfigError(f"server.{name} must be at least 1024 bytes, got {getattr(self, name)}")
        if self.maintenance_poll_seconds <= 0:
            raise ConfigError("server.maintenance_poll_seconds must be positive")
        for host in self.allowed_hosts:
            if not isinstance(host, str) or not host.strip() or "/" in host:
                raise ConfigError(f"server.allowed_hosts holds host names such as 'mybox.local' or '*', got {host!r}")
        for origin in self.allowed_origins:
            if (not isinstance(origin, str) or not origin.startswith(("http://", "https://"))
                    or "/" in origin.split("://", 1)[1].rstrip("/")):
                raise ConfigError(f"server.allowed_origins holds origins such as 'https://app.example' "
                                  f"(scheme, host, optional port; no path), got {origin!r}")

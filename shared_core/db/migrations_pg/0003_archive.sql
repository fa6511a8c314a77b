-- PostgreSQL twin of migration 3: the archive, keyword-searchable through its own
-- generated tsvector (same weights as memory_chunks); vectors are not kept.
CREATE TABLE memory_archive (
    archive_rowid INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    source TEXT NOT NULL,
    text TEXT NOT NULL,
    created_at TEXT NOT NULL,
    kind TEXT NOT NULL,
    namespace TEXT NOT NULL,
    owner_id TEXT,
    tags TEXT NOT NULL DEFAULT '[]',
    category TEXT,
    metadata TEXT NOT NULL DEFAULT '{}',
    importance REAL,
    confidence REAL,
    pinned INTEGER NOT NULL DEFAULT 0,
    score REAL NOT NULL DEFAULT 0,
    last_hit_at TEXT,
    access_count INTEGER NOT NULL DEFAULT 0,
    last_access_at TEXT,
    updated_at TEXT,
    expires_at TEXT,
    valid_from TEXT,
    valid_to TEXT,
    superseded_by TEXT,
    session_id TEXT,
    task_id TEXT,
    content_hash TEXT,
    embedding_model TEXT,
    embedded_at TEXT,
    archived_at TEXT NOT NULL,
    archive_reason TEXT NOT NULL,
    search_text tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('openkoi', openkoi_fold(text)), 'B')
        || setweight(to_tsvector('openkoi', openkoi_fold(tags)), 'A')
        || setweight(to_tsvector('openkoi', openkoi_fold(source)), 'C')
    ) STORED,
    search_length INTEGER GENERATED ALWAYS AS (
        openkoi_tokens(text) + openkoi_tokens(tags) + openkoi_tokens(source)
    ) STORED
);
CREATE INDEX idx_archive_namespace_kind ON memory_archive(namespace, kind);
CREATE INDEX idx_archive_owner ON memory_archive(owner_id) WHERE owner_id IS NOT NULL;
CREATE INDEX idx_archive_search_text ON memory_archive USING gin (search_text);

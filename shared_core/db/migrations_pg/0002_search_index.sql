-- PostgreSQL twin of migration 2: memory_chunks as the one searchable index.
--
-- The row, its keyword index and its vector are one table row, so they always change
-- together: search_text (tsvector, GIN-indexed) is generated from text, tags and source
-- with the weights A (tags), B (text) and C (source) that ts_rank_cd scales by
-- search.tags_weight, text_weight and source_weight; embedding (pgvector) holds the vector.
-- The column takes any dimensions; the HNSW index (cosine) is created for the store's
-- embedder when the store opens (shared_core/index/vectors_pg.py), on
-- embedding::vector(<dims>). index_log exists for the schema's sake: nothing on PostgreSQL
-- reads it (no in-process mirror), so no trigger fills it.
CREATE TABLE memory_chunks (
    chunk_rowid INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    source TEXT NOT NULL,
    text TEXT NOT NULL,
    created_at TEXT NOT NULL,
    kind TEXT NOT NULL DEFAULT 'fact',
    namespace TEXT NOT NULL DEFAULT 'default',
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
    embedding vector,
    search_text tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('openkoi', openkoi_fold(text)), 'B')
        || setweight(to_tsvector('openkoi', openkoi_fold(tags)), 'A')
        || setweight(to_tsvector('openkoi', openkoi_fold(source)), 'C')
    ) STORED,
    search_length INTEGER GENERATED ALWAYS AS (
        openkoi_tokens(text) + openkoi_tokens(tags) + openkoi_tokens(source)
    ) STORED
);
CREATE INDEX idx_chunks_namespace_kind ON memory_chunks(namespace, kind);
CREATE INDEX idx_chunks_namespace_hash ON memory_chunks(namespace, content_hash);
CREATE INDEX idx_chunks_namespace_category ON memory_chunks(namespace, category);
CREATE INDEX idx_chunks_namespace_created ON memory_chunks(namespace, created_at);
CREATE INDEX idx_chunks_owner ON memory_chunks(owner_id) WHERE owner_id IS NOT NULL;
CREATE INDEX idx_chunks_expires ON memory_chunks(expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX idx_chunks_search_text ON memory_chunks USING gin (search_text);

CREATE TABLE index_log (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    chunk_rowid INTEGER NOT NULL
);

CREATE TABLE store_meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- The vectors as SQLite's memory_vec has them (chunk_rowid, embedding), for reading.
CREATE VIEW memory_vec AS SELECT chunk_rowid, embedding FROM memory_chunks WHERE embedding IS NOT NULL;

-- Migration 2: memory_chunks becomes the one searchable index (DESIGN.md, idea 2).
--
-- * An explicit INTEGER PRIMARY KEY (chunk_rowid): VACUUM may renumber the implicit
--   rowids of a table without one, which would silently detach FTS entries and vectors.
--   AUTOINCREMENT so a deleted chunk's number is never handed out again.
-- * id stays the public TEXT id (unique across namespaces; callers may choose it).
-- * The columns search filters and ranks on: kind, namespace, tags, category, metadata,
--   feedback (score, last_hit_at; seed 002), access tracking (access_count,
--   last_access_at; seed 003), TTL, validity (fact versioning), embedding bookkeeping.
-- * memory_fts indexes text, tags and source (seed 002's FTS table), with stemming.
-- * memory_vec is keyed by chunk_rowid and uses cosine distance.
-- * index_log records every change that matters to an in-process vector mirror,
--   so other connections can catch up incrementally.

-- @sqlite
CREATE TABLE memory_chunks_v2 (
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
    embedded_at TEXT
);
INSERT INTO memory_chunks_v2 (id, source, text, created_at, valid_from)
    SELECT id, source, text, created_at, created_at FROM memory_chunks ORDER BY rowid;

-- vec0 tables cannot be renamed (their shadow tables keep the old name), so the old
-- vectors wait in a temporary table while memory_vec is recreated under its own name.
CREATE TEMP TABLE memory_vec_old AS SELECT id, embedding FROM memory_vec;
DROP TABLE memory_fts;
DROP TABLE memory_vec;
DROP TABLE memory_chunks;
ALTER TABLE memory_chunks_v2 RENAME TO memory_chunks;
CREATE VIRTUAL TABLE memory_vec USING vec0(
    chunk_rowid INTEGER PRIMARY KEY,
    embedding float[@DIMS@] distance_metric=cosine
);
INSERT INTO memory_vec (chunk_rowid, embedding)
    SELECT c.chunk_rowid, v.embedding FROM memory_vec_old v JOIN memory_chunks c ON c.id = v.id;
DROP TABLE memory_vec_old;

-- @postgresql
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
-- @both
CREATE INDEX idx_chunks_namespace_kind ON memory_chunks(namespace, kind);
CREATE INDEX idx_chunks_namespace_hash ON memory_chunks(namespace, content_hash);
CREATE INDEX idx_chunks_namespace_category ON memory_chunks(namespace, category);
CREATE INDEX idx_chunks_namespace_created ON memory_chunks(namespace, created_at);
CREATE INDEX idx_chunks_owner ON memory_chunks(owner_id) WHERE owner_id IS NOT NULL;
CREATE INDEX idx_chunks_expires ON memory_chunks(expires_at) WHERE expires_at IS NOT NULL;

-- @sqlite
CREATE VIRTUAL TABLE memory_fts USING fts5(
    text, tags, source,
    content='memory_chunks', content_rowid='chunk_rowid',
    tokenize='porter unicode61 remove_diacritics 2'
);
INSERT INTO memory_fts(memory_fts) VALUES ('rebuild');
CREATE VIRTUAL TABLE memory_fts_vocab USING fts5vocab(memory_fts, 'row');

CREATE TRIGGER memory_chunks_fts_insert AFTER INSERT ON memory_chunks BEGIN
    INSERT INTO memory_fts (rowid, text, tags, source) VALUES (new.chunk_rowid, new.text, new.tags, new.source);
END;
CREATE TRIGGER memory_chunks_fts_delete AFTER DELETE ON memory_chunks BEGIN
    INSERT INTO memory_fts (memory_fts, rowid, text, tags, source)
        VALUES ('delete', old.chunk_rowid, old.text, old.tags, old.source);
END;
CREATE TRIGGER memory_chunks_fts_update AFTER UPDATE OF text, tags, source ON memory_chunks BEGIN
    INSERT INTO memory_fts (memory_fts, rowid, text, tags, source)
        VALUES ('delete', old.chunk_rowid, old.text, old.tags, old.source);
    INSERT INTO memory_fts (rowid, text, tags, source) VALUES (new.chunk_rowid, new.text, new.tags, new.source);
END;

-- @postgresql
CREATE INDEX idx_chunks_search_text ON memory_chunks USING gin (search_text);

-- @both
CREATE TABLE index_log (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    chunk_rowid INTEGER NOT NULL
);
-- @sqlite
CREATE TRIGGER memory_chunks_log_insert AFTER INSERT ON memory_chunks BEGIN
    INSERT INTO index_log (chunk_rowid) VALUES (new.chunk_rowid);
END;
CREATE TRIGGER memory_chunks_log_delete AFTER DELETE ON memory_chunks BEGIN
    INSERT INTO index_log (chunk_rowid) VALUES (old.chunk_rowid);
END;
CREATE TRIGGER memory_chunks_log_update
    AFTER UPDATE OF namespace, kind, expires_at, valid_to, embedded_at ON memory_chunks BEGIN
    INSERT INTO index_log (chunk_rowid) VALUES (new.chunk_rowid);
END;

-- @both
-- What the database was built with (embedder name and dims, ...).
CREATE TABLE store_meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
-- @postgresql
-- The vectors as SQLite's memory_vec has them (chunk_rowid, embedding), for reading.
CREATE VIEW memory_vec AS SELECT chunk_rowid, embedding FROM memory_chunks WHERE embedding IS NOT NULL;

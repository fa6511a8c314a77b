-- Migration 3: the archive (seed 002). Pruned or compressed memories move here: out of
-- the live index (so they neither slow nor clutter everyday search) but still
-- keyword-searchable, and restorable. Vectors are not kept; restore re-embeds.
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
    archive_reason TEXT NOT NULL
);
CREATE INDEX idx_archive_namespace_kind ON memory_archive(namespace, kind);
CREATE INDEX idx_archive_owner ON memory_archive(owner_id) WHERE owner_id IS NOT NULL;

-- @sqlite
CREATE VIRTUAL TABLE memory_archive_fts USING fts5(
    text, tags, source,
    content='memory_archive', content_rowid='archive_rowid',
    tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER memory_archive_fts_insert AFTER INSERT ON memory_archive BEGIN
    INSERT INTO memory_archive_fts (rowid, text, tags, source) VALUES (new.archive_rowid, new.text, new.tags, new.source);
END;
CREATE TRIGGER memory_archive_fts_delete AFTER DELETE ON memory_archive BEGIN
    INSERT INTO memory_archive_fts (memory_archive_fts, rowid, text, tags, source)
        VALUES ('delete', old.archive_rowid, old.text, old.tags, old.source);
END;
CREATE TRIGGER memory_archive_fts_update AFTER UPDATE OF text, tags, source ON memory_archive BEGIN
    INSERT INTO memory_archive_fts (memory_archive_fts, rowid, text, tags, source)
        VALUES ('delete', old.archive_rowid, old.text, old.tags, old.source);
    INSERT INTO memory_archive_fts (rowid, text, tags, source) VALUES (new.archive_rowid, new.text, new.tags, new.source);
END;
-- @postgresql
-- The archive's keyword index: a generated tsvector with memory_chunks' weights (migration 2).
ALTER TABLE memory_archive ADD COLUMN search_text tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('openkoi', openkoi_fold(text)), 'B')
        || setweight(to_tsvector('openkoi', openkoi_fold(tags)), 'A')
        || setweight(to_tsvector('openkoi', openkoi_fold(source)), 'C')
    ) STORED;
ALTER TABLE memory_archive ADD COLUMN search_length INTEGER GENERATED ALWAYS AS (
        openkoi_tokens(text) + openkoi_tokens(tags) + openkoi_tokens(source)
    ) STORED;
CREATE INDEX idx_archive_search_text ON memory_archive USING gin (search_text);

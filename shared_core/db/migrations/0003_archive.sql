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

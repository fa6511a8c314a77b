-- Migration 24: seed 004's workspace folders (docs/context.md, "Workspace files").
-- workspaces: which folder belongs to which namespace (erase_namespace deletes its files).
-- workspace_files: each indexed file's content hash, so a file edited by hand is re-indexed
-- (its old chunks replaced, never duplicated) and a deleted file leaves the index.
CREATE TABLE workspaces (
    namespace TEXT PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,                   -- absolute folder path
    created_at TEXT NOT NULL
);

CREATE TABLE workspace_files (
    namespace TEXT NOT NULL,
    path TEXT NOT NULL,                          -- relative to the folder, '/'-separated
    content_hash TEXT NOT NULL,                  -- versioned FNV-64a of the text
    size INTEGER NOT NULL,
    mtime_ns INTEGER,                            -- size and mtime unchanged: the file is not re-read
    chunks INTEGER NOT NULL,
    indexed_at TEXT NOT NULL,
    PRIMARY KEY (namespace, path)
) WITHOUT ROWID;

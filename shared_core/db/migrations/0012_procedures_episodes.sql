-- Migration 12: procedural and episodic memory (seed 001).
-- Both index their text in memory_chunks (kinds 'procedure' and 'episode', same id).
CREATE TABLE procedural_memory (
    id TEXT PRIMARY KEY,
    namespace TEXT NOT NULL DEFAULT 'default',
    name TEXT NOT NULL,
    description TEXT,
    steps TEXT NOT NULL DEFAULT '[]',      -- JSON list of strings, in order
    triggers TEXT NOT NULL DEFAULT '[]',   -- JSON list of strings: when to apply it
    usage_count INTEGER NOT NULL DEFAULT 0,
    last_used TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    UNIQUE (namespace, name)
);
CREATE INDEX idx_procedures_usage ON procedural_memory(namespace, usage_count);

CREATE TABLE episodic_memory (
    id TEXT PRIMARY KEY,
    namespace TEXT NOT NULL DEFAULT 'default',
    summary TEXT NOT NULL,
    occurred_at TEXT NOT NULL,
    channel TEXT,
    importance REAL NOT NULL DEFAULT 0.5,
    session_id TEXT,
    metadata TEXT NOT NULL DEFAULT '{}',
    created_at TEXT NOT NULL
);
CREATE INDEX idx_episodes_time ON episodic_memory(namespace, occurred_at);
CREATE INDEX idx_episodes_channel ON episodic_memory(namespace, channel, occurred_at);

-- PostgreSQL twin of migration 17: insights and their access log; an insight lives as long
-- as its index entry (live or archived).
CREATE TABLE insights (
    id TEXT PRIMARY KEY,
    namespace TEXT NOT NULL,
    bot_id TEXT NOT NULL,
    dedupe_key TEXT NOT NULL,
    title TEXT NOT NULL,
    description TEXT NOT NULL,
    importance TEXT NOT NULL,
    urgency TEXT NOT NULL,
    details TEXT NOT NULL DEFAULT '[]',
    timeline TEXT NOT NULL DEFAULT '[]',
    task_label TEXT,
    platform TEXT,
    channel TEXT,
    favorite INTEGER NOT NULL DEFAULT 0,
    favorited_at TEXT,
    custom_weight REAL NOT NULL DEFAULT 1.0,
    view_boosted_at TEXT,
    last_access_at TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    UNIQUE (namespace, bot_id, dedupe_key)
);
CREATE INDEX idx_insights_namespace_label ON insights(namespace, task_label);

CREATE TABLE insight_access (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    insight_id TEXT NOT NULL REFERENCES insights(id) ON DELETE CASCADE,
    namespace TEXT NOT NULL,
    kind TEXT NOT NULL,
    at TEXT NOT NULL
);
CREATE INDEX idx_insight_access_insight_at ON insight_access(insight_id, at);
CREATE INDEX idx_insight_access_namespace_at ON insight_access(namespace, at);

CREATE FUNCTION insights_drop_on_delete() RETURNS trigger LANGUAGE plpgsql AS
$$ BEGIN
    IF TG_TABLE_NAME = 'memory_chunks' AND EXISTS (SELECT 1 FROM memory_archive WHERE id = OLD.id) THEN
        RETURN NULL;
    END IF;
    IF TG_TABLE_NAME = 'memory_archive' AND EXISTS (SELECT 1 FROM memory_chunks WHERE id = OLD.id) THEN
        RETURN NULL;
    END IF;
    DELETE FROM insights WHERE id = OLD.owner_id;
    RETURN NULL;
END $$;
CREATE TRIGGER insights_drop_on_chunk_delete AFTER DELETE ON memory_chunks
    FOR EACH ROW WHEN (OLD.kind = 'insight' AND OLD.owner_id IS NOT NULL)
    EXECUTE FUNCTION insights_drop_on_delete();
CREATE TRIGGER insights_drop_on_archive_delete AFTER DELETE ON memory_archive
    FOR EACH ROW WHEN (OLD.kind = 'insight' AND OLD.owner_id IS NOT NULL)
    EXECUTE FUNCTION insights_drop_on_delete();

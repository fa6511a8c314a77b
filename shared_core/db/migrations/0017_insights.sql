-- Migration 17: insights (seed 003). Structured records extracted from messages, with
-- per-user weights. The id is deterministic (UUID5 of namespace, bot id and dedupe key),
-- so the same insight extracted twice is one row. The text is indexed in memory_chunks
-- (kind 'insight', id = owner_id = the insight id) in the same transaction.
--
-- insight_access logs every access (view, favourite, search hit) so that the 7-day and
-- 30-day counts and the trend are computed from real events.
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

-- An insight lives as long as its index entry: deleting the memory for good (store.delete,
-- erase_namespace) deletes the insight and, by cascade, its access log. Archiving does not.
-- @sqlite
CREATE TRIGGER insights_drop_on_chunk_delete AFTER DELETE ON memory_chunks
WHEN old.kind = 'insight' AND old.owner_id IS NOT NULL
     AND NOT EXISTS (SELECT 1 FROM memory_archive WHERE id = old.id) BEGIN
    DELETE FROM insights WHERE id = old.owner_id;
END;
CREATE TRIGGER insights_drop_on_archive_delete AFTER DELETE ON memory_archive
WHEN old.kind = 'insight' AND old.owner_id IS NOT NULL
     AND NOT EXISTS (SELECT 1 FROM memory_chunks WHERE id = old.id) BEGIN
    DELETE FROM insights WHERE id = old.owner_id;
END;
-- @postgresql
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

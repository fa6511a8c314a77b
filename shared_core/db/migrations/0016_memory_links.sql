-- Migration 16: Hebbian links (seed 002, "Future: Relations (v2)"). Memories returned
-- together by a search are linked and the link strengthens on each co-recall.
--
-- * Ids are the public TEXT memory ids, not chunk rowids: a memory keeps its links while
--   archived, and gets them back when restored (restore gives it a new rowid).
-- * Each pair is stored once, memory_id < related_id; lookups go through both columns.
-- * Links stay within one namespace (the column), so erasing a namespace erases them.
-- * A memory deleted for good takes its links with it (triggers below); being archived
--   does not (the archive row exists when the live row is deleted), and deleting it
--   from the archive does unless it was restored (the live row exists then).
CREATE TABLE memory_links (
    memory_id TEXT NOT NULL,
    related_id TEXT NOT NULL,
    namespace TEXT NOT NULL,
    strength REAL NOT NULL DEFAULT 1.0,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (memory_id, related_id),
    CHECK (memory_id < related_id)
) WITHOUT ROWID;
CREATE INDEX idx_links_related ON memory_links(related_id);
CREATE INDEX idx_links_namespace ON memory_links(namespace);

-- @sqlite
CREATE TRIGGER memory_links_drop_on_delete AFTER DELETE ON memory_chunks
WHEN NOT EXISTS (SELECT 1 FROM memory_archive WHERE id = old.id) BEGIN
    DELETE FROM memory_links WHERE memory_id = old.id;
    DELETE FROM memory_links WHERE related_id = old.id;
END;
CREATE TRIGGER memory_links_drop_on_archive_delete AFTER DELETE ON memory_archive
WHEN NOT EXISTS (SELECT 1 FROM memory_chunks WHERE id = old.id) BEGIN
    DELETE FROM memory_links WHERE memory_id = old.id;
    DELETE FROM memory_links WHERE related_id = old.id;
END;
-- @postgresql
CREATE FUNCTION memory_links_drop_on_delete() RETURNS trigger LANGUAGE plpgsql AS
$$ BEGIN
    IF TG_TABLE_NAME = 'memory_chunks' AND EXISTS (SELECT 1 FROM memory_archive WHERE id = OLD.id) THEN
        RETURN NULL;
    END IF;
    IF TG_TABLE_NAME = 'memory_archive' AND EXISTS (SELECT 1 FROM memory_chunks WHERE id = OLD.id) THEN
        RETURN NULL;
    END IF;
    DELETE FROM memory_links WHERE memory_id = OLD.id;
    DELETE FROM memory_links WHERE related_id = OLD.id;
    RETURN NULL;
END $$;
CREATE TRIGGER memory_links_drop_on_delete AFTER DELETE ON memory_chunks
    FOR EACH ROW EXECUTE FUNCTION memory_links_drop_on_delete();
CREATE TRIGGER memory_links_drop_on_archive_delete AFTER DELETE ON memory_archive
    FOR EACH ROW EXECUTE FUNCTION memory_links_drop_on_delete();

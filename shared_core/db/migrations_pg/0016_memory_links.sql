-- PostgreSQL twin of migration 16: Hebbian links, and the triggers that drop a memory's
-- links when it is deleted for good (not when it moves to or from the archive).
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

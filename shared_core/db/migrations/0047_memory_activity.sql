-- Migration 47: a memory's access and feedback over time, one row per memory and day (UTC, the
-- store's clock): how many times searches and reads that track access returned it, how often it
-- was reinforced or demoted and the net change of its score. Bounded: one row per memory per day
-- it was touched, and days older than the retention window (90) are deleted as new days come.
CREATE TABLE memory_activity (
    memory_id TEXT NOT NULL,
    namespace TEXT NOT NULL,
    day TEXT NOT NULL,
    accesses INTEGER NOT NULL DEFAULT 0,
    reinforcements INTEGER NOT NULL DEFAULT 0,
    demotions INTEGER NOT NULL DEFAULT 0,
    score_delta REAL NOT NULL DEFAULT 0,
    PRIMARY KEY (memory_id, day)
);
CREATE INDEX idx_activity_day ON memory_activity(day);

-- A memory's activity goes with the memory: when its id is in neither the live table nor the
-- archive any more (deleted, pruned, erased, its archived copy purged). Archiving and restoring
-- insert the other copy first, so the activity stays with the memory across them.
-- @sqlite
CREATE TRIGGER memory_chunks_activity_delete AFTER DELETE ON memory_chunks
WHEN NOT EXISTS (SELECT 1 FROM memory_archive WHERE id = old.id) BEGIN
    DELETE FROM memory_activity WHERE memory_id = old.id;
END;
CREATE TRIGGER memory_archive_activity_delete AFTER DELETE ON memory_archive
WHEN NOT EXISTS (SELECT 1 FROM memory_chunks WHERE id = old.id) BEGIN
    DELETE FROM memory_activity WHERE memory_id = old.id;
END;
-- @postgresql
CREATE FUNCTION openkoi_activity_forget() RETURNS trigger
    LANGUAGE plpgsql AS
$$ BEGIN
    IF NOT EXISTS (SELECT 1 FROM memory_chunks WHERE id = OLD.id)
       AND NOT EXISTS (SELECT 1 FROM memory_archive WHERE id = OLD.id) THEN
        DELETE FROM memory_activity WHERE memory_id = OLD.id;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER memory_chunks_activity_delete AFTER DELETE ON memory_chunks
    FOR EACH ROW EXECUTE FUNCTION openkoi_activity_forget();
CREATE TRIGGER memory_archive_activity_delete AFTER DELETE ON memory_archive
    FOR EACH ROW EXECUTE FUNCTION openkoi_activity_forget();

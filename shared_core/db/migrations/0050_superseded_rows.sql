-- Migration 50: the superseded rows of each namespace and kind, for counting a scope.
--
-- A scope's live rows are counted as its namespace's rows (an index answers) less the superseded
-- and the expired ones: counting the live rows directly reads every row's valid_to and
-- expires_at (a million rows: 0.5-1.5 s, in store.count() and in the keyword gate of a
-- process's first question). The expired ones have their index (idx_chunks_expires); this is
-- the superseded ones', small while few facts have been replaced.
CREATE INDEX idx_chunks_superseded ON memory_chunks(namespace, kind) WHERE valid_to IS NOT NULL;

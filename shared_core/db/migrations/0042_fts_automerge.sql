-- Migration 42: FTS5 merges index segments sixteen at a time instead of four.
--
-- Every transaction that adds a memory writes a small FTS5 segment, and FTS5 merges
-- segments once enough of them sit at one level: 4 by default. A memory's postings are
-- then rewritten once per level, and the levels of a file built in bulk hold large
-- segments, so at 100k memories merging took 0.3 ms of every single add on average
-- (per-commit mean 310-410 us against a median of 60-75 us). At 16 a posting is rewritten
-- half as often: 165-180 us. A search reads a few more small segments (hybrid p50 at 100k
-- after 3,000 single adds did not change measurably).
INSERT INTO memory_fts(memory_fts, rank) VALUES ('automerge', 16);

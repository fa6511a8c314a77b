-- Migration 43: vec0 keeps vectors in chunks of 256 instead of 1,024.
--
-- vec0 stores a chunk's vectors in one BLOB (1.5 MB for 1,024 vectors of 384 floats), and
-- writing a vector into it walks the BLOB's overflow pages from the start. With chunks of
-- 256, on copies of one 100k file: single adds 5.6 % faster (1,038-1,095/s against
-- 985-1,024, four interleaved pairs), sqlite-vec's exact KNN 94 ms instead of 105, and
-- loading the vector mirror 1.2 s instead of 1.6-2.7. The vectors are copied once (about
-- 3 s per 100k); vec0 tables cannot be renamed, so they wait in a temporary table.
-- PostgreSQL: nothing to do; pgvector keeps each vector in its row.
-- @sqlite
CREATE TEMP TABLE memory_vec_old AS SELECT chunk_rowid, embedding FROM memory_vec;
DROP TABLE memory_vec;
CREATE VIRTUAL TABLE memory_vec USING vec0(
    chunk_rowid INTEGER PRIMARY KEY,
    embedding float[@DIMS@] distance_metric=cosine,
    chunk_size=256
);
INSERT INTO memory_vec (chunk_rowid, embedding) SELECT chunk_rowid, embedding FROM memory_vec_old ORDER BY chunk_rowid;
DROP TABLE memory_vec_old;

-- Migration 47: a memory's neighbours in its session, for search's conversation context.
--
-- Search lends a memory part of the relevance of the memory said just before or after it in
-- the same session (search.context_weight): a reply is understood with the question it
-- answers. Finding those neighbours is one seek in this index per candidate; rows without a
-- session are left out of it, so stores that never set session_id pay nothing.
CREATE INDEX idx_chunks_session_order ON memory_chunks(namespace, session_id, created_at, chunk_rowid)
    WHERE session_id IS NOT NULL;

-- Migration 21: working memory summaries (seed 001). A row summarises a session's
-- messages up to last_seq; the newest row (highest last_seq) is the one the model sees,
-- followed by every message after it. Rows are replaced, never edited: the id is
-- deterministic from (session, last_seq), so two processes summarising at once agree.
CREATE TABLE working_memory_summaries (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    namespace TEXT NOT NULL,
    summary TEXT NOT NULL,
    first_seq INTEGER NOT NULL,
    last_seq INTEGER NOT NULL,
    message_count INTEGER NOT NULL,
    token_count INTEGER NOT NULL,
    method TEXT NOT NULL,                        -- 'model' or 'extractive'
    created_at TEXT NOT NULL
);
CREATE INDEX idx_working_summaries_session ON working_memory_summaries(session_id, last_seq);
CREATE INDEX idx_working_summaries_namespace ON working_memory_summaries(namespace);

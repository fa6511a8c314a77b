-- Migration 23: the context manager's bookkeeping (issue 4 parts 4-5, docs/context.md).
-- context_extracted: which messages of a conversation were already read for facts, so that a
-- proactive flush and a later compaction never extract (and so reinforce) one message twice.
-- context_events: one row per flush and per compaction, for inspection, the working summary, and
-- so that a fill cycle of the window flushes once (seed 004's proactive flush at 60 %).
CREATE TABLE context_extracted (
    session_key TEXT NOT NULL,                   -- the conversation id, or 'ns:<namespace>' for a list without one
    fingerprint TEXT NOT NULL,                   -- FNV-64a of the message's id, role and text
    namespace TEXT NOT NULL,
    extracted_at TEXT NOT NULL,
    PRIMARY KEY (session_key, fingerprint)
) WITHOUT ROWID;
CREATE INDEX idx_context_extracted_namespace ON context_extracted(namespace);

CREATE TABLE context_events (
    id TEXT PRIMARY KEY,
    action TEXT NOT NULL,                        -- flush | compact
    session_key TEXT NOT NULL,
    namespace TEXT NOT NULL,
    policy TEXT NOT NULL,                        -- openkoi | openmotoko | fleet | custom
    created_at TEXT NOT NULL,
    messages_before INTEGER NOT NULL,
    messages_after INTEGER NOT NULL,
    compacted INTEGER NOT NULL,                  -- messages folded into the summary (0 for a flush)
    tokens_before INTEGER NOT NULL,
    tokens_after INTEGER NOT NULL,
    fact_ids TEXT NOT NULL DEFAULT '[]',         -- JSON list of the facts stored first
    summary_id TEXT,                             -- the kind 'summary' memory stored before compacting
    summary TEXT NOT NULL DEFAULT '',
    method TEXT NOT NULL                         -- rules | model | model+rules
);
CREATE INDEX idx_context_events_session ON context_events(session_key, action, created_at);
CREATE INDEX idx_context_events_namespace ON context_events(namespace);

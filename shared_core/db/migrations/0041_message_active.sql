-- Migration 41: whether a message is in its session's active window (issue 7).
--
-- A chat memory keeps a short-term window of a conversation in front of the model and
-- moves the oldest messages out of it as the conversation grows (LlamaIndex's Memory
-- calls them "archived"). Those messages stay in the history, the transcript and the
-- search index; only this flag changes. It is not the forgetting engine's archived_at
-- (compression into a summary, out of the live index): the two are independent.
ALTER TABLE raw_messages ADD COLUMN active INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1));
CREATE INDEX idx_raw_messages_session_active ON raw_messages(session_id, active, seq);

-- Migration 22: run locks shared by every process that opens the file (seed 003's
-- forgetting lock: key memory_forgetting:<namespace>, 60 s TTL, token
-- <key>:<timestamp>:<random>). A lock is taken inside BEGIN IMMEDIATE, so two processes
-- cannot both take it; an expired lock (a crashed holder) may be taken over.
CREATE TABLE run_locks (
    key TEXT PRIMARY KEY,
    token TEXT NOT NULL,
    acquired_at TEXT NOT NULL,
    expires_at TEXT NOT NULL
);

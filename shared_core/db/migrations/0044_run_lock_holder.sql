-- Migration 44: a run lock records its holder (host:pid). A holder on this host whose process
-- has ended (a maintain killed half-way) frees the lock at once instead of after its TTL
-- (10 minutes for maintenance); holders on other hosts are still freed by the TTL alone.
ALTER TABLE run_locks ADD COLUMN holder TEXT;

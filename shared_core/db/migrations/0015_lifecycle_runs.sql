-- Migration 15: when each lifecycle job last ran (seed 002's cron-scheduled pruning and
-- the other maintenance jobs). A job is due when a scheduled time has passed since
-- last_run_at; the row is written in the same transaction as the job's work, so two
-- processes that race for a due job serialise on the write lock and the second sees
-- it already done.
CREATE TABLE lifecycle_runs (
    job TEXT PRIMARY KEY,
    last_run_at TEXT NOT NULL,
    last_status TEXT NOT NULL,
    last_report TEXT NOT NULL DEFAULT '{}'
);

-- Migration 10: task memory (seed 000, layer 2).
--
-- Tasks, their iteration cycles and findings are written to the seed's tables in one
-- transaction when a task is flushed. Until then they live in process, and every step is
-- also appended to task_journal (a write-ahead journal), so a task whose process dies is
-- recovered, not lost. tasks gains the namespace it belongs to, its status (completed,
-- abandoned, failed, interrupted), the skills it used and free metadata.
ALTER TABLE tasks ADD COLUMN namespace TEXT NOT NULL DEFAULT 'default';
ALTER TABLE tasks ADD COLUMN status TEXT NOT NULL DEFAULT 'completed';
ALTER TABLE tasks ADD COLUMN skills_used TEXT NOT NULL DEFAULT '[]';
ALTER TABLE tasks ADD COLUMN metadata TEXT NOT NULL DEFAULT '{}';
CREATE INDEX idx_tasks_namespace_created ON tasks(namespace, created_at);
CREATE INDEX idx_tasks_namespace_category ON tasks(namespace, category);
CREATE INDEX idx_findings_cycle ON findings(cycle_id);

CREATE TABLE task_journal (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id TEXT NOT NULL,
    namespace TEXT NOT NULL,
    owner TEXT NOT NULL,      -- host:pid:token of the process recording the task
    entry TEXT NOT NULL,      -- one JSON step: start, cycle, finding, resolve, skill
    created_at TEXT NOT NULL
);
CREATE INDEX idx_task_journal_task ON task_journal(task_id, seq);
CREATE INDEX idx_task_journal_namespace ON task_journal(namespace);

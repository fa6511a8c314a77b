-- The goals domain (the example of tests/core/goals): a goal per row, indexed as a memory of kind "goal".
CREATE TABLE goals (
    id TEXT PRIMARY KEY,
    namespace TEXT NOT NULL,
    title TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'open',
    created_at TEXT NOT NULL,
    done_at TEXT
);

CREATE INDEX goals_namespace ON goals (namespace, status);

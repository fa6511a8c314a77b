-- Migration 1: the OpenKoi schema (seed 000) exactly as written, except that
-- memory_vec is sized to the embedder's dimensions instead of a fixed 1536.
CREATE TABLE sessions (
id TEXT PRIMARY KEY,
channel TEXT,
model_provider TEXT,
model_id TEXT,
created_at TEXT NOT NULL,
updated_at TEXT NOT NULL,
total_tokens INTEGER DEFAULT 0,
total_cost_usd REAL DEFAULT 0.0,
transcript_path TEXT
);
CREATE TABLE tasks (
id TEXT PRIMARY KEY,
description TEXT NOT NULL,
category TEXT,
session_id TEXT REFERENCES sessions(id),
final_score REAL,
iterations INTEGER,
decision TEXT,
total_tokens INTEGER,
total_cost_usd REAL,
created_at TEXT NOT NULL,
completed_at TEXT
);
CREATE TABLE iteration_cycles (
id TEXT PRIMARY KEY,
task_id TEXT NOT NULL REFERENCES tasks(id),
iteration INTEGER NOT NULL,
score REAL,
decision TEXT NOT NULL,
input_tokens INTEGER,
output_tokens INTEGER,
duration_ms INTEGER,
created_at TEXT NOT NULL,
UNIQUE(task_id, iteration)
);
CREATE TABLE findings (
id TEXT PRIMARY KEY,
cycle_id TEXT REFERENCES iteration_cycles(id),
severity TEXT NOT NULL,
dimension TEXT NOT NULL,
title TEXT NOT NULL,
description TEXT,
location TEXT,
fix TEXT,
resolved_in TEXT REFERENCES iteration_cycles(id)
);
CREATE TABLE learnings (
id TEXT PRIMARY KEY,
type TEXT NOT NULL,
content TEXT NOT NULL,
category TEXT,
confidence REAL NOT NULL,
source_task TEXT REFERENCES tasks(id),
reinforced INTEGER DEFAULT 0,
created_at TEXT NOT NULL,
last_used TEXT,
expires_at TEXT
);
CREATE TABLE skill_effectiveness (
skill_name TEXT NOT NULL,
task_category TEXT NOT NULL,
avg_score REAL NOT NULL,
sample_count INTEGER NOT NULL,
last_used TEXT NOT NULL,
PRIMARY KEY (skill_name, task_category)
);
CREATE TABLE memory_chunks (
id TEXT PRIMARY KEY,
source TEXT NOT NULL,
text TEXT NOT NULL,
created_at TEXT NOT NULL
);
CREATE VIRTUAL TABLE memory_vec USING vec0(
id TEXT PRIMARY KEY,
embedding float[@DIMS@]
);
CREATE VIRTUAL TABLE memory_fts USING fts5(
text, content='memory_chunks', content_rowid='rowid'
);
CREATE TABLE usage_events (
id TEXT PRIMARY KEY,
event_type TEXT NOT NULL,
channel TEXT,
description TEXT,
category TEXT,
skills_used TEXT,
score REAL,
timestamp TEXT NOT NULL,
day TEXT NOT NULL,
hour INTEGER,
day_of_week INTEGER
);
CREATE TABLE usage_patterns (
id TEXT PRIMARY KEY,
pattern_type TEXT NOT NULL,
description TEXT NOT NULL,
frequency TEXT,
trigger_json TEXT,
confidence REAL NOT NULL,
sample_count INTEGER NOT NULL,
first_seen TEXT NOT NULL,
last_seen TEXT NOT NULL,
proposed_skill TEXT,
status TEXT DEFAULT 'detected'
);
CREATE INDEX idx_events_day ON usage_events(day);
CREATE INDEX idx_learnings_type ON learnings(type);
CREATE INDEX idx_tasks_category ON tasks(category);

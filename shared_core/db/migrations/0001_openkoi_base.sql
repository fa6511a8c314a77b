-- Migration 1: the OpenKoi schema (seed 000) exactly as written, except that
-- memory_vec is sized to the embedder's dimensions instead of a fixed 1536.
-- @postgresql
-- What the PostgreSQL backend needs everywhere: pgvector, the text search configuration, and
-- the SQLite functions the shared SQL uses. memory_chunks, its vectors and its keyword index
-- come in their final form in migration 2 there.
CREATE EXTENSION IF NOT EXISTS vector;

-- Keyword search: English (Snowball, Porter's successor) stemming and no stop words, as
-- FTS5's 'porter unicode61' tokenizer; openkoi_fold() removes diacritics ('remove_diacritics
-- 2') and turns ASCII punctuation into spaces, so words split where unicode61 splits them.
CREATE TEXT SEARCH DICTIONARY openkoi_stem (TEMPLATE = pg_catalog.snowball, LANGUAGE = english);
CREATE TEXT SEARCH CONFIGURATION openkoi (COPY = pg_catalog.simple);
ALTER TEXT SEARCH CONFIGURATION openkoi
    ALTER MAPPING FOR asciiword, word, numword, asciihword, hword, numhword, hword_asciipart, hword_part, hword_numpart
    WITH openkoi_stem;
CREATE FUNCTION openkoi_fold(value text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$ SELECT regexp_replace(regexp_replace(normalize(coalesce(value, ''), NFD), '[\u0300-\u036f]+', '', 'g'),
                         '[!-/:-@\[-`{-~]+', ' ', 'g') $$;

-- How many tokens FTS5's unicode61 would count in a text (BM25's document length).
CREATE FUNCTION openkoi_tokens(value text) RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$ SELECT coalesce(array_length(regexp_split_to_array(btrim(openkoi_fold(value)), '\s+'), 1), 0)
          - CASE WHEN btrim(openkoi_fold(value)) = '' THEN 1 ELSE 0 END $$;

-- SQLite functions the shared SQL calls.
CREATE FUNCTION instr(haystack text, needle text) RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT strpos(haystack, needle) $$;
CREATE FUNCTION casefold(value text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT lower(normalize(value, NFKC) COLLATE "default") $$;
CREATE FUNCTION strftime(format text, value text) RETURNS text
    LANGUAGE plpgsql STABLE AS
$$ BEGIN
    IF format = '%s' THEN
        RETURN floor(extract(epoch FROM value::timestamptz))::bigint::text;
    END IF;
    RAISE EXCEPTION 'strftime(%, ...) has no PostgreSQL version here; only strftime(''%%s'', ...) has', format;
END $$;
CREATE FUNCTION openkoi_json_path(path text) RETURNS text[]
    LANGUAGE plpgsql IMMUTABLE AS
$$ BEGIN
    IF path !~ '^\$(\.[A-Za-z0-9_]+)+$' THEN
        RAISE EXCEPTION 'json_set path % is not a plain $.key.key path', path;
    END IF;
    RETURN string_to_array(substr(path, 3), '.');
END $$;
CREATE FUNCTION json_set(doc text, path text, value text) RETURNS text
    LANGUAGE sql IMMUTABLE AS
$$ SELECT jsonb_set(coalesce(doc, '{}')::jsonb, openkoi_json_path(path), to_jsonb(value), true)::text $$;
CREATE FUNCTION json_set(doc text, path text, value bigint) RETURNS text
    LANGUAGE sql IMMUTABLE AS
$$ SELECT jsonb_set(coalesce(doc, '{}')::jsonb, openkoi_json_path(path), to_jsonb(value), true)::text $$;
CREATE FUNCTION json_set(doc text, path text, value double precision) RETURNS text
    LANGUAGE sql IMMUTABLE AS
$$ SELECT jsonb_set(coalesce(doc, '{}')::jsonb, openkoi_json_path(path), to_jsonb(value), true)::text $$;
-- sum(a > b): SQLite counts true comparisons as 1
CREATE FUNCTION openkoi_sum_bool(state bigint, value boolean) RETURNS bigint
    LANGUAGE sql IMMUTABLE AS
$$ SELECT CASE WHEN value IS NULL THEN state ELSE coalesce(state, 0) + value::integer END $$;
CREATE AGGREGATE sum(boolean) (SFUNC = openkoi_sum_bool, STYPE = bigint);
-- @both
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
-- @sqlite
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
-- @both
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

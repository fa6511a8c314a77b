-- Migration 20: conversation messages (seeds 000 and 003).
--
-- * sessions (seed 000's table) gains the namespace that owns it, free metadata, the
--   last sequence number handed out (seqs are never reused, so a transcript line is
--   never ambiguous), the transcript's expected size in bytes (the crash check: a
--   transcript whose size differs is repaired from the database on open), and ended_at.
-- * raw_messages: seed 003's raw_messages, one row per message, in snake_case. userId
--   is the namespace. The vector lives in memory_vec (through the message's index
--   chunk, kind 'message', owner_id = message_id); the embedding_* columns here mirror
--   that chunk's bookkeeping and are kept current by the triggers below.
-- * memory_summaries: seed 003's compressed summaries, written by the forgetting engine.

ALTER TABLE sessions ADD COLUMN namespace TEXT NOT NULL DEFAULT 'default';
ALTER TABLE sessions ADD COLUMN metadata TEXT NOT NULL DEFAULT '{}';
ALTER TABLE sessions ADD COLUMN last_seq INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN transcript_bytes INTEGER;
ALTER TABLE sessions ADD COLUMN ended_at TEXT;
CREATE INDEX idx_sessions_namespace_updated ON sessions(namespace, updated_at);

CREATE TABLE memory_summaries (
    summary_id TEXT PRIMARY KEY,                 -- "ms_<hash>", deterministic from the inputs
    namespace TEXT NOT NULL,                     -- seed: userId
    summary_tier TEXT NOT NULL CHECK (summary_tier IN ('L1', 'L2', 'L3')),
    source_tier TEXT NOT NULL CHECK (source_tier IN ('short', 'mid', 'long')),
    start_timestamp TEXT NOT NULL,               -- inclusive start of the grouped window
    end_timestamp TEXT NOT NULL,                 -- inclusive end
    message_count INTEGER NOT NULL,
    source_record_ids TEXT NOT NULL DEFAULT '[]',  -- JSON list of raw_messages.id
    key_points TEXT NOT NULL DEFAULT '[]',
    keywords TEXT NOT NULL DEFAULT '[]',
    keywords_text TEXT NOT NULL DEFAULT '',      -- keywords joined, for contains() search
    summary_text TEXT NOT NULL,
    dimensions TEXT NOT NULL DEFAULT '{}',       -- {platform, channel, person, botId}
    quality_score REAL NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX idx_memory_summaries_ns_tier ON memory_summaries(namespace, summary_tier);
CREATE INDEX idx_memory_summaries_ns_end ON memory_summaries(namespace, end_timestamp);

CREATE TABLE raw_messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    message_id TEXT NOT NULL,                    -- platform message id
    namespace TEXT NOT NULL,                     -- seed: userId, the owner
    session_id TEXT NOT NULL REFERENCES sessions(id),
    seq INTEGER NOT NULL,                        -- order within the session
    role TEXT NOT NULL,
    content TEXT NOT NULL,                       -- the text (for content blocks: their text parts)
    content_blocks TEXT,                         -- JSON list when the content was given as blocks
    name TEXT,
    tool_calls TEXT NOT NULL DEFAULT '[]',
    tool_call_id TEXT,
    additional_kwargs TEXT NOT NULL DEFAULT '{}',
    platform TEXT,
    channel TEXT,
    person TEXT,
    bot_id TEXT,
    timestamp TEXT NOT NULL,                     -- when the message was sent
    created_at TEXT NOT NULL,                    -- when it was stored locally
    attachments TEXT NOT NULL DEFAULT '[]',      -- [{name, url, content_type, size_bytes}]
    embedding_model TEXT,
    embedding_content_hash TEXT,
    embedding_dimensions INTEGER,
    embedding_updated_at TEXT,
    metadata TEXT NOT NULL DEFAULT '{}',
    memory_stage TEXT NOT NULL DEFAULT 'short' CHECK (memory_stage IN ('short', 'mid', 'long')),
    access_count INTEGER NOT NULL DEFAULT 0,
    last_access_at TEXT,
    importance_score REAL,
    archived_at TEXT,
    is_pinned INTEGER NOT NULL DEFAULT 0,
    summary_ref_id TEXT REFERENCES memory_summaries(summary_id) ON DELETE SET NULL,
    token_count INTEGER NOT NULL DEFAULT 0,
    UNIQUE (session_id, seq)
);
-- seed 003's indexes
CREATE UNIQUE INDEX idx_raw_messages_message_id ON raw_messages(message_id);
CREATE INDEX idx_raw_messages_ns_stage ON raw_messages(namespace, memory_stage);
CREATE INDEX idx_raw_messages_ns_timestamp ON raw_messages(namespace, timestamp);
CREATE INDEX idx_raw_messages_archived ON raw_messages(archived_at);
CREATE INDEX idx_raw_messages_pinned ON raw_messages(is_pinned);
-- ours: summary back-links
CREATE INDEX idx_raw_messages_summary ON raw_messages(summary_ref_id) WHERE summary_ref_id IS NOT NULL;

-- The message's index chunk is the one place its vector lives; mirror its bookkeeping.
-- (Triggers here; on PostgreSQL, PL/pgSQL functions that the triggers run.)
-- @sqlite
CREATE TRIGGER raw_messages_chunk_insert AFTER INSERT ON memory_chunks WHEN new.kind = 'message' BEGIN
    UPDATE raw_messages SET
        embedding_model = new.embedding_model,
        embedding_content_hash = new.content_hash,
        embedding_updated_at = new.embedded_at,
        embedding_dimensions = (SELECT CAST(value AS INTEGER) FROM store_meta WHERE key = 'embedder_dims'),
        archived_at = NULL
    WHERE message_id = new.owner_id;
END;
CREATE TRIGGER raw_messages_chunk_embedded
    AFTER UPDATE OF embedded_at, content_hash, embedding_model ON memory_chunks WHEN new.kind = 'message' BEGIN
    UPDATE raw_messages SET
        embedding_model = new.embedding_model,
        embedding_content_hash = new.content_hash,
        embedding_updated_at = new.embedded_at,
        embedding_dimensions = (SELECT CAST(value AS INTEGER) FROM store_meta WHERE key = 'embedder_dims')
    WHERE message_id = new.owner_id;
END;
-- a switch of embedder records the new dims after re-embedding every chunk
CREATE TRIGGER raw_messages_embedder_dims AFTER UPDATE OF value ON store_meta WHEN new.key = 'embedder_dims' BEGIN
    UPDATE raw_messages SET embedding_dimensions = CAST(new.value AS INTEGER) WHERE embedding_model IS NOT NULL;
END;
-- seed 003's access tracking: a message returned by any search counts as retrieved
CREATE TRIGGER raw_messages_chunk_access
    AFTER UPDATE OF access_count ON memory_chunks
    WHEN new.kind = 'message' AND new.access_count > old.access_count BEGIN
    UPDATE raw_messages SET
        access_count = access_count + (new.access_count - old.access_count),
        last_access_at = new.last_access_at
    WHERE message_id = new.owner_id;
END;
-- @postgresql
CREATE FUNCTION raw_messages_from_chunk() RETURNS trigger LANGUAGE plpgsql AS
$$ BEGIN
    UPDATE raw_messages SET
        embedding_model = NEW.embedding_model,
        embedding_content_hash = NEW.content_hash,
        embedding_updated_at = NEW.embedded_at,
        embedding_dimensions = (SELECT CAST(value AS BIGINT) FROM store_meta WHERE key = 'embedder_dims'),
        archived_at = CASE WHEN TG_OP = 'INSERT' THEN NULL ELSE archived_at END
    WHERE message_id = NEW.owner_id;
    RETURN NULL;
END $$;
CREATE TRIGGER raw_messages_chunk_insert AFTER INSERT ON memory_chunks
    FOR EACH ROW WHEN (NEW.kind = 'message') EXECUTE FUNCTION raw_messages_from_chunk();
CREATE TRIGGER raw_messages_chunk_embedded AFTER UPDATE OF embedded_at, content_hash, embedding_model ON memory_chunks
    FOR EACH ROW WHEN (NEW.kind = 'message') EXECUTE FUNCTION raw_messages_from_chunk();

-- a switch of embedder records the new dims after re-embedding every chunk
CREATE FUNCTION raw_messages_embedder_dims() RETURNS trigger LANGUAGE plpgsql AS
$$ BEGIN
    UPDATE raw_messages SET embedding_dimensions = CAST(NEW.value AS BIGINT) WHERE embedding_model IS NOT NULL;
    RETURN NULL;
END $$;
CREATE TRIGGER raw_messages_embedder_dims AFTER UPDATE OF value ON store_meta
    FOR EACH ROW WHEN (NEW.key = 'embedder_dims') EXECUTE FUNCTION raw_messages_embedder_dims();

-- seed 003's access tracking: a message returned by any search counts as retrieved
CREATE FUNCTION raw_messages_chunk_access() RETURNS trigger LANGUAGE plpgsql AS
$$ BEGIN
    UPDATE raw_messages SET
        access_count = access_count + (NEW.access_count - OLD.access_count),
        last_access_at = NEW.last_access_at
    WHERE message_id = NEW.owner_id;
    RETURN NULL;
END $$;
CREATE TRIGGER raw_messages_chunk_access AFTER UPDATE OF access_count ON memory_chunks
    FOR EACH ROW WHEN (NEW.kind = 'message' AND NEW.access_count > OLD.access_count)
    EXECUTE FUNCTION raw_messages_chunk_access();

-- Migration 40: a namespaced key-value table of JSON values, for state that frameworks keep
-- beside the memories and that belongs in the same file (LlamaIndex's document and index
-- stores, an ingestion pipeline's dedup hashes). Namespaces are the memories' namespaces,
-- so erase_namespace removes a user's entries too; collections group keys within one.
CREATE TABLE kv_entries (
    namespace TEXT NOT NULL,
    collection TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (namespace, collection, key)
) WITHOUT ROWID;

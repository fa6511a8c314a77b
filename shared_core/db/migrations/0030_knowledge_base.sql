-- Migration 30: the knowledge base (seed 003): user-provided documents and their chunks.
--
-- rag_documents has seed 003's fields in snake_case: id, userId (here: namespace, the owner
-- everywhere in this library), fileName, contentType (MIME type), sizeBytes, totalChunks,
-- blobPath (the absolute path the file was ingested from; the file itself is not copied),
-- uploadedAt, metadata (title, author, page count, ...). Added: updated_at; content_hash
-- (SHA-256 of the file: re-ingesting an unchanged file does nothing); chunker (how the text
-- was split: other settings re-chunk it); content (the extracted text, for
-- getFullDocumentContent).
--
-- rag_chunks has seed 003's id, documentId, userId (namespace), chunkIndex and metadata,
-- plus the chunk's character offsets in the document text. Its content and embedding live
-- in the one searchable index under the same id (memory_chunks.text with kind 'document'
-- and owner_id = document id, memory_fts, memory_vec), so the text is stored and searched once.
CREATE TABLE rag_documents (
    id TEXT PRIMARY KEY,
    namespace TEXT NOT NULL,
    file_name TEXT NOT NULL,
    content_type TEXT NOT NULL,
    size_bytes INTEGER NOT NULL,
    total_chunks INTEGER NOT NULL DEFAULT 0,
    blob_path TEXT NOT NULL,
    uploaded_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    metadata TEXT NOT NULL DEFAULT '{}',
    content_hash TEXT NOT NULL,
    chunker TEXT NOT NULL,
    content TEXT NOT NULL,
    UNIQUE (namespace, blob_path)
);
CREATE INDEX idx_rag_documents_namespace_uploaded ON rag_documents(namespace, uploaded_at);

CREATE TABLE rag_chunks (
    id TEXT PRIMARY KEY,
    document_id TEXT NOT NULL REFERENCES rag_documents(id) ON DELETE CASCADE,
    namespace TEXT NOT NULL,
    chunk_index INTEGER NOT NULL,
    start_offset INTEGER NOT NULL,
    end_offset INTEGER NOT NULL,
    metadata TEXT NOT NULL DEFAULT '{}',
    UNIQUE (document_id, chunk_index)
);
CREATE INDEX idx_rag_chunks_namespace ON rag_chunks(namespace);


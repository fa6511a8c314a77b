-- Migration 49: PostgreSQL's statistics of the search columns.
--
-- Migration 45 wrote search_text and search_length into every row, which ANALYZE had not
-- seen; autovacuum analyses a table again only once a tenth of its rows have changed. Keyword
-- search reads the most common words' shares from those statistics; without them it counted
-- each common word's rows (at a million rows 200-400 ms a word, once a minute in every
-- process). SQLite: nothing to do (FTS5 keeps its own counts).
-- @postgresql
ANALYZE memory_chunks;

-- Migration 45: keyword search in every language (shared_core/index/textform.py).
--
-- Both keyword indexes now store the search form of text, tags and source: compatibility
-- forms made plain (NFKC), lower case with ß as ss (and a few letters as users type them),
-- diacritics, Hebrew points and Arabic harakat removed, Arabic's definite article taken off,
-- punctuation as spaces, and each run of Chinese, Japanese or Korean characters as its
-- overlapping pairs of characters, then its single characters (those scripts put no spaces
-- between words). So "strasse" finds "Straße", "cafe" "café", "москва" "МОСКВА", "東京"
-- "東京タワー" and "كتاب" "الكتاب", on both backends alike.
--
-- SQLite: FTS5 reads the search form through the view memory_search_form (and
-- memory_archive_search_form), which calls openkoi_search_form, a function every connection of
-- the library registers; the triggers index and un-index the same form. unicode61 keeps
-- combining marks inside words (categories 'L* N* Co M*': a Hindi word was cut at its vowel
-- signs) and removes no diacritics itself (the search form has none left). Existing rows are
-- indexed again here ('rebuild'), so an existing memory searches the new way once opened.
--
-- PostgreSQL: openkoi_search_form is the same steps in SQL (the character classes are the
-- same strings as in textform.py); search_text and search_length are generated from it, so
-- adding them again rewrites every row. openkoi_fold and openkoi_tokens are no longer used.

-- @sqlite
DROP TRIGGER memory_chunks_fts_insert;
DROP TRIGGER memory_chunks_fts_delete;
DROP TRIGGER memory_chunks_fts_update;
DROP TABLE memory_fts_vocab;
DROP TABLE memory_fts;
CREATE VIEW memory_search_form AS
    SELECT chunk_rowid, openkoi_search_form(text) AS text, openkoi_search_form(tags) AS tags,
           openkoi_search_form(source) AS source
    FROM memory_chunks;
CREATE VIRTUAL TABLE memory_fts USING fts5(
    text, tags, source,
    content='memory_search_form', content_rowid='chunk_rowid',
    tokenize='porter unicode61 remove_diacritics 0 categories ''L* N* Co M*'''
);
INSERT INTO memory_fts(memory_fts, rank) VALUES ('automerge', 16);
INSERT INTO memory_fts(memory_fts) VALUES ('rebuild');
CREATE VIRTUAL TABLE memory_fts_vocab USING fts5vocab(memory_fts, 'row');
CREATE TRIGGER memory_chunks_fts_insert AFTER INSERT ON memory_chunks BEGIN
    INSERT INTO memory_fts (rowid, text, tags, source) VALUES (new.chunk_rowid,
        openkoi_search_form(new.text), openkoi_search_form(new.tags), openkoi_search_form(new.source));
END;
CREATE TRIGGER memory_chunks_fts_delete AFTER DELETE ON memory_chunks BEGIN
    INSERT INTO memory_fts (memory_fts, rowid, text, tags, source) VALUES ('delete', old.chunk_rowid,
        openkoi_search_form(old.text), openkoi_search_form(old.tags), openkoi_search_form(old.source));
END;
CREATE TRIGGER memory_chunks_fts_update AFTER UPDATE OF text, tags, source ON memory_chunks BEGIN
    INSERT INTO memory_fts (memory_fts, rowid, text, tags, source) VALUES ('delete', old.chunk_rowid,
        openkoi_search_form(old.text), openkoi_search_form(old.tags), openkoi_search_form(old.source));
    INSERT INTO memory_fts (rowid, text, tags, source) VALUES (new.chunk_rowid,
        openkoi_search_form(new.text), openkoi_search_form(new.tags), openkoi_search_form(new.source));
END;

DROP TRIGGER memory_archive_fts_insert;
DROP TRIGGER memory_archive_fts_delete;
DROP TRIGGER memory_archive_fts_update;
DROP TABLE memory_archive_fts;
CREATE VIEW memory_archive_search_form AS
    SELECT archive_rowid, openkoi_search_form(text) AS text, openkoi_search_form(tags) AS tags,
           openkoi_search_form(source) AS source
    FROM memory_archive;
CREATE VIRTUAL TABLE memory_archive_fts USING fts5(
    text, tags, source,
    content='memory_archive_search_form', content_rowid='archive_rowid',
    tokenize='porter unicode61 remove_diacritics 0 categories ''L* N* Co M*'''
);
INSERT INTO memory_archive_fts(memory_archive_fts) VALUES ('rebuild');
CREATE TRIGGER memory_archive_fts_insert AFTER INSERT ON memory_archive BEGIN
    INSERT INTO memory_archive_fts (rowid, text, tags, source) VALUES (new.archive_rowid,
        openkoi_search_form(new.text), openkoi_search_form(new.tags), openkoi_search_form(new.source));
END;
CREATE TRIGGER memory_archive_fts_delete AFTER DELETE ON memory_archive BEGIN
    INSERT INTO memory_archive_fts (memory_archive_fts, rowid, text, tags, source) VALUES ('delete',
        old.archive_rowid, openkoi_search_form(old.text), openkoi_search_form(old.tags),
        openkoi_search_form(old.source));
END;
CREATE TRIGGER memory_archive_fts_update AFTER UPDATE OF text, tags, source ON memory_archive BEGIN
    INSERT INTO memory_archive_fts (memory_archive_fts, rowid, text, tags, source) VALUES ('delete',
        old.archive_rowid, openkoi_search_form(old.text), openkoi_search_form(old.tags),
        openkoi_search_form(old.source));
    INSERT INTO memory_archive_fts (rowid, text, tags, source) VALUES (new.archive_rowid,
        openkoi_search_form(new.text), openkoi_search_form(new.tags), openkoi_search_form(new.source));
END;

-- @postgresql
-- Text other than ASCII: steps 1-5 of textform.py (fold: NFKC, lower case and letters as users type
-- them, diacritics removed, Arabic's article taken off, each punctuation character a space),
-- then each CJK run as its pairs of characters and its characters (step 6).
CREATE FUNCTION openkoi_search_form_unicode(value text) RETURNS text
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS
$$ DECLARE
    f text;
BEGIN
    IF value IS NULL THEN
        RETURN '';
    END IF;
    f := regexp_replace(regexp_replace(
        normalize(regexp_replace(normalize(
            translate(replace(replace(replace(replace(lower(normalize(value, NFKC)),
                      'ß', 'ss'), 'œ', 'oe'), 'æ', 'ae'), 'þ', 'th'),
                      'ςøłđðı' || U&'\0649\0629\0671\06CC\06A9', 'σolddi' || U&'\064A\0647\0627\064A\0643'),
            NFD), '[\u0300-\u036f\u0591-\u05bd\u05bf\u05c1\u05c2\u05c4\u05c5\u05c7\u0610-\u061a\u0640\u064b-\u065f\u0670\u06d6-\u06dc\u06df-\u06e4\u06e7\u06e8\u06ea-\u06ed\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe00-\ufe0f\ufe20-\ufe2f\U000e0100-\U000e01ef]+', '', 'g'), NFC),
        '(^|[^\u0620-\u064a\u066e-\u06d3\u06d5\u06ee\u06ef\u06fa-\u06ff])(?:\u0648\u0627\u0644|\u0628\u0627\u0644|\u0643\u0627\u0644|\u0641\u0627\u0644|\u0627\u0644|\u0644\u0644)+(?=[\u0620-\u064a\u066e-\u06d3\u06d5\u06ee\u06ef\u06fa-\u06ff]{2})', '\1', 'g'),
        '[!-/:-@\[-`{-~\u00a1-\u00bf\u00d7\u00f7\u05be\u05c0\u05c3\u05c6\u05f3\u05f4\u060c\u061b\u061f\u066a-\u066d\u06d4\u0964\u0965\u2000-\u206f\u2190-\u2bff\u3000-\u3004\u3008-\u3020\u3030\u303d-\u303f\u30a0\u30fb\U0001f000-\U0001fbff]', ' ', 'g');
    IF f !~ '[\u1100-\u11ff\u3005-\u3007\u3021-\u3029\u3031-\u3035\u303b\u303c\u3041-\u309f\u30a1-\u30fa\u30fc-\u30ff\u3105-\u312f\u3131-\u318e\u31a0-\u31bf\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7a3\ud7b0-\ud7ff\uf900-\ufaff\U0001b000-\U0001b16f\U00020000-\U000323af]' THEN
        RETURN f;
    END IF;
    RETURN coalesce((
        -- a run's pairs: its inner characters doubled ("abcd": "abbccd"), cut after every second one
        SELECT string_agg(CASE WHEN w !~ '^[\u1100-\u11ff\u3005-\u3007\u3021-\u3029\u3031-\u3035\u303b\u303c\u3041-\u309f\u30a1-\u30fa\u30fc-\u30ff\u3105-\u312f\u3131-\u318e\u31a0-\u31bf\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7a3\ud7b0-\ud7ff\uf900-\ufaff\U0001b000-\U0001b16f\U00020000-\U000323af]+$' OR length(w) = 1 THEN w ELSE
                   regexp_replace(left(w, 1) || regexp_replace(substr(w, 2, length(w) - 2), '(.)', '\1\1', 'g')
                                  || right(w, 1), '(..)', '\1 ', 'g')
                   || rtrim(regexp_replace(w, '(.)', '\1 ', 'g'))
               END, ' ' ORDER BY n)
        FROM regexp_split_to_table(regexp_replace(f, '([\u1100-\u11ff\u3005-\u3007\u3021-\u3029\u3031-\u3035\u303b\u303c\u3041-\u309f\u30a1-\u30fa\u30fc-\u30ff\u3105-\u312f\u3131-\u318e\u31a0-\u31bf\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7a3\ud7b0-\ud7ff\uf900-\ufaff\U0001b000-\U0001b16f\U00020000-\U000323af]+)', ' \1 ', 'g'), '[\t\n\v\f\r ]+') WITH ORDINALITY AS t(w, n)
        WHERE w <> ''), '');
END $$;

-- The search form (textform.search_form). These functions run for every column of every row
-- written, and again whenever a row is updated (generated columns), so ASCII text (most text)
-- takes the short way, as in Python: lower case, punctuation as spaces; the expression is
-- inlined into the columns' (a function call costs more than the work here). Any other
-- text: openkoi_search_form_unicode, below.
CREATE FUNCTION openkoi_search_form(value text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$ SELECT CASE WHEN octet_length(value) = length(value)
               THEN regexp_replace(lower(value), '[!-/:-@\[-`{-~]', ' ', 'g')
               ELSE openkoi_search_form_unicode(value) END $$;

-- BM25's document length: the words of the search form (also inlined).
CREATE FUNCTION openkoi_search_length(value text) RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$ SELECT cardinality(array_remove(regexp_split_to_array(openkoi_search_form(value), '[\t\n\v\f\r ]+'), '')) $$;

-- The columns are generated: dropped and added again, every row gets the new form. One ALTER
-- rewrites the table once; the HNSW index is dropped first so that the rewrite does not build
-- it (the store builds it again when it opens, vectors_pg.ensure_ready).
DROP INDEX IF EXISTS idx_chunks_embedding_@DIMS@;
ALTER TABLE memory_chunks DROP COLUMN search_text, DROP COLUMN search_length,
    ADD COLUMN search_text tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('openkoi', openkoi_search_form(text)), 'B')
        || setweight(to_tsvector('openkoi', openkoi_search_form(tags)), 'A')
        || setweight(to_tsvector('openkoi', openkoi_search_form(source)), 'C')
    ) STORED,
    ADD COLUMN search_length integer GENERATED ALWAYS AS (
        openkoi_search_length(text) + openkoi_search_length(tags) + openkoi_search_length(source)
    ) STORED;
CREATE INDEX idx_chunks_search_text ON memory_chunks USING gin (search_text);

ALTER TABLE memory_archive DROP COLUMN search_text, DROP COLUMN search_length,
    ADD COLUMN search_text tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('openkoi', openkoi_search_form(text)), 'B')
        || setweight(to_tsvector('openkoi', openkoi_search_form(tags)), 'A')
        || setweight(to_tsvector('openkoi', openkoi_search_form(source)), 'C')
    ) STORED,
    ADD COLUMN search_length integer GENERATED ALWAYS AS (
        openkoi_search_length(text) + openkoi_search_length(tags) + openkoi_search_length(source)
    ) STORED;
CREATE INDEX idx_archive_search_text ON memory_archive USING gin (search_text);

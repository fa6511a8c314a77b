-- Migration 11: learnings and skill effectiveness (seed 000) per namespace.
--
-- learnings.base_confidence is the confidence at the last reinforcement (or creation):
-- decay is computed from it and the time since last_used (or created_at), never by
-- multiplying confidence in place, so results do not depend on how often maintenance
-- runs. learnings.confidence holds the value as of the last maintenance run.
-- A learning's text is indexed in memory_chunks with the same id (kind 'learning').
ALTER TABLE learnings ADD COLUMN namespace TEXT NOT NULL DEFAULT 'default';
ALTER TABLE learnings ADD COLUMN base_confidence REAL;
ALTER TABLE learnings ADD COLUMN origin TEXT NOT NULL DEFAULT 'rule';
UPDATE learnings SET base_confidence = confidence WHERE base_confidence IS NULL;
CREATE INDEX idx_learnings_namespace_type ON learnings(namespace, type);
CREATE INDEX idx_learnings_source_task ON learnings(source_task) WHERE source_task IS NOT NULL;

-- The seed's key (skill_name, task_category) gains the namespace in front.
CREATE TABLE skill_effectiveness_v2 (
    namespace TEXT NOT NULL DEFAULT 'default',
    skill_name TEXT NOT NULL,
    task_category TEXT NOT NULL,
    avg_score REAL NOT NULL,
    sample_count INTEGER NOT NULL,
    last_used TEXT NOT NULL,
    PRIMARY KEY (namespace, skill_name, task_category)
);
INSERT INTO skill_effectiveness_v2 (namespace, skill_name, task_category, avg_score, sample_count, last_used)
    SELECT 'default', skill_name, task_category, avg_score, sample_count, last_used FROM skill_effectiveness;
DROP TABLE skill_effectiveness;
ALTER TABLE skill_effectiveness_v2 RENAME TO skill_effectiveness;
CREATE INDEX idx_skill_effectiveness_category ON skill_effectiveness(namespace, task_category, avg_score);

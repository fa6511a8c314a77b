-- Migration 13: usage events and patterns (seed 000) per namespace.
ALTER TABLE usage_events ADD COLUMN namespace TEXT NOT NULL DEFAULT 'default';
ALTER TABLE usage_patterns ADD COLUMN namespace TEXT NOT NULL DEFAULT 'default';
CREATE INDEX idx_usage_events_namespace_time ON usage_events(namespace, timestamp);
CREATE INDEX idx_usage_patterns_namespace ON usage_patterns(namespace, status);

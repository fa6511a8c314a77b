"""The memory lifecycle: schedules, size pruning into the archive (seed 002), Hebbian links
(seed 002 v2), the forgetting engine (seed 003) and run locks shared across processes. Each
job is idempotent and safe to run from several processes at once; ``store.maintain()``
strings them together."""

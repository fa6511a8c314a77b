"""The memory lifecycle: schedules, size pruning into the archive, Hebbian links (and, from
other modules, decay and the forgetting engine). Each job is idempotent and safe to run from
several processes at once; ``store.maintain()`` strings them together."""

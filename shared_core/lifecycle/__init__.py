"""The memory lifecycle: forgetting (seed 003), run locks shared across processes."""

"""LlamaIndex adapters for openkoi-memory (install the ``llama-index`` extra)."""

__all__: list[str] = []

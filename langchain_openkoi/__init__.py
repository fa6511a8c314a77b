"""LangChain and LangGraph adapters for openkoi-memory (install the ``langchain`` extra)."""

__all__: list[str] = []

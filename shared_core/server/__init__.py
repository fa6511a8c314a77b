"""openkoi-memory as a service (the ``server`` extra): MCP server, REST API, tokens, maintenance schedule."""

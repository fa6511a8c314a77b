"""The routes of the REST API, one module per concept: memories and namespaces, the knowledge base,
insights, usage analytics, and maintenance with health; :mod:`.access` resolves who is asking and for
which namespace. :func:`shared_core.server.rest.create_app` puts them together."""

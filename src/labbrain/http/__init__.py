"""The HTTP adapter: the SPARQL 1.1 Protocol endpoint, the graph store GET, the web console,
MCP over HTTP, its guard (hosts, origins, limits) and the worker pool for queries.
"""

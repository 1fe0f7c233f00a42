"""The MCP adapter: the server (:mod:`~labbrain.mcp.server`) with its tools
(:mod:`~labbrain.mcp.tools`), resources and prompts, resource notifications, the output cap,
the tool listing without its bulk, the SPARQL sandbox, guarded images and the load allowlist.

The tools parse their arguments, call the library and shape its answers; what they share
(the context of services over one store, registration, answers, errors) is
:mod:`~labbrain.mcp.common`.
"""

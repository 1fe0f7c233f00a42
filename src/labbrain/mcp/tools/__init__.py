"""labbrain.mcp.tools."""

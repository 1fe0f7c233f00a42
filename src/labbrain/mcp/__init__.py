"""labbrain.mcp."""

"""labbrain.index."""

"""labbrain.store."""

"""labbrain.discourse."""

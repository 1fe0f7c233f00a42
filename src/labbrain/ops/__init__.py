"""labbrain.ops."""

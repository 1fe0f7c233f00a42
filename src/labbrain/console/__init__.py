"""labbrain.console."""

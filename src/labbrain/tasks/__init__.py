"""labbrain.tasks."""

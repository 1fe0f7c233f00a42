"""labbrain.http."""

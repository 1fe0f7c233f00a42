"""labbrain.ingest."""

"""labbrain.store.remote."""

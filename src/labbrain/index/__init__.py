"""Indexes derived from the store and rebuildable from it: the SQLite FTS5 text index, its
refreshing variant for shared stores, the vector index and embeddings, hybrid search, and the
text helpers they share (titles, key terms).
"""

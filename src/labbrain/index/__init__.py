"""Indexes derived from the store and rebuildable from it: the text index (SQLite rows,
tantivy full-text search), its
refreshing variant for shared stores, the vector index and embeddings, hybrid search, and the
text helpers they share (what a word is, titles, key terms).
"""

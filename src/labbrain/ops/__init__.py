"""Operations over an opened store: backup and restore, check and repair, the retrieval
evaluation, and the task workflows (ingest, reindex, embed) bound to a store.
"""

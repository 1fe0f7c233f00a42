"""Atomic propositions with sources and confidence, their relations, lineage and
contradictions.
"""

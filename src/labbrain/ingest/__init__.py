"""Loading exports: reading a file, repairing a Roam discourse-graph JSON-LD context, turning
the export into RDF, and writing it into its dataset graph atomically.
"""

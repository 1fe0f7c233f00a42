"""labbrain.rdf."""

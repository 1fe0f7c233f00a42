"""The remote backend: a SPARQL 1.1 Query / Update / Graph Store Protocol endpoint as a
:class:`~labbrain.store.base.QuadStore` (HTTP client, SPARQL text building, the store).
"""

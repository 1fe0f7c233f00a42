"""Quad stores: the :class:`~labbrain.store.base.QuadStore` interface with its capabilities,
the embedded Oxigraph backend (:mod:`~labbrain.store.local`, with its journal), the remote
SPARQL 1.1 backend (:mod:`~labbrain.store.remote`), the SPARQL templates, the ontology loader,
export, and running read-only work with a time limit.

The only package that names a backend class; everything above asks a store's capabilities.
"""

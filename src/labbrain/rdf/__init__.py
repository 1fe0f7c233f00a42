"""RDF vocabulary and rules shared by every layer: namespaces (every ``urn:labbrain:`` name),
term helpers, the files shipped with the package, and the SPARQL policy (what users may send).

Imports only :mod:`labbrain.errors` and :mod:`labbrain.settings`.
"""

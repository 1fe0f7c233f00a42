"""The interactive SPARQL console: prompt, completion, result formats, and the worker that runs
a query with a time limit.
"""

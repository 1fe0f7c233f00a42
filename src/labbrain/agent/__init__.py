"""What an assistant writes, kept apart from the lab's datasets: the writer (provenance,
idempotency keys, one transaction per write), the project notebook
(:mod:`~labbrain.agent.projects`), the memory domains (:mod:`~labbrain.agent.memory`) and
propositions (:mod:`~labbrain.agent.claims`).
"""

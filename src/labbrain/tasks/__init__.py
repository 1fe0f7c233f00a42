"""Long-running work as tasks: the ledger (task states checkpointed in the store) and the
runner (drives a task through its steps over executors it is handed).
"""

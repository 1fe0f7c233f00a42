"""labbrain.agent.claims."""

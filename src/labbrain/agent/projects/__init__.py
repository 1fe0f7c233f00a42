"""labbrain.agent.projects."""

"""labbrain.agent."""

"""labbrain.agent.memory."""

"""Running the agent for every front end (the model from settings, local tools, a run driven
to its end) and MCP sessions recorded as runs.

Imports no other room of `recording`.
"""

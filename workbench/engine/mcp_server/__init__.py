"""`workbench mcp-serve`: the workbench's runs as MCP tools for a coding agent.

`tools` says what each tool takes (names, descriptions, JSON schemas) and checks arguments;
`handlers` answers a call with the engine functions the CLI commands use; `bounds` sizes
results for a model's context; `server` is the one module of the engine that imports the
`mcp` SDK (the transports: stdio and streamable HTTP).
"""

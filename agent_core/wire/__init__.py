"""What travels between an agent and its model, read and written in one place.

`arguments` holds what every wire format shares (a tool call's argument string: parsed as
JSON, else one repair attempt, else a model-readable error), `urls` the endpoint as a trace
may show it, and one module per wire format its message shapes: `chat` for chat
completions, with a codec for the Responses API or Anthropic Messages to sit beside it.
"""

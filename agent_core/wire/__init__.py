"""What travels between an agent and its model, read and written in one place.

`arguments` holds what every wire format shares (a tool call's argument string: parsed as
JSON, else one repair attempt, else a model-readable error), `urls` the endpoint as a trace
may show it, and one module per wire format: `chat` for chat-completion message shapes,
`responses` for the OpenAI Responses API and `anthropic` for Anthropic Messages. The last
two are codecs: a request body, a whole answer or a stream of events in, the chat-shape
messages and tool calls every reader of a trace knows out (`answer.WireAnswer`), and the
other way round for servers and clients that speak the format.
"""

"""What travels between an agent and its model, read and written in one place.

One module per wire format — `chat_completions`, `responses` (the OpenAI Responses API) and
`anthropic` (Anthropic Messages) — each a request body, a whole answer or a stream of events
in, the chat-shape messages and tool calls every reader of a trace knows out
(`answer.WireAnswer`, `answer.AssembledResponse`), and the other way round for servers and
clients that speak the format. `codecs` puts each behind the one `WireCodec` protocol and
the one table, `CODECS` (`codec_for(api)`), that every user asks. Beside them: `arguments`
(a tool call's argument string: parsed as JSON, else one repair attempt, else a
model-readable error), `chat` (chat-shape messages and tool calls), `spans` (a conversation's
own wire form, re-sent as it was) and `urls` (the endpoint as a trace may show it).
"""

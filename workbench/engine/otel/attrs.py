"""The span attributes runs are mapped to and from, and the message shapes they carry.

Two vocabularies are written side by side, so any viewer finds what it reads:
- OpenTelemetry's GenAI semantic conventions (`gen_ai.*`): `invoke_agent`, `chat` and
  `execute_tool` spans, messages as JSON lists of role + parts.
- OpenInference (`openinference.span.kind`, `llm.*`, `input.value` …), what Arize Phoenix
  reads: messages flattened into one attribute per field.
`workbench.*` attributes keep what neither says (turn, attempt, the run's exact status), so
an export read back by `workbench collect` gives the same decision chain.

No OpenTelemetry package is imported here; `export` and `ingest` do that.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any
from urllib.parse import urlsplit

from agent_core.wire.arguments import parse_arguments
from agent_core.wire.chat import arguments_text
from traces.events import HistoryTrimmed

# GenAI semantic conventions.
OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
REQUEST_MODEL = "gen_ai.request.model"
RESPONSE_MODEL = "gen_ai.response.model"
FINISH_REASONS = "gen_ai.response.finish_reasons"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
TOOL_DEFINITIONS = "gen_ai.tool.definitions"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_TYPE = "gen_ai.tool.type"
TOOL_DESCRIPTION = "gen_ai.tool.description"
TOOL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_RESULT = "gen_ai.tool.call.result"
AGENT_NAME = "gen_ai.agent.name"
CONVERSATION_ID = "gen_ai.conversation.id"
ERROR_TYPE = "error.type"
REQUEST_PARAMS = {
    "temperature": "gen_ai.request.temperature",
    "top_p": "gen_ai.request.top_p",
    "max_tokens": "gen_ai.request.max_tokens",
    "seed": "gen_ai.request.seed",
    "frequency_penalty": "gen_ai.request.frequency_penalty",
    "presence_penalty": "gen_ai.request.presence_penalty",
}

# OpenInference.
SPAN_KIND = "openinference.span.kind"
INPUT_VALUE = "input.value"
INPUT_MIME = "input.mime_type"
OUTPUT_VALUE = "output.value"
OUTPUT_MIME = "output.mime_type"
LLM_MODEL = "llm.model_name"
LLM_PROVIDER = "llm.provider"
LLM_SYSTEM = "llm.system"
LLM_PARAMS = "llm.invocation_parameters"
LLM_INPUT = "llm.input_messages"
LLM_OUTPUT = "llm.output_messages"
LLM_TOOLS = "llm.tools"
LLM_PROMPT_TOKENS = "llm.token_count.prompt"
LLM_COMPLETION_TOKENS = "llm.token_count.completion"
LLM_TOTAL_TOKENS = "llm.token_count.total"
OI_TOOL_NAME = "tool.name"
OI_TOOL_DESCRIPTION = "tool.description"
OI_TOOL_PARAMETERS = "tool.parameters"
OI_TOOL_CALL_ID = "tool_call.id"
OI_AGENT_NAME = "agent.name"
SESSION_ID = "session.id"

# OpenLLMetry (traceloop), before it wrote the conventions' messages.
LLM_REQUEST_TYPE = "llm.request.type"
TRACELOOP_KIND = "traceloop.span.kind"
PROMPT_PREFIX = "gen_ai.prompt"
COMPLETION_PREFIX = "gen_ai.completion"
LLM_FUNCTIONS = "llm.request.functions"
LLMETRY_TOTAL_TOKENS = "llm.usage.total_tokens"
# Token counts as the conventions named them before `input_tokens` / `output_tokens`.
PROMPT_TOKENS_OLD = "gen_ai.usage.prompt_tokens"
COMPLETION_TOKENS_OLD = "gen_ai.usage.completion_tokens"
TOTAL_TOKENS = "gen_ai.usage.total_tokens"
# pydantic-ai's instrumentation before it wrote `gen_ai.tool.call.*` (its version 2).
PYDANTIC_TOOL_ARGUMENTS = "tool_arguments"
PYDANTIC_TOOL_RESULT = "tool_response"
PYDANTIC_FINAL_RESULT = "final_result"

# The workbench's own.
RUN_ID = "workbench.run_id"
RUN_STATUS = "workbench.run.status"
RUN_REASON = "workbench.run.reason"
TIMEOUT_LAYER = "workbench.run.timeout_layer"
PARENT_RUN_ID = "workbench.parent_run_id"
FORK_TURN = "workbench.fork_turn"
RUN_ORIGIN = "workbench.run.origin"
RUN_CLIENT = "workbench.run.client"
TURN = "workbench.turn"
ATTEMPT = "workbench.attempt"
SEQ = "workbench.seq"
TOOL_SOURCE = "workbench.tool.source"
TOOL_MOCKED = "workbench.tool.mocked"
TOOL_REPLAYED = "workbench.tool.replayed"
TOOL_ERROR = "workbench.tool.error"
TOOL_OBSERVED = "workbench.tool.observed"
SYSTEM_PROMPT = "workbench.system_prompt"

AGENT_NAME_VALUE = "agent-workbench"

# History trims are events on the agent span, named so, with the trim's fields.
TRIM_EVENT = "workbench.history_trimmed"
TRIM_FIELDS = (
    "tokens_before",
    "tokens_after",
    "messages_before",
    "messages_after",
    "rounds_kept",
    "rounds_dropped",
    "summary",
)


def trim_attributes(trim: HistoryTrimmed) -> dict[str, str | int]:
    out: dict[str, str | int] = {TURN: trim.turn} if trim.turn is not None else {}
    for name in TRIM_FIELDS:
        value = getattr(trim, name)
        if value is not None:
            out[f"workbench.{name}"] = value
    return out


# The provider behind a base URL, for `gen_ai.provider.name` (the conventions' well-known
# values) and OpenInference's `llm.provider`; another host (a local server, a proxy) is
# left unnamed rather than guessed.
_PROVIDERS = (
    ("openai.azure.com", "azure.ai.openai", "azure"),
    ("api.openai.com", "openai", "openai"),
    ("api.anthropic.com", "anthropic", "anthropic"),
    ("api.groq.com", "groq", "groq"),
    ("api.mistral.ai", "mistral_ai", "mistralai"),
    ("api.deepseek.com", "deepseek", "deepseek"),
    ("api.x.ai", "x_ai", "xai"),
    ("generativelanguage.googleapis.com", "gcp.gemini", "google"),
)


def provider_of(base_url: str | None) -> tuple[str, str] | None:
    """(GenAI provider name, OpenInference provider) for a base URL, when known."""
    host = urlsplit(base_url or "").hostname or ""
    for suffix, genai, openinference in _PROVIDERS:
        if host == suffix or host.endswith("." + suffix):
            return genai, openinference
    return None


def trace_id(run_id: str) -> int:
    """The run's trace id: the same for the same run, every export."""
    return int.from_bytes(hashlib.sha256(f"workbench-run:{run_id}".encode()).digest()[:16]) or 1


def span_id(run_id: str, seq: int) -> int:
    """The span of the event `seq` of the run (its run_start, model_request or tool_start)."""
    return int.from_bytes(hashlib.sha256(f"{run_id}:{seq}".encode()).digest()[:8]) or 1


def text_of(content: Any) -> str | None:
    """A chat message's content as text: a string as is, text parts joined, else JSON."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list) and all(
        isinstance(part, dict) and part.get("type") == "text" for part in content
    ):
        return "".join(str(part.get("text", "")) for part in content)
    return json.dumps(content, ensure_ascii=False)


def parsed_arguments(raw: Any) -> Any:
    """Tool call arguments as the conventions prefer them: the object (as the agent loop
    parses or repairs it), else the text."""
    if not isinstance(raw, str):
        return raw
    parsed = parse_arguments(raw)
    return parsed.value if parsed.value is not None else raw


def to_semconv(message: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI chat message as a GenAI semantic-conventions message (role + parts)."""
    role = message.get("role", "user")
    parts: list[dict[str, Any]] = []
    content = text_of(message.get("content"))
    if role == "tool":
        parts.append(
            {"type": "tool_call_response", "id": message.get("tool_call_id"), "response": content}
        )
    elif content:
        parts.append({"type": "text", "content": content})
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        parts.append(
            {
                "type": "tool_call",
                "id": call.get("id"),
                "name": function.get("name"),
                "arguments": parsed_arguments(function.get("arguments")),
            }
        )
    return {"role": role, "parts": parts}


def _tool_response_text(part: dict[str, Any]) -> str:
    # The conventions name it `response`; pydantic-ai writes `result`.
    response = part.get("response", part.get("result"))
    return response if isinstance(response, str) else json.dumps(response, ensure_ascii=False)


def from_semconv_messages(message: dict[str, Any]) -> list[dict[str, Any]]:
    """A GenAI semantic-conventions message back as OpenAI chat messages: one, except
    that each `tool_call_response` part is a `tool` message of its own (pydantic-ai sends
    them in a `user` message, with any retry prompt beside them)."""
    role = message.get("role", "user")
    out: dict[str, Any] = {"role": role}
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    answers: list[dict[str, Any]] = []
    for part in message.get("parts") or []:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "text":
            texts.append(str(part.get("content") or ""))
        elif kind == "tool_call":
            calls.append(
                {
                    "id": part.get("id"),
                    "type": "function",
                    "function": {
                        "name": part.get("name"),
                        "arguments": arguments_text(part.get("arguments") or {}),
                    },
                }
            )
        elif kind == "tool_call_response":
            answer = {"role": "tool", "tool_call_id": part.get("id")}
            answers.append(answer | {"content": _tool_response_text(part)})
    if role == "tool" and len(answers) == 1 and not texts:
        return answers
    if answers and not texts and not calls:
        return answers
    out["content"] = "".join(texts) if texts or role != "assistant" else None
    if calls:
        out["tool_calls"] = calls
    return [*answers, out]


def flatten_messages(prefix: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """OpenAI chat messages as OpenInference's flattened `llm.*_messages.N.message.*`."""
    out: dict[str, Any] = {}
    for i, message in enumerate(messages):
        key = f"{prefix}.{i}.message"
        out[f"{key}.role"] = message.get("role", "user")
        content = text_of(message.get("content"))
        if content is not None:
            out[f"{key}.content"] = content
        if message.get("tool_call_id"):
            out[f"{key}.tool_call_id"] = message["tool_call_id"]
        if message.get("name"):
            out[f"{key}.name"] = message["name"]
        for j, call in enumerate(message.get("tool_calls") or []):
            function = call.get("function") or {}
            call_key = f"{key}.tool_calls.{j}.tool_call"
            if call.get("id"):
                out[f"{call_key}.id"] = call["id"]
            out[f"{call_key}.function.name"] = function.get("name") or ""
            out[f"{call_key}.function.arguments"] = arguments_text(function.get("arguments") or "")
    return out


def unflatten_messages(prefix: str, attributes: dict[str, Any]) -> list[dict[str, Any]]:
    """OpenInference's flattened messages under `prefix` back as OpenAI chat messages."""
    return unflatten_chat(
        prefix,
        attributes,
        "message.",
        ("role", "content", "tool_call_id", "name"),
        ("tool_call.id", "tool_call.function.name", "tool_call.function.arguments"),
    )


def unflatten_chat(
    prefix: str,
    attributes: dict[str, Any],
    message_part: str,
    fields: tuple[str, ...],
    call_keys: tuple[str, str, str],
) -> list[dict[str, Any]]:
    """Messages flattened as `PREFIX.N.[message_part]FIELD` and
    `PREFIX.N.[message_part]tool_calls.M.KEY` (OpenInference, OpenLLMetry) back as OpenAI
    chat messages; `call_keys` name a call's id, function name and arguments."""
    found: dict[int, dict[str, Any]] = {}
    calls: dict[tuple[int, int], dict[str, Any]] = {}
    start = prefix + "."
    for key, value in attributes.items():
        if not key.startswith(start):
            continue
        index, _, rest = key[len(start) :].partition(".")
        if not index.isdigit() or not rest.startswith(message_part):
            continue
        message = found.setdefault(int(index), {})
        field = rest[len(message_part) :]
        if field.startswith("tool_calls."):
            number, _, call_field = field[len("tool_calls.") :].partition(".")
            if number.isdigit():
                calls.setdefault((int(index), int(number)), {})[call_field] = value
        elif field in fields:
            message[field] = value
    id_key, name_key, arguments_key = call_keys
    messages: list[dict[str, Any]] = []
    for position in sorted(found):
        message = found[position]
        out: dict[str, Any] = {"role": message.get("role", "user")}
        out["content"] = message.get("content")
        for field in fields:
            if field not in ("role", "content") and field in message:
                out[field] = message[field]
        message_calls = [calls[key] for key in sorted(calls) if key[0] == position]
        if message_calls:
            out["tool_calls"] = [
                {
                    "id": call.get(id_key),
                    "type": "function",
                    "function": {
                        "name": call.get(name_key, ""),
                        "arguments": call.get(arguments_key, ""),
                    },
                }
                for call in message_calls
            ]
        messages.append(out)
    return messages

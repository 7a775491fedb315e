"""Claude Code's transcripts as runs: `~/.claude/projects/<project>/<session>.jsonl`.

A transcript is JSON Lines, one record per line, each with a `type`. The ones a run is made
of: `user` (the prompt, or `tool_result` blocks for the model's `tool_use` calls) and
`assistant` (one record per content block, the blocks of one answer sharing `message.id`,
with `usage` and `stop_reason`); `api-request-shape` gives the system prompt and the tools
offered, `api-request` the parameters and when each call was sent. Sub-agents (the Agent
tool) write their own sidechain, `<session>/subagents/agent-<id>.jsonl` (older versions kept
it in the session file with `isSidechain: true`): each is a run of its own whose parent is
the session's run. The rest (attachments, queue operations, cost state, …) is counted;
a type not listed here is kept whole in `meta.session.unknown_records`.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from agent_core.wire import anthropic
from traces.user_files import read_text
from workbench.engine.sessions.session import (
    SessionError,
    SessionLines,
    SessionRun,
    read_lines,
    run_id_of,
    timestamp,
)

DEFAULT_ROOT = Path("~/.claude/projects")
# A sub-agent's `.meta.json` names its type and call: a few hundred bytes.
_META_BYTES = 1024 * 1024
# Records a run is not made of, which Claude Code writes beside the conversation.
KNOWN_TYPES = frozenset(
    {
        "attachment",
        "queue-operation",
        "last-prompt",
        "atis-latch",
        "api-request-blob",
        "tools-used",
        "cost-state",
        "summary",
        "system",
        "file-history-snapshot",
        "custom-title",
        "progress",
    }
)
# Request parameters that describe the client, not the call.
_CLIENT_PARAMS = frozenset({"model", "betas", "metadata", "stream"})


def session_files(root: Path) -> list[Path]:
    """The session transcripts under `root` (a transcript itself, a project folder or the
    projects folder); sub-agents' sidechains are read with their session."""
    if not root.is_dir():  # a file, or what is not one: refused when it is read
        return [root]
    return sorted(p for p in root.rglob("*.jsonl") if p.parent.name != "subagents")


class _Reader:
    def __init__(self, run: SessionRun) -> None:
        self.run = run
        self.blocks: list[Any] = []
        self.answer_id: Any = None
        self.last: dict[str, Any] = {}
        self.when: datetime | None = None
        self.asked: datetime | None = None

    def read(self, records: list[tuple[int, dict[str, Any]]]) -> SessionRun:
        for _, record in records:
            kind = str(record.get("type"))
            if kind == "assistant" and isinstance(record.get("message"), dict):
                self.assistant(record)
                continue
            self.flush()
            if kind == "user" and isinstance(record.get("message"), dict):
                self.user(record)
            elif kind == "api-request-shape" and isinstance(record.get("shape"), dict):
                self.shape(record["shape"])
            elif kind == "api-request":
                self.request(record)
            else:
                self.run.saw(kind, record, known=kind in KNOWN_TYPES)
                continue
            self.run.saw(kind, record)
            self.about(record)
        self.flush()
        return self.run

    def about(self, record: dict[str, Any]) -> None:
        run = self.run
        if run.client is None and isinstance(record.get("version"), str):
            run.client = f"claude-code {record['version']}"
        for key, name in (("sessionId", "session_id"), ("cwd", "cwd"), ("gitBranch", "branch")):
            if isinstance(record.get(key), str):
                run.meta.setdefault(name, record[key])

    def assistant(self, record: dict[str, Any]) -> None:
        message = record["message"]
        if self.blocks and message.get("id") != self.answer_id:
            self.flush()
        self.run.saw("assistant", record)
        self.about(record)
        content = message.get("content")
        self.blocks += content if isinstance(content, list) else [{"type": "text", "text": content}]
        self.answer_id = message.get("id")
        self.last = message
        self.when = timestamp(record.get("timestamp")) or self.when
        if self.run.model is None and isinstance(message.get("model"), str):
            self.run.model = message["model"]

    def flush(self) -> None:
        if not self.blocks:
            return
        body: dict[str, Any] = {"type": "message", "content": self.blocks}
        body |= {"stop_reason": self.last.get("stop_reason"), "usage": self.last.get("usage")}
        self.blocks = []
        answer = anthropic.answer_from_body(body)  # a list of blocks always reads
        self.run.answer(self.when, answer.message, answer.finish_reason, answer.usage, self.asked)
        self.asked = None

    def user(self, record: dict[str, Any]) -> None:
        when = timestamp(record.get("timestamp"))
        content = record["message"].get("content")
        messages, _, _ = anthropic.request_parts(
            {"messages": [{"role": "user", "content": content}]}
        )
        for message in messages:
            if not isinstance(message, dict):
                continue
            if message.get("role") == "tool":
                text = message.get("content")
                ok = not message.get("is_error")
                self.run.result(when, str(message.get("tool_call_id")), str(text or ""), ok)
            else:
                self.run.context(when, message)

    def shape(self, shape: dict[str, Any]) -> None:
        run = self.run
        messages, tools, _ = anthropic.request_parts(
            {"system": shape.get("system"), "tools": shape.get("tools")}
        )
        if tools and not run.tools:
            run.tools = [t for t in tools if isinstance(t, dict)]
        if messages and run.system_prompt is None:
            run.system_prompt = str(messages[0]["content"])
            if not any(m.get("role") == "system" for m in run.history):
                run.history.insert(0, messages[0])

    def request(self, record: dict[str, Any]) -> None:
        self.asked = timestamp(record.get("timestamp"))
        params = record.get("params")
        if isinstance(params, dict):
            if not self.run.params:
                self.run.params = {k: v for k, v in params.items() if k not in _CLIENT_PARAMS}
            if self.run.model is None and isinstance(params.get("model"), str):
                self.run.model = params["model"]


def read_session(path: Path) -> tuple[list[SessionRun], list[str]]:
    """The runs of one transcript (the session's, then each sub-agent's) and the problem
    lines of its bad lines. Raises SessionError for a file that cannot be read."""
    lines = read_lines(path)
    main, sidechains = _split(lines)
    session_id = str(_first(main, "sessionId") or path.stem)
    run = _Reader(SessionRun(run_id_of(session_id), "anthropic", "claude-code", path)).read(main)
    run.meta.setdefault("session_id", session_id)
    runs = [run]
    problems = list(lines.problems)
    agents: list[tuple[str, list[tuple[int, dict[str, Any]]], Path, dict[str, Any]]] = [
        (agent, records, path, {}) for agent, records in sidechains.items()
    ]
    for sidechain in sorted((path.parent / path.stem / "subagents").glob("agent-*.jsonl")):
        try:
            side_lines = read_lines(sidechain)
        except SessionError as exc:
            problems.append(str(exc))
            continue
        problems += side_lines.problems
        agent = str(_first(side_lines.records, "agentId") or sidechain.stem.removeprefix("agent-"))
        agents.append((agent, side_lines.records, sidechain, _agent_meta(sidechain)))
    for agent, records, file, about in agents:
        side = SessionRun(run_id_of(session_id, agent), "anthropic", "claude-code", file)
        side.parent_run_id = run.run_id
        side.meta["agent_id"] = agent
        side.meta["session_id"] = session_id  # a sub-agent is part of its parent's session
        side.meta |= {"agent": about} if about else {}
        runs.append(_Reader(side).read(records))
    return runs, problems


def _split(
    lines: SessionLines,
) -> tuple[list[tuple[int, dict[str, Any]]], dict[str, list[tuple[int, dict[str, Any]]]]]:
    main: list[tuple[int, dict[str, Any]]] = []
    sidechains: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    for number, record in lines.records:
        if record.get("isSidechain") is True:
            agent = str(record.get("agentId") or "sidechain")
            sidechains.setdefault(agent, []).append((number, record))
        else:
            main.append((number, record))
    return main, sidechains


def _first(records: list[tuple[int, dict[str, Any]]], key: str) -> Any:
    return next((r[key] for _, r in records if isinstance(r.get(key), str)), None)


def _agent_meta(sidechain: Path) -> dict[str, Any]:
    # `agent-<id>.meta.json` beside a sidechain: the agent type and the Agent call's id.
    try:
        meta = json.loads(read_text(sidechain.with_suffix(".meta.json"), _META_BYTES))
    except (OSError, ValueError):
        return {}
    return meta if isinstance(meta, dict) else {}

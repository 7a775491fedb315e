"""Sessions through `workbench proxy` (issue 39, part 6): a run is part of the session its
client names (the X-Workbench-Session header, a coding agent's own session id), and a
follow-up run is part of the session of the conversation it continues; `workbench
sessions` then groups them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import openai
import pytest

from tests.support.servers import recording_proxy
from traces.events import SESSION_META
from traces.store import TraceStore
from workbench.engine.http.model_server import ScriptResponder
from workbench.engine.http.sessions import SESSION_HEADER, client_session

KEY = "sk-proxy-sessions-0123456789"


def _starts(home: Path) -> dict[str, dict[str, Any]]:
    starts = {}
    for trace in (home / "traces").glob("*.jsonl"):
        start = json.loads(trace.read_text().splitlines()[0])
        starts[start["run_id"]] = start
    return starts


def _ask(client: openai.OpenAI, messages: list[Any], **extra: Any) -> str:
    answer = client.chat.completions.create(model="m", messages=messages, **extra)
    return answer.choices[0].message.content or ""


def test_a_conversations_follow_ups_are_one_session(tmp_path: Path) -> None:
    home = tmp_path / "home"
    steps = [{"content": "Hello."}, {"content": "Still here."}, {"content": "Bye."}]
    with recording_proxy(ScriptResponder(steps), home) as (_, proxy):
        client = openai.OpenAI(base_url=proxy.base_url, api_key=KEY, max_retries=0)
        messages: list[Any] = [{"role": "user", "content": "hi"}]
        for follow_up in ("are you there?", "bye"):
            messages += [
                {"role": "assistant", "content": _ask(client, messages)},
                {"role": "user", "content": follow_up},
            ]
        _ask(client, messages)
    starts = _starts(home)
    [first] = [s for s in starts.values() if s["parent_run_id"] is None]
    assert SESSION_META not in first["meta"]  # written before anything followed it up
    follow_ups = [s for s in starts.values() if s["parent_run_id"] is not None]
    assert [s["meta"][SESSION_META] for s in follow_ups] == [first["run_id"]] * 2
    with TraceStore.for_home(home) as store:
        store.ingest_home(home)
        [session] = store.sessions()
        assert (session.session, session.runs) == (first["run_id"], 3)
        assert session.statuses == {"completed": 3}


def test_the_session_header_names_the_session_and_stays_with_the_proxy(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with recording_proxy(ScriptResponder([{"content": "Hello."}]), home) as (upstream, proxy):
        client = openai.OpenAI(base_url=proxy.base_url, api_key=KEY, max_retries=0)
        headers = {"X-Workbench-Session": "ticket-42"}
        _ask(client, [{"role": "user", "content": "hi"}], extra_headers=headers)
        [received] = upstream.requests
    [start] = _starts(home).values()
    assert start["meta"][SESSION_META] == "ticket-42"
    assert SESSION_HEADER not in received.headers


@pytest.mark.parametrize(
    ("body", "headers", "session"),
    [
        # Claude Code: metadata.user_id as JSON (2.x), or spelled out (1.x), or a header.
        ({"metadata": {"user_id": '{"device_id": "d", "session_id": "s-1"}'}}, {}, "s-1"),
        ({"metadata": {"user_id": "user_ab12_account__session_0f3c-9a2b"}}, {}, "0f3c-9a2b"),
        ({}, {"x-claude-code-session-id": "s-2"}, "s-2"),
        # Codex: client_metadata in the body, or its session_id header.
        ({"client_metadata": {"session_id": "s-3", "turn_id": "1"}}, {}, "s-3"),
        ({}, {"session_id": "s-4"}, "s-4"),
        # The user's own name wins over the client's.
        ({"client_metadata": {"session_id": "s-3"}}, {SESSION_HEADER: "mine"}, "mine"),
        ({"metadata": {"user_id": "someone"}}, {}, None),
        ({"metadata": {"user_id": "not json {"}}, {}, None),
    ],
)
def test_what_clients_say_of_their_session(
    body: dict[str, Any], headers: dict[str, str], session: str | None
) -> None:
    assert client_session(body, headers) == session

"""Which session a captured run is part of: what the client says of its own session.

In order: the `X-Workbench-Session` header (the user's name for it); a coding agent's own
session id — Claude Code's `X-Claude-Code-Session-Id` header or the `session_id` inside
the JSON of `metadata.user_id` (older versions spell it `user_…_session_<uuid>`), Codex's
`client_metadata.session_id` or its `session_id` header. A run the client says nothing of
takes the session of the conversation it follows up (`capture.CaptureBook`).
"""

from __future__ import annotations

import json
import re
from typing import Any

SESSION_HEADER = "x-workbench-session"
# Headers clients name their session with, by lower-case name, the user's own first.
_HEADERS = (SESSION_HEADER, "x-claude-code-session-id", "session_id")
_OLD_USER_ID = re.compile(r"_session_([0-9a-fA-F-]{8,})$")


def client_session(body: dict[str, Any], headers: dict[str, str]) -> str | None:
    """The session a request says it is part of (`headers` by lower-case name), if any."""
    for name in _HEADERS:
        if headers.get(name, "").strip():
            return headers[name].strip()
    client = body.get("client_metadata")
    if isinstance(client, dict) and isinstance(client.get("session_id"), str):
        return str(client["session_id"]) or None
    metadata = body.get("metadata")
    user_id = metadata.get("user_id") if isinstance(metadata, dict) else None
    if not isinstance(user_id, str):
        return None
    try:
        said = json.loads(user_id)
    except ValueError:
        old = _OLD_USER_ID.search(user_id)
        return old.group(1) if old else None
    session = said.get("session_id") if isinstance(said, dict) else None
    return session if isinstance(session, str) and session else None

"""What `workbench proxy` keeps out of its traces: every credential a client sends (any
provider's key header, key query parameters), their base64 and hex forms, and the home's
patterns, also when a match is split over stream chunks."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import openai
import pytest

from tests.engine.capture_support import read_run
from tests.support.servers import recording_proxy, text_chunks
from traces.home import REDACT_FILE
from workbench.engine.http.model_server import Reply

KEY = "azure-4f9c1e7a2b8d6035-key"

SENT_AS: dict[str, dict[str, Any]] = {
    "api-key header (Azure OpenAI)": {"default_headers": {"api-key": KEY}},
    "x-api-key header (Anthropic)": {"default_headers": {"x-api-key": KEY}},
    "x-goog-api-key header": {"default_headers": {"x-goog-api-key": KEY}},
    "?api-key=": {"default_query": {"api-key": KEY}},
    "?key=": {"default_query": {"key": KEY}},
}


def capture(home: Path, replies: list[Reply], stream: bool, **client: Any) -> None:
    answers = iter(replies)
    with recording_proxy(lambda body: next(answers), home) as (upstream, proxy):
        sdk = openai.OpenAI(base_url=proxy.base_url, api_key="none", max_retries=0, **client)
        for _ in replies:
            try:
                answer = sdk.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": "hi"}], stream=stream
                )
                if stream:
                    list(answer)  # type: ignore[arg-type]
            except openai.APIStatusError:
                pass
        sdk.close()
        if client:  # the key went upstream as the client sent it
            assert any(KEY in json.dumps(r.headers) + r.path for r in upstream.requests)


@pytest.mark.parametrize("sent_as", SENT_AS.values(), ids=SENT_AS.keys())
def test_every_credential_a_client_sends_is_redacted_when_the_upstream_echoes_it(
    tmp_path: Path, sent_as: dict[str, Any]
) -> None:
    home = tmp_path / "home"
    echoed = Reply(chunks=text_chunks(f"The key you sent is {KEY}, keep it safe."))
    refused = Reply(status=401, body={"error": {"message": f"Incorrect API key: {KEY}"}})
    capture(home, [echoed, refused], stream=True, **sent_as)
    text = "".join(path.read_text() for path in (home / "traces").glob("*.jsonl"))
    assert KEY not in text
    assert text.count("[REDACTED:api_key]") >= 2


def test_base64_and_hex_forms_of_the_key_are_redacted(tmp_path: Path) -> None:
    home = tmp_path / "home"
    raw = KEY.encode()
    forms = {
        "base64": base64.b64encode(raw).decode(),
        "base64url": base64.urlsafe_b64encode(raw).decode(),
        "basic": base64.b64encode(b"user:" + raw).decode(),
        "hex": raw.hex(),
        "HEX": raw.hex().upper(),
    }
    said = " ".join(f"{name}={form}" for name, form in forms.items())
    capture(home, [Reply(chunks=text_chunks(said))], stream=False, default_headers={"api-key": KEY})
    text = json.dumps(read_run(home))
    for name, form in forms.items():
        # A few characters of a form can stay (those that mix in the bytes around the key).
        assert form not in text and form[6:-6] not in text, name
    assert text.count("[REDACTED:api_key]") >= len(forms)


def test_a_pattern_match_split_over_chunks_is_redacted_in_the_chunks(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / REDACT_FILE).write_text("# customer ids\nCUST-\\d{6}\n", encoding="utf-8")
    pieces = ["Your id is CUST-12", "3456", ", and C", "UST-", "654321 too", "."]
    chunks: list[dict[str, Any] | str] = [
        {"id": "c", "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
        for piece in pieces
    ]
    chunks += [{"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}]
    capture(home, [Reply(chunks=[*chunks, "data: [DONE]"])], stream=True)
    events = read_run(home)
    recorded = [e["data"] for e in events if e["type"] == "model_chunk"]
    deltas = [c["choices"][0]["delta"].get("content") for c in recorded]
    # Every chunk is kept, in order; the matches are cut where they start.
    assert deltas == [
        "Your id is [REDACTED:pattern-1]",
        "",
        ", and [REDACTED:pattern-1]",
        "",
        " too",
        ".",
        None,
    ]
    assert [c["id"] for c in recorded] == ["c"] * len(chunks)
    answer = next(e for e in events if e["type"] == "model_response")["message"]["content"]
    assert answer == "".join(d or "" for d in deltas)
    assert "CUST-1" not in json.dumps(events) and "654321" not in json.dumps(events)

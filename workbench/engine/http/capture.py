"""Runs from traffic: what `workbench proxy` records for the requests it forwards.

The proxy hands every chat-completion exchange to a `CaptureBook`, which decides the run and
turn it belongs to and writes it in the trace contract (docs/capture.md has the rules):

- A request whose messages extend the conversation of a run waiting for its client (the
  last request's messages plus the answer) continues that run as its next turn; the same
  messages again after a failed answer are the next attempt of the same turn. Anything else
  starts a new run: task = first user message, system prompt, tools, params and model as
  sent, `origin: "captured"`, `client` = the user agent. (The runs a request may continue
  are kept in a `ConversationIndex`, workbench.engine.http.conversations.)
- `X-Workbench-Run: NAME` names the run (`meta.name`) and only continues runs of that name.
- The session a run is part of (`meta.session_id`): what the client says
  (`X-Workbench-Session`, a coding agent's own session id: workbench.engine.http.sessions),
  else, for a follow-up, the session of the conversation it continues (its first run).
- Tool results the client sends back for the previous answer's calls become that turn's
  `tool_start`/`tool_end` with `observed: true` (the client ran them, we only saw results).
- An answer without tool calls ends the run `completed`; a conversation that goes on after
  it starts a follow-up run whose parent is the completed one. A run whose client went away
  mid-answer stays without `run_end` (`incomplete`, said on stderr); `close()` ends runs
  still waiting for their client as `cancelled`.
- Every credential the client sends (headers and query parameters, see
  `traces.redact.credentials`) is a secret of its run.

Recording never gets in the way of forwarding: the recording process
(workbench.engine.http.recording) calls in here from each exchange's recording task as
things happen, passing the times they happened (`time.monotonic()` readings; events are
stamped with them), and a failure here is reported once and the exchange goes unrecorded.
"""

from __future__ import annotations

import json
import sys
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from agent_core.agent import new_run_id
from agent_core.model.retry import retriable_status
from agent_core.tokens import estimate_message, estimate_prompt, usage_counts
from agent_core.wire.answer import WireAnswer, WireError
from agent_core.wire.chat import content_text, task_text
from agent_core.wire.codecs import codec_for
from agent_core.wire.urls import public_url
from traces.events import (
    SESSION_META,
    Error,
    ModelApi,
    ModelChunk,
    ModelRequest,
    ModelResponse,
    RunEnd,
    RunStart,
    RunStatus,
    utc_now,
)
from traces.home import open_run_trace, traces_dir
from traces.recorder import Recorder
from traces.redact import Redactor, credentials, url_credentials
from traces.totals import RunningTotals
from workbench.engine.http import observed, text_protocol
from workbench.engine.http.conversations import ConversationIndex, meaning
from workbench.engine.http.responses_memory import ResponsesMemory, continued
from workbench.engine.http.sessions import client_session

RUN_HEADER = "x-workbench-run"
# Runs remembered after they ended, for follow-ups; older ones are forgotten, looked for
# once FORGET_EVERY more runs are known (not at every new run: a look reads them all).
MAX_REMEMBERED_RUNS = 1000
FORGET_EVERY = 64

RunState = Literal["answering", "waiting", "failed", "completed", "abandoned", "ended"]


@dataclass
class CapturedRun:
    """One run being recorded, and what it needs to recognise its next request."""

    run_id: str
    name: str | None
    recorder: Recorder
    redactor: Redactor
    started: float
    state: RunState = "answering"
    turn: int = 1
    attempt: int = 1
    # Digests of the messages by meaning (not the messages: a long conversation is not
    # kept in memory): the last request's, and the conversation so far with its answer.
    conversation: list[bytes] = field(default_factory=list)
    last_request: list[bytes] = field(default_factory=list)
    pending_calls: list[dict[str, Any]] = field(default_factory=list)
    answered_at: float = 0.0
    totals: RunningTotals = field(default_factory=RunningTotals)
    session: str | None = None  # the session it is part of (`run_start.meta.session_id`)


class Exchange:
    """One request and its answer through the proxy, recorded into its run as it goes."""

    def __init__(
        self,
        book: CaptureBook,
        run: CapturedRun,
        sent: float,
        estimated: int,
        api: ModelApi,
        messages: list[Any],
    ) -> None:
        self.book = book
        self.run = run
        self.api = api  # the wire format, which reads the answer
        self.codec = codec_for(api)
        self.messages = messages  # the request's whole conversation, in chat shape
        self.sent = sent  # `time.monotonic()` when the request went upstream
        self.estimated = estimated  # our estimate of the request's prompt tokens
        self.assembler = self.codec.assembler()
        self.whole: WireAnswer | None = None  # a non-streamed answer, read
        self.ttft_ms: float | None = None
        self.chunks = 0
        self.closed = False
        self.last_arrival: float | None = None

    def _emit(self, cls: Any, when: float, **fields: Any) -> None:
        self.run.recorder.emit(cls, turn=self.run.turn, at=self.book.utc(when), **fields)

    def chunk(self, data: dict[str, Any], arrived: float) -> None:
        """One streamed chunk (a decoded SSE `data:` payload) that reached the client, and
        when it arrived (`time.monotonic()`)."""
        if self.closed:
            return
        elapsed_ms = (arrived - self.sent) * 1000.0
        self.last_arrival = arrived
        with self.book.guard(self):
            run = self.run
            run.recorder.emit_chunk(
                turn=run.turn,
                at=self.book.utc(arrived),
                attempt=run.attempt,
                index=self.chunks,
                elapsed_ms=elapsed_ms,
                data=data,
            )
            self.chunks += 1
            self.assembler.add(data)
            if self.ttft_ms is None and self.assembler.saw_output:
                self.ttft_ms = elapsed_ms

    def completion(self, body: bytes, arrived: float) -> None:
        """A whole (non-streamed) answer with status 200, and when it arrived."""
        with self.book.guard(self):
            try:
                data = json.loads(body)
                if not isinstance(data, dict):
                    raise WireError("the answer is not a JSON object")
                self.whole = self.codec.answer_from_body(data)
            except (ValueError, WireError) as exc:
                why = f"the answer is not {self.codec.answer_noun}: {exc}"
                self.failed(200, why, arrived, "bad_response")
                return
            elapsed_ms = (arrived - self.sent) * 1000.0
            self._emit(
                ModelChunk,
                arrived,
                attempt=self.run.attempt,
                index=0,
                elapsed_ms=elapsed_ms,
                data=data,
            )
            self.chunks = 1
            self.last_arrival = arrived
            self.ttft_ms = elapsed_ms
            self.finish(arrived)

    @property
    def saw_finish(self) -> bool:
        """Whether a chunk carried a finish reason (chat) or the format's last event came:
        the answer is whole, even if the stream never says `[DONE]`."""
        return self.assembler.answered

    def finish(self, ended: float) -> None:
        """The answer arrived whole (at `ended`): record it, and end the run when it calls
        no tool."""
        with self.book.guard(self):
            try:
                response = self.whole or self.assembler.result()
            except WireError as exc:
                self.failed(200, str(exc), ended, exc.kind)
                return
            run, message = self.run, response.message
            ended = self.last_arrival or ended
            latency_ms = (ended - self.sent) * 1000.0
            self._emit(
                ModelResponse,
                ended,
                attempt=run.attempt,
                message=message,
                finish_reason=response.finish_reason,
                usage=response.usage,
                ttft_ms=self.ttft_ms,
                latency_ms=latency_ms,
                chunks=self.chunks,
            )
            self.closed = True
            # As the agent loop counts: the provider's usage where the answer carries it,
            # else our estimates of the prompt and of the answer.
            answer = estimate_message(message)
            run.totals.add_model_call(*usage_counts(response.usage, self.estimated, answer))
            run.conversation = [*run.last_request, *meaning([message])]
            run.answered_at = ended
            run.pending_calls = list(message.get("tool_calls") or [])
            answer_id = response.body.get("id")
            if self.codec.chains_answers and isinstance(answer_id, str):
                items = response.body.get("output")
                self.book.responses.remember(
                    answer_id,
                    run,
                    [*self.messages, message],
                    items if isinstance(items, list) else [],
                )
            at = self.book.utc(ended)
            provider = self.codec.provider_calls(response.body)
            if provider:
                failed = observed.record_provider_calls(run.recorder, run.turn, at, provider)
                run.totals.add_tool_calls(len(provider), failed)
            final = observed.final_answer(run.pending_calls)
            if final is not None:  # the client ends its run on this call
                observed.record_final_answer(run.recorder, run.turn, at, run.pending_calls, final)
                run.totals.add_tool_calls(len(run.pending_calls))
                run.pending_calls = []
                self.book.end(run, "completed", ended, final_answer=final)
            elif run.pending_calls:
                run.state = "waiting"
            else:
                self.book.end(run, "completed", ended, final_answer=response.content)
            self.book.resumable(run)

    def failed(self, status: int, message: str, when: float, kind: str = "status") -> None:
        """The upstream answered with an error (passed to the client unchanged) at `when`."""
        with self.book.guard(self):
            self._emit(
                Error,
                when,
                where="model",
                kind=kind,
                message=message,
                retriable=retriable_status(status),
                attempt=self.run.attempt,
                status_code=status if status >= 400 else None,
            )
            self.closed = True
            self.run.totals.add_model_call()
            self.run.state = "failed"
            self.book.resumable(self.run)

    def abandoned(self) -> None:
        """The client went away before the answer was whole: the run stays incomplete, and
        the proxy says so."""
        if not self.closed:
            self.closed = True
            self.book.forget(self.run, "abandoned")
            self.book.say(
                f"run {self.run.run_id} stays incomplete: the client went away before "
                f"the answer of turn {self.run.turn} was whole"
            )


class CaptureBook:
    """Every run the proxy is recording, and the rules that sort requests into them."""

    def __init__(
        self,
        home: Path,
        upstream: str,
        anthropic_upstream: str | None = None,
        *,
        on_cut: Callable[[str, str], None] | None = None,
    ) -> None:
        self.home = home
        # Told (the run's id, why) when a run's trace cannot be written whole; else said.
        self._on_cut = on_cut or (
            lambda run_id, why: self.say(
                f"the trace of run {run_id} could not be written whole ({why})"
            )
        )
        self.folder = traces_dir(home)
        self.upstream = upstream
        # What a trace may say of each vendor's upstream: Anthropic Messages go to their own
        # when there is one.
        self.publics = {
            "openai": public_url(upstream),
            "anthropic": public_url(anthropic_upstream or upstream),
        }
        self.upstream_secrets = [
            *url_credentials(upstream),
            *url_credentials(anthropic_upstream or ""),
        ]
        # Events are stamped with when they happened, though recorded a little later.
        self._clock = (time.monotonic(), utc_now())
        self.runs: OrderedDict[str, CapturedRun] = OrderedDict()
        self._forget_at = MAX_REMEMBERED_RUNS  # how many runs known make `_forget_old` look
        self.problems: list[str] = []
        # The runs a request may continue: failed, waiting for their client, or completed.
        self.conversations: ConversationIndex[CapturedRun] = ConversationIndex()
        # Responses API answers by id (which `previous_response_id` continues) and their
        # output items (which `item_reference` names).
        self.responses: ResponsesMemory[CapturedRun] = ResponsesMemory()

    def utc(self, when: float) -> datetime:
        """The UTC time of a `time.monotonic()` reading."""
        base, base_utc = self._clock
        return base_utc + timedelta(seconds=when - base)

    def guard(self, exchange: Exchange | None = None) -> _Guard:
        return _Guard(self, exchange)

    def begin(
        self,
        body: dict[str, Any],
        headers: dict[str, str],
        query: str,
        sent: float,
        api: ModelApi = "chat",
    ) -> Exchange | None:
        """Sort a request (its body in wire format `api`, headers with lower-case names,
        and query string) that went upstream at `sent` (`time.monotonic()`) into its run and
        record it; None when it cannot be recorded."""
        with self.guard():
            name = headers.get(RUN_HEADER) or None
            # Every credential the client sent (API key headers of any provider, key query
            # parameters) is a secret of its run: an upstream may echo it.
            secrets = [*credentials(headers, query), *self.upstream_secrets]
            codec = codec_for(api)
            read = self.responses.resolved(body) if codec.chains_answers else body
            messages, tools, params = codec.request_parts(read)
            if not all(isinstance(item, dict) for item in [*messages, *tools]):
                # Checked before any run is started for it; the upstream will say why.
                raise ValueError("its messages or tools are not all JSON objects")
            # Tool calls and results a client spells as text (smolagents) read as such; the
            # trace then keeps the body as it was sent beside them.
            spelled = text_protocol.tool_messages(messages) if codec.text_tool_clients else None
            messages = spelled if spelled is not None else messages
            fresh = messages  # what the request sends itself
            # A Responses request may send only what is new, after the answer it names.
            named = self.responses.answer(codec.previous_answer_id(read))
            if named is not None:
                messages = continued(named.messages, messages)
            estimated = estimate_prompt(messages, tools)
            said = meaning(messages)
            if named is not None and (name is None or named.run.name == name):
                found: CapturedRun | None = named.run
            else:
                named = None
                found = self.conversations.find(said, name)
            # A completed run is followed up by a run of its own; the others go on.
            completed = found is not None and found.state == "completed"
            run, follows = (None, found) if completed else (found, None)
            if run is not None:
                self.conversations.remove(run)
            if run is not None and run.state == "failed":
                run.attempt += 1
            elif run is not None and run.state == "waiting":
                new = messages[len(run.conversation) :] if named is None else fresh
                self._observe_results(run, new, sent)
                run.turn += 1
                run.attempt = 1
            elif run is not None:
                run = None  # answering still: a request that repeats it starts its own run
            if run is None:
                run = self._start(body, headers, name, follows, secrets, sent, api, messages)
            for secret in secrets:
                run.redactor.add_secret(secret)
            run.state = "answering"
            run.last_request = said
            run.recorder.emit(
                ModelRequest,
                turn=run.turn,
                at=self.utc(sent),
                attempt=run.attempt,
                messages=messages,
                tools=tools,
                params=params,
                stream=bool(body.get("stream")),
                estimated_tokens=estimated,
                api=api,
                body=body if codec.keeps_body or spelled is not None else None,
            )
            self.runs.move_to_end(run.run_id)
            return Exchange(self, run, sent, estimated, api, messages)
        return None

    def resumable(self, run: CapturedRun) -> None:
        """`run` now waits for its client, failed, or completed: index it for what comes."""
        if run.state == "failed":
            self.conversations.retries(run, run.last_request)
        else:
            self.conversations.extends(run, run.conversation)

    def _observe_results(self, run: CapturedRun, new_messages: list[Any], sent: float) -> None:
        """The client ran the last answer's tool calls; record the results it sends back."""
        waited_ms = (sent - run.answered_at) * 1000.0
        missing = observed.record_results(
            run.recorder, run.turn, self.utc(sent), run.pending_calls, new_messages, waited_ms
        )
        run.totals.add_tool_calls(len(run.pending_calls), missing)
        run.pending_calls = []

    def _start(
        self,
        body: dict[str, Any],
        headers: dict[str, str],
        name: str | None,
        parent: CapturedRun | None,
        secrets: list[str],
        sent: float,
        api: ModelApi,
        messages: list[Any],
    ) -> CapturedRun:
        """A new run for a request of `messages` (its whole conversation, in chat shape),
        following up `parent` when that is a completed run it continues."""
        _, tools, params = codec_for(api).request_parts(body)
        new = messages[len(parent.conversation) :] if parent else messages
        run_id = new_run_id()
        # The client's keys are secrets from the first line on (run_start holds the task).
        writer = open_run_trace(self.home, run_id, secrets)
        redactor = writer.redactor
        # Nobody drains this recorder: it must not keep the run's events.
        recorder = Recorder(
            run_id, [writer], outbox=False, on_sink_error=lambda why: self._on_cut(run_id, why)
        )
        run = CapturedRun(run_id, name, recorder, redactor, sent)
        # A follow-up is part of the session of the conversation it continues: its first
        # run's, unless the client names one.
        run.session = client_session(body, headers) or (
            (parent.session or parent.run_id) if parent else None
        )
        self.runs[run_id] = run
        tool_names = [
            str((tool.get("function") or {}).get("name"))
            for tool in tools
            if isinstance(tool, dict) and isinstance(tool.get("function"), dict)
        ]
        meta: dict[str, Any] = {}
        if name:
            meta["name"] = name
        if run.session:
            meta[SESSION_META] = run.session
        recorder.emit(
            RunStart,
            turn=None,
            at=self.utc(sent),
            task=task_text(new) or task_text(messages) or "",
            system_prompt=_first_text(messages, "system") or _first_text(messages, "developer"),
            model=str(body.get("model") or "unknown"),
            base_url=self.publics[codec_for(api).vendor],
            params=params,
            tools=tools,
            tool_sources={tool: observed.CLIENT_SOURCE for tool in tool_names},
            origin="captured",
            client=headers.get("user-agent"),
            parent_run_id=parent.run_id if parent else None,
            meta=meta,
        )
        self._forget_old()
        return run

    def end(
        self,
        run: CapturedRun,
        status: RunStatus,
        when: float,
        *,
        final_answer: str | None = None,
        reason: str = "",
    ) -> None:
        run.totals.turns = run.turn
        run.recorder.emit(
            RunEnd,
            turn=None,
            at=self.utc(when),
            status=status,
            reason=reason,
            final_answer=final_answer,
            totals=run.totals.totals((when - run.started) * 1000.0),
        )
        run.recorder.close()
        run.state = "completed" if status == "completed" else "ended"

    def forget(self, run: CapturedRun, state: RunState) -> None:
        """Stop recording a run without ending it (its trace stays `incomplete`)."""
        run.recorder.close()
        self.conversations.remove(run)
        run.state = state
        self.runs.pop(run.run_id, None)

    def close(self) -> None:
        """The proxy stops: runs still open end as cancelled."""
        for run in list(self.runs.values()):
            if run.state in ("answering", "waiting", "failed"):
                with self.guard():
                    self.end(run, "cancelled", time.monotonic(), reason="the proxy stopped")
        self.runs.clear()
        self.conversations.clear()

    def _forget_old(self) -> None:
        if len(self.runs) <= self._forget_at:
            return
        ended = [r for r in self.runs.values() if r.state in ("completed", "ended")]
        for run in ended[: max(0, len(ended) - MAX_REMEMBERED_RUNS)]:
            self.conversations.remove(run)
            self.runs.pop(run.run_id, None)
        self._forget_at = len(self.runs) + FORGET_EVERY

    def report(self, message: str) -> None:
        """A recording problem, said once however often it happens."""
        if message not in self.problems:
            self.problems.append(message)
            self.say(message)

    def say(self, message: str) -> None:
        print(f"workbench proxy: {message}", file=sys.stderr, flush=True)


class _Guard:
    """Recording failures are reported once and never reach the request being forwarded."""

    def __init__(self, book: CaptureBook, exchange: Exchange | None) -> None:
        self.book, self.exchange = book, exchange

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any
    ) -> bool:
        if exc is None or not isinstance(exc, Exception):
            return False
        detail = " ".join(str(exc).split())[:300]  # pydantic's messages span lines
        self.book.report(f"could not record an exchange: {type(exc).__name__}: {detail}")
        if self.exchange is not None and not self.exchange.closed:
            self.exchange.closed = True
            self.book.forget(self.exchange.run, "abandoned")
        return True


def _first_text(messages: list[Any], role: str) -> str | None:
    for message in messages:
        if isinstance(message, dict) and message.get("role") == role:
            return content_text(message.get("content"))
    return None

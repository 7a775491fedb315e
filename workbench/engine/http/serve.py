"""`workbench serve-model`: recorded runs (or a model script) as a model endpoint.

`ReplayResponder` answers each model request with the recorded answer of the turn whose
recorded request it matches, so any client, not only ours, can be replayed in its own
tests. A request of any wire format is matched by its chat-shape messages, tools and
parameters (as the trace keeps them), and answered with the recorded stream events or body
in the run's own format, which the server turns into the request's format when they
differ. A request and each recorded one are read as the same request at one level of
`workbench.engine.recording.replay.same_request`, both sides alike: `meaning` (tool-call arguments
as JSON values, fields sent with their default value equal to absent) or `exact` (field for
field). Several runs can be served at once: each request is answered from the run whose
turn it matches, the run's next turn first, and among runs that recorded the same request,
the one that answered it least often (so captures of the same task are served in turn). A
request that matches no turn gets HTTP 409 with a JSON body listing how it differs from the
closest recorded turn.

A long run is never held: the responder keeps a digest of each turn's request (read in one
pass) and reads a turn's answer from the trace when a request matches it
(`ReplaySource.turn_node`); a request that matches nothing is diffed against each turn's
request in another pass, one turn at a time.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_core.model.script import ScriptError
from agent_core.wire import chat_completions
from agent_core.wire.codecs import codec_for
from traces.events import ModelRequest
from workbench.engine.http.model_server import ModelServer, Reply, Responder, ScriptResponder
from workbench.engine.http.server import DEFAULT_MAX_REQUEST_BYTES, DEFAULT_READ_TIMEOUT_S
from workbench.engine.recording.replay.field_diff import FieldDiff, diff_values
from workbench.engine.recording.replay.same_request import MatchMode, request_view, view_digest
from workbench.engine.recording.replay.streamed import RecordedSource, ReplaySource
from workbench.engine.recording.runs.load import Recording

if TYPE_CHECKING:
    from workbench.engine.recording.running.service import ModelSettings

# How many differing fields are counted when looking for the closest turn to a mismatch.
_DIFF_LIMIT = 200


class ServeError(Exception):
    """The server cannot start; one line saying why."""


# What serve-model serves: recorded runs, streamed from their traces or already in memory.
Served = ReplaySource | Recording


def as_source(run: Served) -> ReplaySource:
    return RecordedSource(run) if isinstance(run, Recording) else run


@dataclass
class _Turn:
    source: ReplaySource
    run: int  # position of the recording among those served
    position: int  # position among the run's model turns
    number: int  # the turn's number in its run
    served: int = 0


class ReplayResponder:
    """Serves the recorded answers of one or more runs, one model turn per matching request."""

    def __init__(self, recordings: Served | Sequence[Served], mode: MatchMode = "meaning"):
        given = [recordings] if not isinstance(recordings, Sequence) else list(recordings)
        # Runs whose requests match are served in the order they were recorded, whatever
        # the order they were named in: two clients then get the answers in the order the
        # recorded clients did.
        sources = [as_source(run) for run in given]
        self.recordings = sorted(sources, key=lambda source: source.run_start.ts)
        self.mode = mode
        self._by_request: dict[bytes, list[_Turn]] = {}
        for run, source in enumerate(self.recordings):
            for position, (number, expected) in enumerate(self._expected(source)):
                turn = _Turn(source, run, position, number)
                self._by_request.setdefault(view_digest(expected), []).append(turn)
        self._next = [0] * len(self.recordings)  # per run: the position it expects next

    def _expected(self, source: ReplaySource) -> Iterator[tuple[int, Any]]:
        """Each model turn of `source` and its recorded request as this responder reads
        requests, a turn at a time."""
        for number, request in zip(source.model_turns, source.model_requests(), strict=True):
            yield number, request_view(self.mode, *recorded_parts(request))

    def __call__(self, body: dict[str, Any]) -> Reply:
        got = request_view(self.mode, *chat_completions.request_parts(body))
        matches = self._by_request.get(view_digest(got), [])
        if not matches:
            return self._mismatch(got)
        # Requests of one run come in order; a client may also start over or retry.
        turn = min(matches, key=lambda t: (self._next[t.run] != t.position, t.served, t.run))
        turn.served += 1
        self._next[turn.run] = turn.position + 1
        return self._answer(turn)

    def _mismatch(self, got: Any) -> Reply:
        closest: tuple[str, int] | None = None
        diffs: list[FieldDiff] = []
        for source in self.recordings:
            for turn, expected in self._expected(source):
                found = diff_values(expected, got, limit=_DIFF_LIMIT)
                if closest is None or len(found) < len(diffs):
                    closest, diffs = (source.run_id, turn), found
        run_id, number = closest or (None, None)
        if closest is None:
            message = "no recorded model turn to replay"
        else:
            # Views that differ differ in a field: the diff reads the views the match read.
            first = diffs[0].path if diffs else "its encoding"
            message = (
                f"request matches no recorded turn; closest is turn {number} of run {run_id}: "
                f"first difference at {first}"
            )
        body = {
            "error": {
                "message": message,
                "type": "replay_mismatch",
                "run_id": run_id,
                "turn": number,
                "diffs": [diff.to_json() for diff in diffs],
            }
        }
        # The OpenAI SDK retries 409 unless told not to; a mismatch will not go away.
        return Reply(status=409, body=body, headers={"x-should-retry": "false"})

    def _answer(self, turn: _Turn) -> Reply:
        record = turn.source.turn_node(turn.number)
        response = record.response
        if response is None:
            error = record.model_errors[-1] if record.model_errors else None
            message = error.message if error else "the recording has no answer for this turn"
            return Reply(
                status=(error.status_code if error and error.status_code else 500),
                body={"error": {"message": message, "type": "recorded_error"}},
                headers={"x-should-retry": "false"},
            )
        recorded = [chunk.data for chunk in record.chunks.get(response.attempt, [])]
        api = record.request.api if record.request is not None else "chat"
        # As it was answered: the recorded events, or the one body of a whole answer; the
        # server fits it to what the request asks (`model_server.fit_reply`).
        if len(recorded) == 1 and codec_for(api).is_whole(recorded[0]):
            return Reply(body=recorded[0], api=api)
        return Reply(chunks=list(recorded), api=api, done=codec_for(api).done_line)


def recorded_parts(request: ModelRequest) -> tuple[list[Any], list[Any], dict[str, Any]]:
    """A recorded request's messages, tools and parameters as a request that comes in is
    read: from its wire body when the trace keeps one (what the client sent, read by the
    same codec), else as the trace has them (chat completions)."""
    if request.body is not None:
        return codec_for(request.api).request_parts(request.body)
    return request.messages, request.tools, request.params


def responder_for(
    source: Sequence[Served] | Path, mode: MatchMode = "meaning"
) -> tuple[Responder, list[str]]:
    """The responder and the model names to serve, for recordings or a script file."""
    if not isinstance(source, Path):
        for recording in source:
            if not recording.model_turns:
                raise ServeError(f"run {recording.run_id} has no model turn to serve")
        models = list(dict.fromkeys(r.run_start.model for r in source))
        return ReplayResponder(source, mode), models
    try:
        responder = ScriptResponder.from_file(source)
    except ScriptError as exc:
        raise ServeError(str(exc)) from None
    return responder, [responder.model]


def model_server(
    source: Sequence[Served] | Path,
    *,
    mode: MatchMode = "meaning",
    host: str = "127.0.0.1",
    port: int = 0,
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
    read_timeout_s: float = DEFAULT_READ_TIMEOUT_S,
) -> ModelServer:
    """The server of `workbench serve-model`, bound and not yet serving (`serve_forever()`).
    Requests are answered and forgotten: the server keeps no request bodies."""
    responder, models = responder_for(source, mode)
    try:
        return ModelServer(
            responder,
            host=host,
            port=port,
            model=models,
            keep_requests=False,
            max_request_bytes=max_request_bytes,
            read_timeout_s=read_timeout_s,
        )
    except OSError as exc:
        raise ServeError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def replay_server(
    runs: list[str | Path],
    home: Path,
    *,
    name: str | None = None,
    mode: MatchMode = "meaning",
) -> ModelServer:
    """A started server replaying `runs` (ids, prefixes or paths) and every run named `name`,
    in a background thread; `close()` stops it. Raises ServeError with one line."""
    responder, models = responder_for(replayed_runs(runs, home, name=name), mode)
    return ModelServer(responder, model=models, keep_requests=False).start()


def replayed_runs(
    runs: Sequence[str | Path], home: Path, *, name: str | None = None
) -> list[ReplaySource]:
    """`runs` (ids, prefixes or paths) and every run named `name`, each streamed from its
    trace (checked in one pass, never held whole), or from the home's store a page at a time
    when only the store holds it. Raises ServeError with one line."""
    from workbench.engine.recording.replay.stored import replay_source
    from workbench.engine.recording.replay.streamed import streamed_source
    from workbench.engine.recording.runs.load import RecordingError, traces_named

    try:
        sources = [replay_source(ref, home) for ref in runs]
        named = [streamed_source(path) for path in traces_named(name, home)] if name else []
        sources += sorted(named, key=lambda source: source.run_start.ts)  # oldest first
    except RecordingError as exc:
        raise ServeError(str(exc)) from None
    if not sources:
        raise ServeError("nothing to replay: name a run or a run name")
    return sources


@contextmanager
def served_model(recordings: Sequence[Served]) -> Iterator[ModelSettings]:
    """serve-model over `recordings` (`meaning` match) on a free local port, for as long as
    the block runs, as the settings of a model that talks to it: `workbench why`'s model
    when none is configured."""
    from workbench.engine.recording.running.service import ModelSettings

    responder, models = responder_for(recordings)
    server = ModelServer(responder, model=models, keep_requests=False).start()
    try:
        yield ModelSettings(base_url=server.base_url, model=models[0], api_key="serve-model")
    finally:
        server.close()

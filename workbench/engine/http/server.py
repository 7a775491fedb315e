"""What the OpenAI-compatible servers (`serve-model`, `proxy`) share on top of the runner.

They run on `workbench.engine.serving.HttpServer` (binding, serving, SIGTERM and Ctrl-C, the
request limits), named here too for their imports. `read_json_object` reads a request body
the same way for both: a size limit answered with 413, and 400 for a body that is not UTF-8,
not JSON, nested too deeply or not an object, always as an OpenAI-style JSON error, never a
traceback.
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web
from pydantic_core import from_json

from workbench.engine.serving import DEFAULT_MAX_REQUEST_BYTES as DEFAULT_MAX_REQUEST_BYTES
from workbench.engine.serving import DEFAULT_READ_TIMEOUT_S as DEFAULT_READ_TIMEOUT_S
from workbench.engine.serving import HttpServer as HttpServer
from workbench.engine.serving import HttpService as HttpService
from workbench.engine.serving import too_large


class RequestProblem(Exception):
    """A request the server answers with an error status and one line saying why."""

    def __init__(self, status: int, message: str, kind: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind

    def response(self) -> web.Response:
        return error_response(self.status, str(self), self.kind)


def error_response(
    status: int, message: str, kind: str, headers: dict[str, str] | None = None
) -> web.Response:
    """An error in the shape OpenAI clients read (`error.message`, `error.type`)."""
    body = {"error": {"message": message, "type": kind}}
    return web.json_response(body, status=status, headers=headers)


async def read_json_object(request: web.Request, limit: int) -> dict[str, Any]:
    """The request body as a JSON object; raises `RequestProblem` (413 or 400) otherwise."""
    return parse_json_object(await read_body(request, limit))


async def read_body(request: web.Request, limit: int) -> bytes:
    """The request body, at most `limit` bytes; raises `RequestProblem` (413) when larger."""
    too_big = too_large(limit)
    if request.content_length is not None and request.content_length > limit:
        raise RequestProblem(413, too_big, "request_too_large")
    try:
        return await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise RequestProblem(413, too_big, "request_too_large") from None


def fast_json(raw: bytes) -> Any:
    """`raw` read by pydantic's parser (Rust: five times as fast as `json` on a long
    history, which the proxy reads for every request it forwards and records); None where
    it refuses it (a lone surrogate, nesting past its limit, no JSON at all), which `json`
    then reads as before, for the same verdict and the same words. Where it reads a body,
    `json` reads the same value from it."""
    try:
        return from_json(raw)
    except ValueError:
        return None


def parse_json_object(raw: bytes) -> dict[str, Any]:
    fast = fast_json(raw)
    if isinstance(fast, dict):
        return fast
    try:
        body = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise RequestProblem(400, f"request body is not valid UTF-8 ({exc.reason})") from None
    except RecursionError:
        raise RequestProblem(400, "request body nests too deeply to read") from None
    except ValueError as exc:
        raise RequestProblem(400, f"request body is not valid JSON: {exc}") from None
    if not isinstance(body, dict):
        raise RequestProblem(400, "request body is not a JSON object")
    return body

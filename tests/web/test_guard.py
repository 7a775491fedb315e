"""`workbench web` lets in the browser that opened the printed URL and no one else: the
token becomes a cookie, the page's WebSocket drives a read-only TUI on the home; a wrong
or missing token, a foreign Host (DNS rebinding) and a WebSocket from another origin are
refused before textual-serve sees them, and start no TUI."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest

from tests.support.demo import demo_runs
from tests.support.processes import WAIT_S, workbench_at
from tests.web.served import TOKEN, Served, screen_until, served, socket_url

pytestmark = pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads /proc")


@pytest.fixture(scope="module")
def web(demo_home: Path) -> Iterator[Served]:
    with served(demo_home) as server:
        yield server


async def test_the_printed_url_lets_a_browser_in_and_its_keys_drive_the_tui(
    web: Served, demo_home: Path
) -> None:
    async with aiohttp.ClientSession() as client:
        async with client.get(web.url, allow_redirects=False) as first:
            assert first.status == 303
            assert first.headers["Location"] == "/"  # the token leaves the address bar
            cookie = first.headers["Set-Cookie"]
            assert f"workbench-web-{web.port}={TOKEN}" in cookie
            assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
        async with client.get(f"{web.origin}/", headers=web.cookie) as page:
            assert page.status == 200
            assert "agent workbench" in await page.text()
            assert page.headers["X-Frame-Options"] == "DENY"
            policy = page.headers["Content-Security-Policy"]
            assert "default-src 'self'" in policy and "frame-ancestors 'none'" in policy
        headers = web.cookie | {"Origin": web.origin}
        async with client.ws_connect(socket_url(web), headers=headers) as ws:
            run_ids = [run_id[:8].encode() for run_id in demo_runs(demo_home).values()]
            await screen_until(ws, *run_ids, b"served read-only")
            await ws.send_str(json.dumps(["stdin", "?"]))
            await screen_until(ws, b"Command palette")  # the help screen
            await ws.send_str(json.dumps(["stdin", "\x03"]))  # ctrl+c quits: the session ends
            async with asyncio.timeout(WAIT_S):
                while not ws.closed:
                    await ws.receive()


REFUSED = {
    "no token": ("/", {}, 403),
    "a wrong token": ("/?token=guessed", {}, 403),
    "a wrong cookie": ("/", {"Cookie": "workbench-web-{port}=guessed"}, 403),
    "static files without the token": ("/static/js/textual.js", {}, 403),
    "a foreign Host with the token": ("/?token=" + TOKEN, {"Host": "attacker.example"}, 421),
    "a rebound Host with the cookie": ("/", {"Host": "attacker.example:{port}", "Cookie": ""}, 421),
}


@pytest.mark.parametrize("case", REFUSED, ids=list(REFUSED))
async def test_requests_without_the_token_or_for_another_host_are_refused(
    web: Served, case: str
) -> None:
    path, headers, status = REFUSED[case]
    sent = {
        name: value.format(port=web.port) for name, value in headers.items() if name != "Cookie"
    }
    if "Cookie" in headers:
        sent["Cookie"] = headers["Cookie"].format(port=web.port) or web.cookie["Cookie"]
    async with (
        aiohttp.ClientSession() as client,
        client.get(web.origin + path, headers=sent, allow_redirects=False) as answer,
    ):
        assert answer.status == status
        assert "Set-Cookie" not in answer.headers
        line = await answer.text()
        assert line.count("\n") == 1 and TOKEN not in line


SOCKETS = {
    "another site's page": lambda web: web.cookie | {"Origin": "http://attacker.example"},
    "the same host on another port": lambda web: (
        web.cookie | {"Origin": f"http://127.0.0.1:{web.port + 1}"}
    ),
    "no Origin": lambda web: web.cookie,
    "no token": lambda web: {"Origin": web.origin},
}


@pytest.mark.parametrize("case", SOCKETS, ids=list(SOCKETS))
async def test_a_websocket_from_elsewhere_is_refused_and_starts_no_tui(
    web: Served, case: str
) -> None:
    before = web.apps()
    async with aiohttp.ClientSession() as client:
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await client.ws_connect(socket_url(web), headers=SOCKETS[case](web))
    assert refused.value.status == 403
    assert web.apps() == before


def test_a_host_other_machines_reach_needs_the_url_they_use(demo_home: Path) -> None:
    done = workbench_at(demo_home, "web", "--host", "0.0.0.0")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "--url" in done.stderr, done.stderr


def test_a_port_in_use_is_one_line(web: Served, demo_home: Path) -> None:
    done = workbench_at(demo_home, "web", "--port", str(web.port))
    assert done.returncode == 2
    assert done.stderr.startswith("workbench: cannot listen on 127.0.0.1:"), done.stderr
    assert done.stderr.count("\n") == 1


@pytest.mark.parametrize("token", ["", "two words", "semi;colon"])
def test_a_token_that_cannot_travel_in_a_url_and_a_cookie_is_one_line(
    demo_home: Path, token: str
) -> None:
    done = workbench_at(demo_home, "web", "--token", token)
    assert done.returncode == 2
    assert done.stderr.startswith("workbench: --token") and done.stderr.count("\n") == 1

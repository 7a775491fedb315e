"""Ctrl-C (to the process group, as a terminal sends it) or SIGTERM stops `workbench web`
with a browser's TUI open, every core kept busy: one line `stopped`, exit 0, nothing on
stderr, and the TUI it ran is gone with it. With --allow-writes the TUI it serves is not
read-only."""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path

import aiohttp
import pytest

from tests.support.busy import busy_cores
from tests.support.demo import demo_run
from tests.support.processes import WAIT_S
from tests.web.served import screen_until, served, socket_url

pytestmark = pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads /proc")


def gone(pid: int) -> bool:
    """Whether the process has ended (a zombie its parent has not reaped counts)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state == "Z"


@pytest.mark.parametrize(
    ("stop", "flags"),
    [("ctrl-c to the group", ()), ("sigterm", ("--allow-writes",))],
    ids=["ctrl-c to the group, read-only", "sigterm, writes allowed"],
)
async def test_a_stop_with_a_session_open_is_one_line_and_ends_its_tui(
    demo_home: Path, stop: str, flags: tuple[str, ...]
) -> None:
    with busy_cores(), served(demo_home, *flags) as web:
        headers = web.cookie | {"Origin": web.origin}
        async with (
            aiohttp.ClientSession() as client,
            client.ws_connect(socket_url(web), headers=headers) as ws,
        ):
            screen = await screen_until(ws, demo_run(demo_home, "completed")[:8].encode())
            await ws.send_str(json.dumps(["stdin", "?"]))
            screen += await screen_until(ws, b"Command palette")
            assert (b"served read-only" in screen) is not flags
            (app,) = web.apps()
            if stop == "sigterm":
                web.process.send_signal(signal.SIGTERM)
            else:
                web.ctrl_c()
            async with asyncio.timeout(WAIT_S):  # as a browser does: it answers the close
                while not ws.closed:
                    await ws.receive()
            assert web.process.wait(timeout=WAIT_S) == 0
        assert web.out.all() == [web.out.seen[0], "stopped"]
        assert web.err.all() == []
        # Ended before the server exited (else nothing would be left to end it).
        assert gone(app)

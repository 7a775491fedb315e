"""`workbench proxy --workers N`: N processes forward on one port, one records for all.

Every exchange is recorded once, and a conversation whose turns reach different processes
(each turn on a connection of its own) is still one chain of runs: the recording process
records the processes' messages in the order they were sent. Stopping holds as for one
process: Ctrl-C to the process group records everything before the proxy exits 0, and a
second Ctrl-C stops at once and says what was not recorded. Every core is kept busy.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import openai
import pytest
from openai.types.chat import ChatCompletionMessageParam

from tests.engine.capture_support import runs
from tests.engine.test_proxy_stop import (
    answer_each_on_its_own,
    completed_runs,
    proxy_in_terminal,
    resume,
)
from tests.support.processes import WAIT_S
from workbench.engine.http.fleet import Merge
from workbench.engine.http.recording_messages import Message, Piece, WentUp

pytestmark = pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads /proc")

WORKERS = 3
CHAINS, TURNS = 8, 6
EXCHANGES = 12


def workers_of(proxy: int) -> list[int]:
    """The pids of the proxy's worker processes."""
    found = []
    for task in Path(f"/proc/{proxy}/task").iterdir():
        for child in (task / "children").read_text().split():
            if b"worker_main" in Path(f"/proc/{child}/cmdline").read_bytes():
                found.append(int(child))
    return found


def listens_on(pid: int, port: int) -> bool:
    """Whether process `pid` holds a socket listening on `port` (/proc/net/tcp's state 0A)."""
    inodes = set()
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(fields[9])
    held = {os.readlink(fd) for fd in Path(f"/proc/{pid}/fd").iterdir()}
    return any(f"socket:[{inode}]" in held for inode in inodes)


def written_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("wchar:"):
            return int(line.split()[1])
    raise AssertionError(f"no wchar for {pid}")


def ask(url: str, messages: list[ChatCompletionMessageParam], stream: bool) -> str:
    """One turn on a connection of its own (so the kernel may give it to any process)."""
    with openai.OpenAI(base_url=url, api_key="k", max_retries=0, timeout=WAIT_S) as client:
        if stream:
            chunks = client.chat.completions.create(model="m", messages=messages, stream=True)
            return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        answer = client.chat.completions.create(model="m", messages=messages)
        return answer.choices[0].message.content or ""


def test_every_exchange_is_recorded_once_and_conversations_stay_chains(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with proxy_in_terminal(home, held=False, workers=WORKERS) as proxy:
        workers = workers_of(proxy.process.pid)
        # Said ready only once every worker listens: none is left out of the first turns.
        assert len(workers) == WORKERS - 1
        port = int(proxy.url.rsplit(":", 1)[1].split("/")[0])
        assert all(listens_on(pid, port) for pid in workers), workers
        before = {pid: written_bytes(pid) for pid in workers}

        def converse(chain: int) -> None:
            said: list[ChatCompletionMessageParam] = []
            for turn in range(TURNS):
                said.append({"role": "user", "content": f"chain {chain} turn {turn}"})
                text = ask(proxy.url, said, stream=bool((chain + turn) % 2))
                said.append({"role": "assistant", "content": text})

        threads = [threading.Thread(target=converse, args=(c,)) for c in range(CHAINS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        forwarded = {pid: written_bytes(pid) - before[pid] for pid in workers}
        proxy.ctrl_c()
        code = proxy.exit_code()
        err = proxy.err.all()
    assert code == 0 and not any("Traceback" in line for line in err), err
    # Each worker answered some of the 48 connections (it wrote to their sockets).
    assert all(count > 10_000 for count in forwarded.values()), forwarded
    recorded = runs(home)
    assert len(recorded) == CHAINS * TURNS
    assert all(events[-1]["type"] == "run_end" for events in recorded)
    for c in range(CHAINS):
        mine = [e for e in recorded if e[1]["messages"][0]["content"] == f"chain {c} turn 0"]
        parents = {events[0]["run_id"]: events[0]["parent_run_id"] for events in mine}
        in_a_row = [run for run, parent in parents.items() if parent is None]
        assert len(in_a_row) == 1, f"chain {c}: {len(in_a_row)} runs without a parent"
        while children := [run for run, parent in parents.items() if parent == in_a_row[-1]]:
            assert len(children) == 1, f"chain {c}: a run followed up twice"
            in_a_row += children
        assert len(in_a_row) == TURNS, f"chain {c}: {len(in_a_row)} runs in a row, not {TURNS}"


def test_ctrl_c_to_the_group_records_every_workers_exchange_before_exit(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with proxy_in_terminal(home, held=True, workers=WORKERS) as proxy:
        answer_each_on_its_own(proxy.url)
        proxy.ctrl_c()
        queued = proxy.err.wait_for(lambda line: "still queued" in line)
        resume(proxy.recorder)
        code = proxy.exit_code()
        err = proxy.err.all()
    assert queued == (
        f"workbench proxy: recording {EXCHANGES} exchanges still queued… "
        "(Ctrl-C again stops without them)"
    ), err
    assert err[-1] == f"workbench proxy: done: {EXCHANGES} exchanges recorded", err
    assert code == 0 and not any("Traceback" in line for line in err), err
    assert proxy.out.all()[-1] == "stopped"
    assert completed_runs(home) == EXCHANGES


def _sent(key: int) -> Message:
    return WentUp(key, float(key))


def test_merge_hands_on_a_message_only_once_no_sender_can_send_one_before_it() -> None:
    merge = Merge([0, 1])
    # Sender 1 is busy (not idle) and has said nothing past 1.0: sender 0's message of 2.0
    # waits for it.
    merge.add(1, 1.0, False, [], [])
    merge.add(0, 2.5, False, [2.0], [_sent(2)])
    assert merge.release() == []
    merge.add(1, 3.0, False, [1.5, 2.9], [_sent(1), _sent(3)])
    assert merge.release() == [_sent(1), _sent(2)]  # 3 waits: sender 0 may send up to 3.0
    merge.add(0, 4.0, True, [], [])  # idle: nothing more to wait for from it
    assert merge.release() == [_sent(3)]
    # A frame half read from a sender said idle: wait for the rest of it.
    merge.partial(0, True)
    merge.add(1, 5.0, False, [4.5], [_sent(4)])
    assert merge.release() == []
    merge.partial(0, False)
    assert merge.release() == [_sent(4)]
    merge.ended(0)
    merge.ended(1)
    assert merge.done


def test_merge_counts_what_a_sender_has_waiting_for_the_others() -> None:
    """What waits for a slower sender is counted, so that the recording process stops
    reading the sender that is ahead (its pipe fills, and it waits) past a bound."""
    merge = Merge([0, 1])
    merge.add(1, 1.0, False, [], [])
    merge.add(0, 2.5, False, [2.0, 2.1], [Piece(2, 2.0, b"x" * 1000), _sent(2)])
    assert merge.release() == []
    assert (merge.held(0), merge.held(1)) == (1000, 0)
    merge.add(1, 3.0, True, [], [])
    assert len(merge.release()) == 2
    assert merge.held(0) == 0

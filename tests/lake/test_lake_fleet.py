"""A team's fleet writing into one lake at once, each writer a process of its own, while a
reader lists the lake's runs: a proxy recording 50 concurrent streams with `--push`, a
loop of `workbench run --push`, and an import of a bundle then `push --all`. Every run
reaches the lake once: none lost, none doubled, at any moment the reader looked."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
from pathlib import Path

import openai
import pytest

from tests.lake.test_lake_reads import cli, ok
from tests.support.processes import WAIT_S, WORKBENCH, Lines, killed_after, workbench_process
from tests.support.servers import Sequence, text_chunks
from workbench.engine.http.model_server import ModelServer, Reply

pytestmark = pytest.mark.lake

STREAMS = 50
RUN_LOOP = 4


async def _streams(base_url: str) -> None:
    """STREAMS conversations at once, each read to its end (each a completed run)."""
    client = openai.AsyncOpenAI(base_url=base_url, api_key="k", max_retries=0)

    async def one(number: int) -> None:
        stream = await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": f"q{number}"}], stream=True
        )
        async for _ in stream:
            pass

    await asyncio.wait_for(asyncio.gather(*(one(n) for n in range(STREAMS))), WAIT_S)
    await client.close()


def _home(path: Path) -> Path:
    (path / "traces").mkdir(parents=True)
    return path


def _listed(home: Path, lake_url: str) -> list[str]:
    code, out, err = cli(home, "runs", "--json", "--samples", "--limit", "1000", "--lake", lake_url)
    if code != 0:
        assert "there is no lake at" in err, err  # before the first push made it
        return []
    return [row["run_id"] for row in json.loads(out)]


def _local(home: Path) -> set[str]:
    return {row["run_id"] for row in json.loads(ok(home, "runs", "--json", "--samples",
                                                   "--limit", "1000"))}  # fmt: skip


def test_three_writers_and_a_reader_on_one_lake(
    demo_home: Path, lake_url: str, tmp_path: Path
) -> None:
    proxy_home, loop_home, import_home = (_home(tmp_path / n) for n in ("proxy", "loop", "imp"))
    bundle = tmp_path / "demo.wbbundle"
    ok(demo_home, "bundle", "-o", str(bundle), *sorted(_local(demo_home)))
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"name": "fleet", "steps": [{"content": "Done."}]}))
    run_loop = "; ".join(
        f'"{WORKBENCH}" --home "{loop_home}" run "task {n}" --script "{script}" '
        f'--root "{tmp_path}" --push --lake "{lake_url}" || exit 1'
        for n in range(RUN_LOOP)
    )
    importing = (
        f'"{WORKBENCH}" --home "{import_home}" import bundle "{bundle}" && '
        f'"{WORKBENCH}" --home "{import_home}" push --all --lake "{lake_url}"'
    )
    answer = Reply(chunks=text_chunks("Fine, thanks."))
    with ModelServer(Sequence(answer)) as upstream:
        proxy = workbench_process(
            "--home", str(proxy_home), "proxy", "--upstream", upstream.base_url, "--push",
            "--lake", lake_url,
        )  # fmt: skip
        with killed_after(proxy):
            said = Lines(proxy.stdout)  # type: ignore[arg-type]
            ready = said.wait_for(lambda line: line.startswith("proxying "))
            assert ready is not None, proxy.stderr.read() if proxy.stderr else ""
            base_url = ready.split()[1]
            writers = [
                subprocess.Popen(["bash", "-c", command], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
                for command in (run_loop, importing)
            ]  # fmt: skip
            asyncio.run(_streams(base_url))
            looks = 0
            # The reader: every listing while the writers write holds each run once.
            while any(writer.poll() is None for writer in writers) or looks < 2:
                listed = _listed(demo_home, lake_url)
                assert len(listed) == len(set(listed)), "a run listed twice"
                looks += 1
            for writer in writers:
                _, err = writer.communicate(timeout=WAIT_S)
                assert writer.returncode == 0, err
            os.kill(proxy.pid, signal.SIGTERM)  # its last runs are pushed as it stops
            proxy.wait(timeout=WAIT_S)
            errors = proxy.stderr.read() if proxy.stderr else ""
            assert proxy.returncode == 0, errors
    wanted = _local(proxy_home) | _local(loop_home) | _local(import_home)
    assert len(_local(proxy_home)) == STREAMS and len(_local(loop_home)) == RUN_LOOP
    listed = _listed(demo_home, lake_url)
    assert sorted(listed) == sorted(wanted)
    count = "SELECT count(*), count(DISTINCT (run_id, seq)) FROM events"
    total, distinct = json.loads(ok(demo_home, "sql", count, "--json", "--lake", lake_url))[
        0
    ].values()
    local = sum(
        int(ok(home, "sql", "SELECT count(*) FROM events").split()[1])
        for home in (proxy_home, loop_home, import_home)
    )
    assert total == distinct == local

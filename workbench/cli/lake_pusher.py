"""`--push` on the servers (`proxy`, `collect`): their runs end in the recording process,
at any time, so a thread of the command pushes the home's finished runs started since the
server did, whenever a trace changed, and once more as the server stops. Pushes are
idempotent (`traces.store.lake.push`), so a run is in the lake once, a few seconds after it
ended."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from traces.home import RedactionConfigError, db_path, home_redactor, traces_dir

if TYPE_CHECKING:
    from traces.store.lake import LakeConfig

# How often the traces folder is looked at for changed traces.
LOOK_EVERY_S = 3.0


class ServerPusher:
    """Pushes while a server runs; `stop` when it has stopped."""

    def __init__(self, config: LakeConfig, home: Path) -> None:
        self._config = config
        self._home = home
        # A margin: a run that started just before the server is still its own.
        self._since = datetime.now(UTC) - timedelta(seconds=5)
        self._stop = threading.Event()
        self._seen: dict[str, int] = {}
        self._said = ""
        self._thread = threading.Thread(target=self._loop, name="lake-push", daemon=True)
        self._thread.start()

    def _changed(self) -> bool:
        """Whether a trace was written since the last look (its size and time, by name)."""
        sizes: dict[str, int] = {}
        folder = traces_dir(self._home)
        if folder.is_dir():
            for path in folder.glob("*.jsonl"):
                try:
                    info = path.stat()
                except OSError:
                    continue
                sizes[path.name] = info.st_size ^ info.st_mtime_ns
        changed = sizes != self._seen
        self._seen = sizes
        return changed

    def _push(self) -> None:
        import sys

        from traces.store import StoreError, TraceStore

        try:
            with TraceStore.open(db_path(self._home), wait_s=30.0) as store:
                store.ingest_home(self._home)
                redactor = home_redactor(self._home)
                report = store.push(self._config, since=self._since, redactor=redactor)
        except (StoreError, RedactionConfigError) as exc:
            if str(exc) != self._said:  # said once, not every few seconds
                print(f"workbench: not pushed yet (runs stay in {self._home}): {exc}",
                      file=sys.stderr, flush=True)  # fmt: skip
                self._said = str(exc)
            self._seen = {}  # try again at the next look
            return
        self._said = ""
        if report.runs:
            from workbench.cli.lake_cmds import push_summary

            print(push_summary(report, self._config.label), file=sys.stderr, flush=True)

    def _loop(self) -> None:
        while not self._stop.wait(LOOK_EVERY_S):
            if self._changed():
                self._push()

    def stop(self) -> None:
        """Stop looking, then push what ended since the last push."""
        self._stop.set()
        self._thread.join()
        if self._changed() or self._said:
            self._push()


def pushing_while(config: LakeConfig | None, home: Path, serve: Callable[[], int]) -> int:
    """`serve()`, pushing its runs as they end when `config` names a lake (`--push`)."""
    if config is None:
        return serve()
    pusher = ServerPusher(config, home)
    try:
        return serve()
    finally:
        pusher.stop()

"""`TraceStore`: the DuckDB file that makes every recorded run queryable.

One connection per store; every call takes its own cursor, so worker threads (the TUI's)
can share the store. DuckDB lets one process write a database file at a time, so commands
open the store read-write only for as long as they ingest and query, then close it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from traces.home import ambiguous_run, annotations_dir, db_path, traces_dir
from traces.store import dataset, failures, notes, sessions, sql
from traces.store.dataset import DatasetExport
from traces.store.db import duckdb
from traces.store.failures import FailureGroups
from traces.store.opening import (
    AmbiguousRunError,
    QueryError,
    StoreError,
    StoreReadOnlyError,
    UnknownRunError,
    connect,
    first_line,
    open_error,
)
from traces.store.progress import Progress
from traces.store.run_filter import RunQuery
from traces.store.run_row import RunRow
from traces.store.scan import IngestReport, Work, pending, pending_in_folder
from traces.store.sessions import SessionRow

if TYPE_CHECKING:
    from traces.events import Event
    from traces.redact import Redactor
    from traces.store.lake.config import LakeConfig
    from traces.store.lake.push import PushReport


# A runs page this far down a listing is read from the listing's other end when that is
# nearer: an OFFSET sorts and skips every row before it (1.4 s for the last page of
# 1,000,000 runs).
_FAR_OFFSET = 10_000

# How long commands wait for another workbench process (an open TUI) to let go of the file.
LOCK_WAIT_S = 5.0


class TraceStore:
    def __init__(
        self,
        conn: duckdb.DuckDBPyConnection,
        path: Path,
        read_only: bool,
        catalog: str | None = None,
    ) -> None:
        self._conn = conn
        self.path = path
        self.read_only = read_only
        # Why a store opened by `for_reading` is read-only (a read-only disk or folder).
        self.read_only_reason: str | None = None
        self._catalog = catalog  # the store's database, when attached under this name
        # The lake's label when this reads a team's lake (`traces.store.lake`): nothing to
        # ingest, the home's traces are not its source.
        self.lake: str | None = None

    @classmethod
    def open(cls, db_path: Path | str, read_only: bool = False, wait_s: float = 0.0) -> TraceStore:
        """Open the database; while another process holds it (or is just making it, see
        `_being_created`), keep trying for `wait_s`.

        DuckDB lets one process at a time open a file. The TUI lets go of it whenever it
        is idle, so commands run beside it wait a moment instead of failing.
        """
        path = Path(db_path)
        conn = connect(path, read_only, wait_s)
        store = cls(conn, path, read_only)
        try:
            conn.execute("SET TimeZone = 'UTC'")
            if not read_only:
                store._ensure_schema()
        except duckdb.Error as exc:
            conn.close()
            raise open_error(path, exc) from None
        return store

    @classmethod
    def for_home(
        cls, home: Path, read_only: bool = False, wait_s: float = LOCK_WAIT_S
    ) -> TraceStore:
        """The home's store, or the lake when the process chose one (`--lake`)."""
        from traces.store.lake import chosen

        if (lake := chosen()) is not None:
            from traces.store.lake.config import for_home

            return cls.over_lake(for_home(home, lake or None))
        return cls.open(db_path(home), read_only=read_only, wait_s=wait_s)

    @classmethod
    def over_lake(cls, lake: LakeConfig) -> TraceStore:
        """The team's lake, read-only, through this store's own queries
        (`traces.store.lake.reading`); its `path` is the lake's label."""
        from traces.store.lake.reading import lake_connection

        store = cls(lake_connection(lake), Path(lake.label), read_only=True)
        store.lake = lake.label
        return store

    @classmethod
    def for_reading(cls, home: Path) -> TraceStore:
        """The home's store for a reader: read-write when it can be (new traces can then be
        ingested), else read-only as it is, with `read_only_reason` saying why. A
        `StoreError` when it cannot be written and there is no store to read either."""
        try:
            return cls.for_home(home)
        except StoreReadOnlyError as exc:
            if not db_path(home).is_file():
                raise StoreError(f"{exc}, and there is no store to read yet") from None
            store = cls.for_home(home, read_only=True)
            store.read_only_reason = str(exc)
            return store

    def _ensure_schema(self) -> None:
        with self._cursor() as cur:
            try:
                found = dict(cur.execute(sql.STORE_META_GET).fetchall())
            except duckdb.CatalogException:
                found = {}  # a new file
            outdated = any(found.get(key) != value for key, value in sql.STORE_META.items())
            if not outdated and found.get("schema_text") == sql.SCHEMA_TEXT:
                return  # made with this very schema: the common case, kept cheap
            if found and outdated:
                # The store is a cache of the traces: another layout or schema is rebuilt.
                cur.execute(sql.DROP_ALL)
            cur.execute(sql.SCHEMA)
            cur.execute(sql.SCHEMA_TEXT_SET, {"text": sql.SCHEMA_TEXT})

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> TraceStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @contextmanager
    def _cursor(self) -> Iterator[duckdb.DuckDBPyConnection]:
        cur = self._conn.cursor()
        try:
            cur.execute("SET TimeZone = 'UTC'")
            if self._catalog is not None:
                cur.execute(f"USE {self._catalog}")
            yield cur
        finally:
            cur.close()

    # --- ingest -------------------------------------------------------------------------

    def ingest(self, paths: Iterable[Path | str], progress: Progress | None = None) -> IngestReport:
        """Read what is new in the files named or found under the folders named, looking
        at every file's size (`scan.pending`); `progress` hears how far a long one is."""
        report = IngestReport()
        if self.lake is not None:
            raise StoreError(f"the lake {self.lake} is read here; `workbench push` adds to it")
        with self._writing(), self._cursor() as cur:
            return self._ingest(cur, pending(cur, paths, report), report, progress)

    def ingest_home(self, home: Path, progress: Progress | None = None) -> IngestReport:
        """Read what is new under the home's traces folder: the quick look every command
        takes (`scan.pending_in_folder`)."""
        folder = traces_dir(home)
        report = IngestReport()
        if self.lake is not None:
            return report  # the lake is filled by `workbench push`, not from this home
        with self._writing(), self._cursor() as cur:
            if folder.is_dir():
                work, listing = pending_in_folder(cur, folder, report)
                self._ingest(cur, work, report, progress)
                listing.record(cur)  # every file listed is in the store now
            if not self.read_only:  # the annotations of those runs: `traces.store.notes`
                notes.ingest_annotations(cur, annotations_dir(home), report)
            return report

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """Ingest's writes; a failure to write is one line, not DuckDB's exception."""
        try:
            yield
        except OSError as exc:
            # A full disk or a file size limit shows up as an IO error, or as a failed
            # COMMIT when the write-ahead log cannot grow; ingest keeps the batches
            # committed before it (`traces.store.ingest`).
            raise StoreError(
                f"could not write {self.path} ({first_line(exc)}); the traces read before "
                "are kept: if the disk is full or a file size limit applies, make room and "
                "try again"
            ) from None
        except duckdb.Error as exc:
            raise StoreError(f"could not ingest into {self.path} ({first_line(exc)})") from None

    def _ingest(
        self,
        cur: duckdb.DuckDBPyConnection,
        work: list[Work],
        report: IngestReport,
        progress: Progress | None,
    ) -> IngestReport:
        if self.read_only:
            raise StoreError(f"{self.path} is open read-only; cannot ingest")
        if not work:
            return report  # the common case: no event models, no pydantic
        from traces.store.ingest import ingest_work

        return ingest_work(cur, work, report, progress)

    # --- runs ---------------------------------------------------------------------------

    def runs(
        self,
        status: str | None = None,
        text: str | None = None,
        failed_only: bool = False,
        limit: int = 100,
        offset: int = 0,
        *,
        origins: Iterable[str] | None = None,
        run_ids: Iterable[str] | None = None,
        sort: str | None = None,
        descending: bool = True,
        where: RunQuery | None = None,
    ) -> list[RunRow]:
        """Runs newest first, or by `sort` (one of `sql.RUN_SORT_COLUMNS`); `origins` keeps
        those kinds of run (`run_start.origin`), `run_ids` only those runs; `where` is the
        whole filter instead (`run_filter.RunQuery`: model, time, thresholds, tool, ...)."""
        query = where or RunQuery.of(status, text, failed_only, origins, run_ids)
        clause, params = query.where()
        statement = sql.runs_select(clause, sort, descending)
        with self._cursor() as cur:
            if offset > _FAR_OFFSET:
                total = int((cur.execute(sql.runs_count(clause), params).fetchone() or (0,))[0])
                if offset > total // 2:
                    # Far down the list: read it from its other end, and turn the page round.
                    end = min(total, offset + limit)
                    page = {"limit": max(0, end - offset), "offset": total - end}
                    rows = cur.execute(
                        sql.runs_select(clause, sort, descending, reverse=True), params | page
                    )
                    return [RunRow(*row) for row in reversed(rows.fetchall())]
            rows = cur.execute(statement, params | {"limit": limit, "offset": offset})
            return [RunRow(*row) for row in rows.fetchall()]

    def count_runs(
        self,
        status: str | None = None,
        text: str | None = None,
        failed_only: bool = False,
        *,
        origins: Iterable[str] | None = None,
        run_ids: Iterable[str] | None = None,
        where: RunQuery | None = None,
    ) -> int:
        query = where or RunQuery.of(status, text, failed_only, origins, run_ids)
        clause, params = query.where()
        with self._cursor() as cur:
            row = cur.execute(sql.runs_count(clause), params)
            return int((row.fetchone() or (0,))[0])

    def failure_groups(
        self, where: RunQuery | None = None, examples: int = 3, limit: int = 50
    ) -> FailureGroups:
        """The failing runs `where` keeps (its failed filter set), grouped by failure
        signature, biggest groups first (`traces.store.failures`), `examples` runs each."""
        query = replace(where or RunQuery(samples=False), failed_only=True)
        clause, params = query.where()
        with self._cursor() as cur:
            return failures.failure_groups(cur, clause, params, examples, limit)

    def failure_signatures(self, run_ids: Iterable[str]) -> dict[str, str]:
        """Each of these runs that failed, with its failure signature (`failures`)."""
        clause, params = RunQuery(run_ids=tuple(run_ids), failed_only=True).where()
        with self._cursor() as cur:
            rows = cur.execute(failures.signatures_sql(clause), params).fetchall()
            return {str(run_id): str(signature) for run_id, signature in rows}

    def runs_before_of_task(self, run_ids: Iterable[str]) -> dict[str, str | None]:
        """For each run, the latest run of the same task started before it, or None."""
        with self._cursor() as cur:
            rows = cur.execute(failures.RUN_BEFORE_OF_TASK, {"run_ids": list(run_ids)})
            return {str(run_id): before for run_id, before in rows.fetchall()}

    def resolve_run(self, prefix: str) -> str:
        """The full run id that `prefix` starts; raises when none or several match."""
        prefix = prefix.strip()
        with self._cursor() as cur:
            exact = cur.execute(sql.RUN, {"run_id": prefix}).fetchone()
            if exact is not None:
                return prefix
            rows = cur.execute(sql.RUNS_BY_PREFIX, {"prefix": prefix}).fetchall()
            found: list[str] = [row[0] for row in rows]
        if not prefix or not found:
            raise UnknownRunError(f"no run id starts with '{prefix}'; `workbench runs` lists them")
        if len(found) > 1:
            raise AmbiguousRunError(ambiguous_run(prefix, found))
        return found[0]

    def run(self, run_id: str) -> RunRow:
        with self._cursor() as cur:
            row = cur.execute(sql.RUN, {"run_id": run_id}).fetchone()
        if row is None:
            raise UnknownRunError(f"no run {run_id}; `workbench runs` lists them")
        return RunRow(*row)

    # --- sessions (`traces.store.sessions`) ----------------------------------------------

    def sessions(self, session: str | None = None, limit: int = 100) -> list[SessionRow]:
        """Sessions, the latest started first; only `session` (a whole id) when given."""
        with self._cursor() as cur:
            return sessions.sessions(cur, session, limit)

    def resolve_session(self, prefix: str) -> str:
        """The session id that `prefix` names or starts; raises when none or several."""
        with self._cursor() as cur:
            return sessions.resolve_session(cur, prefix)

    # --- annotations (`traces.store.notes`) ----------------------------------------------

    def annotations(self, run_id: str | None = None) -> list[dict[str, Any]]:
        """The annotations that count on a run (every run's for None), oldest first."""
        with self._cursor() as cur:
            return notes.run_annotations(cur, run_id)

    # --- events -------------------------------------------------------------------------

    def events(
        self,
        run_id: str,
        offset: int = 0,
        limit: int | None = None,
        types: Iterable[str] | None = None,
        turn: int | None = None,
        turns: tuple[int, int] | None = None,
        sent: bool = True,
    ) -> list[Event]:
        """The run's events in seq order, typed; `offset`/`limit` page through them, and
        `types`/`turn` keep only those event types or that turn's events; `turns` (first,
        last) keeps those turns' events and the run's own (of no turn). `sent=False` reads
        the model requests without what they sent (their messages, tools and wire body are
        empty; most of a long run's bytes), for a read of when and which attempt each was
        (not with `limit`)."""
        params: dict[str, Any] = {
            "run_id": run_id,
            "offset": offset,
            "limit": limit,
            "types": list(types) if types is not None else None,
            "turn": turn,
            "turn_from": turns[0] if turns is not None else None,
            "turn_to": turns[1] if turns is not None else None,
        }
        with self._cursor() as cur:
            if limit is None:
                del params["limit"]
                statement = sql.EVENTS if sent else sql.EVENTS_UNSENT
            else:
                statement = sql.EVENTS_PAGE
                if offset > 0 and types is None and turn is None and turns is None:
                    span = cur.execute(sql.EVENT_SPAN, {"run_id": run_id}).fetchone()
                    count, lowest, highest = span or (0, None, None)
                    if lowest == 0 and highest == count - 1:
                        statement = sql.EVENTS_FROM_SEQ
                        params = {"run_id": run_id, "seq": offset, "limit": limit}
            rows = cur.execute(statement, params).fetchall()
        return self._typed(run_id, rows)

    def chain_events(self, run_id: str, turns: tuple[int, int] | None = None) -> list[Event]:
        """What the decision chains of turns `turns[0]` to `turns[1]` (None: every turn)
        are built of (`sql.CHAIN_EVENTS`: no request's messages, and no chunk but those
        that begin a model call)."""
        first, last = turns if turns is not None else (0, 2**31)
        params = {"run_id": run_id, "turn_from": first, "turn_to": last}
        with self._cursor() as cur:
            rows = cur.execute(sql.CHAIN_EVENTS, params).fetchall()
        return self._typed(run_id, rows)

    def first_failure(self, run_id: str) -> Event | None:
        """The run's first error, failed tool call or call with unparsable arguments, else
        its end when that is not `completed`; None when there is none."""
        with self._cursor() as cur:
            rows = cur.execute(sql.FIRST_FAILURE, {"run_id": run_id}).fetchall()
        found = self._typed(run_id, rows)
        return found[0] if found else None

    def _typed(self, run_id: str, rows: list[tuple[Any, ...]]) -> list[Event]:
        from pydantic import ValidationError

        from traces.reader import describe_validation_error, validate_line

        events: list[Event] = []
        for text, seq in rows:
            try:
                events.append(validate_line(text))
            except ValidationError as exc:
                # Ingest admits only lines the reader accepts; a store written by an older
                # workbench may still hold one it does not.
                raise StoreError(
                    f"event seq {seq} of run {run_id} in {self.path} does not read back "
                    f"({describe_validation_error(exc)}); move the store aside and run "
                    "`workbench ingest` again to rebuild it from the traces"
                ) from None
        return events

    def count_events(self, run_id: str) -> int:
        with self._cursor() as cur:
            row = cur.execute(sql.COUNT_EVENTS, {"run_id": run_id}).fetchone()
        return int((row or (0,))[0])

    def time_span(self, run_id: str) -> tuple[datetime, datetime] | None:
        """When the run's earliest and latest events happened; None for a run of none."""
        with self._cursor() as cur:
            row = cur.execute(sql.TIME_SPAN, {"run_id": run_id}).fetchone()
        if row is None or row[0] is None:
            return None
        return row[0], row[1]

    def turn_numbers(self, run_id: str) -> list[int]:
        """The run's turn numbers, in order (a fork's start at its fork turn)."""
        with self._cursor() as cur:
            rows = cur.execute(sql.TURN_NUMBERS, {"run_id": run_id}).fetchall()
        return [int(turn) for (turn,) in rows]

    # --- what a fork reads of its parent, by turn and by call ---------------------------

    def turns_with(self, run_id: str, types: Iterable[str]) -> list[int]:
        """The run's turns that hold an event of one of `types`, in order."""
        with self._cursor() as cur:
            rows = cur.execute(sql.TURNS_WITH, {"run_id": run_id, "types": list(types)})
            return [int(turn) for (turn,) in rows.fetchall()]

    def tool_call_events(self, run_id: str, call_ids: Iterable[str]) -> list[Event]:
        """The tool_start and tool_end events of the calls with these ids, in seq order."""
        params = {"run_id": run_id, "call_ids": list(call_ids)}
        with self._cursor() as cur:
            rows = cur.execute(sql.TOOL_CALL_EVENTS, params).fetchall()
        return self._typed(run_id, rows)

    def tool_arguments(self, run_id: str, name: str) -> list[tuple[int, str, Any]]:
        """Every call of tool `name` made in a turn, in order: its seq, call id and parsed
        arguments (None when they did not parse). No other part of the events is read."""
        with self._cursor() as cur:
            rows = cur.execute(sql.TOOL_ARGUMENTS, {"run_id": run_id, "name": name}).fetchall()
        return [
            (int(seq), str(call_id), json.loads(arguments) if arguments is not None else None)
            for seq, call_id, arguments in rows
        ]

    def tool_result_counts(self, run_id: str) -> dict[str, int]:
        """How many calls of each tool (made in a turn) have a recorded result."""
        with self._cursor() as cur:
            rows = cur.execute(sql.TOOL_RESULT_COUNTS, {"run_id": run_id}).fetchall()
        return {str(name): int(count) for name, count in rows}

    def turn_calls(self, run_id: str, turns: tuple[int, int]) -> list[tuple[int, int, list[str]]]:
        """Each of the turns from `turns[0]` to `turns[1]`, in order: its number, how many
        model calls it made (as `traces.tree` counts them) and the tools it called."""
        params = {"run_id": run_id, "turn_from": turns[0], "turn_to": turns[1]}
        with self._cursor() as cur:
            rows = cur.execute(sql.TURN_CALLS, params).fetchall()
        return [(int(turn), int(calls), [str(n) for n in names]) for turn, calls, names in rows]

    def tool_schemas(self, run_id: str) -> list[dict[str, Any]]:
        with self._cursor() as cur:
            rows = cur.execute(sql.TOOL_SCHEMAS, {"run_id": run_id}).fetchall()
        return [json.loads(row[0]) for row in rows]

    def turn_summaries(self, run_id: str) -> list[tuple[Any, ...]]:
        """One row per turn of the run, in turn order (see `sql.TURN_SUMMARIES`): turn,
        wall ms, responses, prompt, completion and estimated prompt tokens, tool calls
        asked for, started, ended, failed and with bad arguments, errors, last error kind."""
        with self._cursor() as cur:
            return list(cur.execute(sql.TURN_SUMMARIES, {"run_id": run_id}).fetchall())

    def run_tokens(self, run_ids: Iterable[str]) -> dict[str, tuple[int, int]]:
        """Input and output tokens per run (from run_end; a run without one is left out)."""
        with self._cursor() as cur:
            rows = cur.execute(sql.RUN_TOKENS, {"run_ids": list(run_ids)}).fetchall()
        return {row[0]: (int(row[1] or 0), int(row[2] or 0)) for row in rows}

    def search(
        self, text: str, run_id: str | None = None, limit: int = 100, context: int = 40
    ) -> list[tuple[str, int | None, int, str, str]]:
        """Fields of runs' events containing `text` (any case): run id, turn, seq, where
        (task, message, tool_arguments, tool_result, error, answer) and a snippet of about
        `context` characters either side of the first match, newest runs first."""
        params = {"text": text, "run_id": run_id, "limit": limit, "context": context}
        with self._cursor() as cur:
            rows = cur.execute(sql.SEARCH, params).fetchall()
        return [(row[0], row[1], int(row[2]), row[3], row[4]) for row in rows]

    def search_run(
        self, text: str, run_id: str, offset: int, limit: int, context: int = 40
    ) -> tuple[int, list[tuple[str, int | None, int, str, str]]]:
        """How many of a run's events contain `text` (any case), and a page of them from
        the `offset`th in seq order: one row per event, as `search` gives them."""
        params = {"text": text, "run_id": run_id}
        page = {**params, "offset": offset, "limit": limit, "context": context}
        with self._cursor() as cur:
            (total,) = cur.execute(sql.RUN_MATCH_COUNT, params).fetchone() or (0,)
            rows = cur.execute(sql.RUN_MATCHES, page).fetchall()
        return int(total), [(row[0], row[1], int(row[2]), row[3], row[4]) for row in rows]

    def query(
        self, statement: str, params: tuple[Any, ...] | list[Any] | dict[str, Any] = ()
    ) -> tuple[list[str], list[tuple[Any, ...]]]:
        """Run any SQL, with `?` parameters from a sequence or `$name` ones from a dict;
        returns the column names and the rows."""
        with self._cursor() as cur:
            try:
                result = cur.execute(
                    statement, params if isinstance(params, dict) else list(params)
                )
                if result.description is None:
                    return [], []
                columns = [column[0] for column in result.description]
                return columns, result.fetchall()
            except duckdb.Error as exc:
                raise QueryError(str(exc).splitlines()[0]) from None

    # --- the team's lake (`traces.store.lake`) ---------------------------------------------

    def push(
        self,
        lake: LakeConfig,
        run_ids: Iterable[str] | None = None,
        since: datetime | None = None,
        progress: Progress | None = None,
        batch_events: int | None = None,
        *,
        redactor: Redactor | None,
    ) -> PushReport:
        """Append this store's finished runs the lake lacks (`traces.store.lake.push`),
        redacted with `redactor`, the home's (`traces.home.home_redactor`), as a bundle is."""
        from traces.store.lake.push import BATCH_EVENTS, push

        batch = batch_events or BATCH_EVENTS
        with self._cursor() as cur:
            return push(cur, lake, run_ids, since, progress, batch, redactor)

    # --- Parquet datasets ---------------------------------------------------------------

    def export_dataset(self, dest: str) -> DatasetExport:
        """Append what the Parquet dataset at `dest` lacks (see `traces.store.dataset`)."""
        with self._cursor() as cur:
            try:
                return dataset.export_dataset(cur, dest)
            except duckdb.Error as exc:
                raise StoreError(f"cannot export to {dest}: {first_line(exc)}") from None

    @classmethod
    def beside_dataset(cls, db_path: Path | str, dest: str) -> TraceStore:
        """The store, read-only, with the Parquet dataset at `dest` queryable next to it as
        `dataset.runs` (each run's latest row), `dataset.run_rows` and `dataset.events`."""
        path = Path(db_path)
        if not path.exists():
            raise StoreError(f"{path} does not exist yet; run `workbench ingest` first")
        # A read-only connection cannot hold the dataset's views, so the store is attached
        # read-only to an in-memory database that holds them.
        conn = duckdb.connect()
        try:
            conn.execute(f"ATTACH '{_quoted(str(path))}' AS store (READ_ONLY)")
        except duckdb.Error as exc:
            conn.close()
            raise open_error(path, exc) from None
        store = cls(conn, path, read_only=True, catalog="store")
        try:
            with store._cursor() as cur:
                dataset.attach_dataset(cur, dest)
        except FileNotFoundError as exc:
            conn.close()
            raise StoreError(str(exc)) from None
        except duckdb.Error as exc:
            conn.close()
            raise StoreError(f"cannot read the dataset at {dest}: {first_line(exc)}") from None
        return store


def _quoted(text: str) -> str:
    return text.replace("'", "''")

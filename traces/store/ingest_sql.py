"""The SQL of ingest: set-based contract checks generated from the event models' required
fields, the two read paths, and the checks that run on each batch once its lines are in
`event_rows`.
"""

from __future__ import annotations

from traces.versions import SCHEMA_VERSION

ENVELOPE = ("run_id", "type", "seq", "ts", "turn", "schema_version")
# Each event type's required fields besides the envelope, in field order. The event models
# define them (tests/test_startup.py checks this copy against them); it is spelled out here
# because picking up a new run must not wait for pydantic to load the models.
REQUIRED: dict[str, list[str]] = {
    "run_start": ["task", "model"],
    "model_request": ["messages"],
    "model_chunk": ["index", "elapsed_ms", "data"],
    "model_response": ["message"],
    "tool_start": ["call_id", "name", "arguments_raw"],
    "tool_end": ["call_id", "name", "ok", "result"],
    "mcp_message": ["server", "direction", "frame"],
    "tools_changed": ["source"],
    "history_trimmed": [
        "tokens_before",
        "tokens_after",
        "messages_before",
        "messages_after",
        "rounds_kept",
        "rounds_dropped",
    ],
    "error": ["where", "kind", "message"],
    "run_end": ["status"],
}
# Required fields whose values are large JSON (message lists, raw chunks, frames) are checked
# as keys in the text, so their values are never copied out during ingest; their shape is
# checked when an event is read back through `EVENT_ADAPTER`.
_BULKY = frozenset({"messages", "data", "frame"})
# One JSON parse per line reads every other field a check needs into a struct `f`, as text
# (a check must tell a missing field from one of the wrong type). `from_json` walks the
# line's keys once, where a list of paths looks each one up in turn; a line that is not an
# object gives a struct of NULLs.
# `error` and `final_answer` are optional fields `search_text` reads.
FIELDS: list[str] = list(ENVELOPE) + sorted(
    {name for names in REQUIRED.values() for name in names} - _BULKY | {"error", "final_answer"}
)
EVENT_TYPE_NAMES = tuple(REQUIRED)


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _missing(name: str) -> str:
    if name in _BULKY:
        return f"NOT contains(raw::VARCHAR, {_quote(chr(34) + name + chr(34))})"
    return f'f."{name}" IS NULL'


def _required_checks() -> str:
    branches = []
    for event_type, names in REQUIRED.items():
        if not names:
            continue
        whens = " ".join(
            f"WHEN {_missing(name)} THEN {_quote(f'missing field {name!r}')}" for name in names
        )
        branches.append(f"WHEN {_quote(event_type)} THEN CASE {whens} END")
    return "CASE f.type " + " ".join(branches) + " END"


_TYPES_LIST = ", ".join(_quote(name) for name in EVENT_TYPE_NAMES)
_FIELDS_STRUCT = _quote("{" + ", ".join(f'"{name}": "VARCHAR"' for name in FIELDS) + "}")

# Why a line is refused, or NULL when it passes. `raw` is the line (NULL when it is not JSON
# at all), `f` the extracted fields, `seq`/`ts`/`turn` their typed values. Only a line
# without `type` can be a non-object, so only those lines pay for the copy `ltrim` makes.
PROBLEM_EXPR = f"""CASE
    WHEN raw IS NULL THEN 'not valid JSON'
    WHEN f.type IS NULL THEN CASE WHEN starts_with(ltrim(raw::VARCHAR), '{{')
        THEN 'missing field ''type''' ELSE 'not a JSON object' END
    WHEN f.type NOT IN ({_TYPES_LIST}) THEN 'unknown event type ''' || f.type || ''''
    WHEN f.run_id IS NULL THEN 'missing field ''run_id'''
    WHEN f.seq IS NULL THEN 'missing field ''seq'''
    WHEN seq IS NULL OR seq < 0 THEN 'seq must be a non-negative integer below 2^63'
    WHEN f.ts IS NULL THEN 'missing field ''ts'''
    WHEN ts IS NULL THEN 'ts is not an ISO 8601 time'
    WHEN f.turn IS NOT NULL AND coalesce(turn, 0) < 1
        THEN 'turn must be null or a positive integer'
    ELSE {_required_checks()}
END"""


def search_text(event_type: str, field: str, content: str) -> str:
    """`event_rows.search_text` from a line's type and the text of its fields (`field`
    formats a field's name into its value) and of its message's content: what `sql.SEARCH`
    looks in, lowered; NULL for the event types it does not look at."""
    return f"""lower(CASE {event_type}
        WHEN 'run_start' THEN {field.format("task")}
        WHEN 'model_response' THEN {content}
        WHEN 'tool_start'
            THEN concat_ws(chr(10), {field.format("name")}, {field.format("arguments_raw")})
        WHEN 'tool_end' THEN concat_ws(chr(10), {field.format("result")}, {field.format("error")})
        WHEN 'error' THEN {field.format("message")}
        WHEN 'run_end' THEN {field.format("final_answer")} END)"""


# A refused line's message may be a string, which `f` holds as bare text: reading a content
# out of text that is not JSON would fail the whole file's insert.
_SEARCH_TEXT = search_text(
    "f.type",
    'f."{}"',
    """CASE WHEN f.type = 'model_response' AND json_valid(f.message)
    THEN json_extract_string(f.message, '$.content') END""",
)

# The columns of `event_rows`, from `path`, `line_no`, `raw`, `nbytes` and `f` of the inner
# query; `PROBLEM` says why a line is refused, `RECHECK` why a line that passes must still be
# read again carefully.
_ROW = f"""f.run_id, seq, f.type, turn, ts, raw, path, nbytes, line_no, $batch,
    coalesce(PROBLEM, RECHECK), {_SEARCH_TEXT}
FROM (
    SELECT *, try_cast(f.seq AS BIGINT) AS seq, try_cast(f.ts AS TIMESTAMPTZ) AS ts,
        try_cast(f.turn AS INTEGER) AS turn
    FROM ("""

# A bulk file of another schema version is migrated or refused on the careful path.
_OTHER_VERSION = f"""CASE WHEN f.type = 'run_start' AND f.schema_version <> '{SCHEMA_VERSION}'
    THEN 'schema_version ' || f.schema_version || ': read line by line' END"""

# Bulk path: whole new files, read by DuckDB's own NDJSON reader straight into `event_rows`,
# in any order (keeping file order costs a third of the insert). Rows carry no line number:
# a file whose rows are not all good is re-read carefully (see `BULK_FILE_STATS`), so a
# bulk row never needs one. With ignore_errors a malformed line becomes a NULL row.
# A bulk file is kept only when the reader's own check passed every one of its lines
# (`ingest_batch._reads_cleanly`), which refuses whatever PROBLEM_EXPR would: the insert
# only flags what DuckDB itself cannot read or type (the reasons are found on the careful
# path), and extracts only the fields the row and `search_text` need. (The full checks and
# every field cost a fifth of a bulk ingest's time.)
_BULK_FIELDS = [
    *ENVELOPE,
    *("task", "name", "arguments_raw", "result", "error", "message", "final_answer"),
]
_BULK_FIELDS_STRUCT = _quote("{" + ", ".join(f'"{name}": "VARCHAR"' for name in _BULK_FIELDS) + "}")
_UNREADABLE = """CASE WHEN raw IS NULL OR f.type IS NULL OR f.run_id IS NULL OR seq IS NULL
    OR seq < 0 OR ts IS NULL OR (f.turn IS NOT NULL AND coalesce(turn, 0) < 1)
    THEN 'not read by DuckDB as the reader reads it' END"""
_BULK_ROW = _ROW.replace("PROBLEM", _UNREADABLE).replace("RECHECK", _OTHER_VERSION)
INSERT_BULK = f"""
INSERT INTO event_rows SELECT {_BULK_ROW}
        SELECT filename AS path, NULL::BIGINT AS line_no, json AS raw,
            strlen(json::VARCHAR) AS nbytes, from_json(json, {_BULK_FIELDS_STRUCT}) AS f
        FROM read_ndjson_objects($files, filename = true, ignore_errors = true)
    )
)
"""

# Careful path: each line with its exact number, for the new lines of grown files, files
# with blank or malformed lines, and migrated files. Python copies exactly the new whole
# lines to a scratch file; `$map` says which trace each scratch file stands for and how many
# of its lines came before.
INSERT_LINES = f"""
INSERT INTO event_rows SELECT {_ROW.replace("PROBLEM", PROBLEM_EXPR).replace("RECHECK", "NULL")}
        SELECT path, line_no, CASE WHEN json_valid(line) THEN line::JSON END AS raw,
            strlen(line) AS nbytes,
            from_json(CASE WHEN json_valid(line) THEN line END, {_FIELDS_STRUCT}) AS f
        FROM (
            SELECT m.path, m.line_base + t.n AS line_no, t.line
            FROM (
                -- Unnested in the select list, not laterally: a lateral unnest would carry
                -- the whole file's text along with every one of its lines.
                SELECT filename, unnest(lines) AS line, generate_subscripts(lines, 1) AS n
                FROM (SELECT filename, string_split(content, chr(10)) AS lines
                      FROM read_text($files))
            ) t
            JOIN (SELECT unnest($map::STRUCT(read_path VARCHAR, path VARCHAR,
                                             line_base BIGINT)[], recursive := true)) m
                ON m.read_path = t.filename
        )
        WHERE trim(line) <> ''
    )
)
"""

# A long line, one at a time (`ingest_batch._insert_long_lines`), with the values the reader
# read, or NULLs and the reader's reason when it refused it.
_LONG_CONTENT = "json_extract_string($event, '$.message.content')"
INSERT_LONG_LINE = f"""
INSERT INTO event_rows VALUES ($run_id, $seq, $type, $turn, $ts, try_cast($event AS JSON),
    $path, $nbytes, $line_no, $batch, $problem,
    {search_text("$type", "json_extract_string($event, '$.{}')", _LONG_CONTENT)})
"""

# --- checks on one batch, after its lines are in `event_rows` -------------------------------

# The reader's verdicts on carefully read lines (see `ingest._apply_verdicts`): the lines it
# refused, with its reason (the same words `workbench replay` uses), and the lines only
# DuckDB refused, admitted with the values the reader read.
REFUSE_LINES = """
UPDATE event_rows AS e SET problem = r.problem
FROM (SELECT unnest($lines::STRUCT(path VARCHAR, line_no BIGINT, problem VARCHAR)[],
                    recursive := true)) r
WHERE e.batch = $batch AND e.source_path = r.path AND e.line_no = r.line_no
"""
BATCH_REFUSED_LINES = """
SELECT source_path, line_no FROM event_rows
WHERE batch = $batch AND line_no IS NOT NULL AND problem IS NOT NULL AND event IS NOT NULL
"""
ADMIT_LINES = """
UPDATE event_rows AS e
SET problem = NULL, run_id = a.run_id, seq = a.seq, type = a.type, turn = a.turn, ts = a.ts
FROM (SELECT unnest($lines::STRUCT(path VARCHAR, line_no BIGINT, run_id VARCHAR, seq BIGINT,
                    type VARCHAR, turn INTEGER, ts TIMESTAMPTZ)[], recursive := true)) a
WHERE e.batch = $batch AND e.source_path = a.path AND e.line_no = a.line_no
"""

# Per bulk-read file: whether all of it went in cleanly, and the run it holds. Anything
# else (a refused line; a blank line, which the reader skips, so the rows do not account
# for every byte; lines of several runs; a repeated seq; another schema version, flagged at
# insert by `_OTHER_VERSION`) sends the file to the careful path, which numbers its lines
# exactly. Repeated
# seqs are found with a bitmap of the first $bits seqs, a tenth of the cost of a hash of
# every seq; `beyond` counts the lines past it, which `LONG_FILE_SEQS` then counts exactly.
BULK_FILE_STATS = """
SELECT source_path, count(*) AS rows, sum(line_bytes) + count(*) AS nbytes,
    count(problem) = 0 AND min(run_id) = max(run_id) AS clean,
    coalesce(bit_count(bitstring_agg(seq, 0, $bits - 1)
        FILTER (WHERE seq BETWEEN 0 AND $bits - 1)), 0)
        AS seqs,
    count(*) FILTER (WHERE seq >= $bits) AS beyond,
    min(run_id) AS run_id
FROM event_rows WHERE batch = $batch AND line_no IS NULL GROUP BY source_path
"""
LONG_FILE_SEQS = """
SELECT source_path, count(DISTINCT seq) FROM event_rows
WHERE batch = $batch AND line_no IS NULL AND list_contains($paths, source_path)
GROUP BY source_path
"""
DELETE_FILES_ROWS = """
DELETE FROM event_rows WHERE batch = $batch AND list_contains($paths, source_path)
"""
DELETE_PATH_ROWS = "DELETE FROM event_rows WHERE source_path = $path"

# Per carefully read file of the batch with good lines: the run it holds (its first good
# line's run id), the lowest and highest run id among its good lines (equal to it when the
# file holds one run), and the schema version and line of its run_start.
BATCH_FILE_RUNS = """
SELECT source_path, arg_min(run_id, line_no) FILTER (WHERE problem IS NULL),
    min(run_id) FILTER (WHERE problem IS NULL) AS lowest,
    max(run_id) FILTER (WHERE problem IS NULL) AS highest,
    max(CASE WHEN type = 'run_start' AND problem IS NULL
        THEN try_cast(event->>'schema_version' AS INTEGER) END) AS schema_version,
    min(line_no) FILTER (WHERE type = 'run_start' AND problem IS NULL) AS start_line
FROM event_rows WHERE batch = $batch AND line_no IS NOT NULL
GROUP BY source_path HAVING count(*) FILTER (WHERE problem IS NULL) > 0
"""

MARK_FOREIGN_RUN_IDS = """
UPDATE event_rows AS e
SET problem = 'run_id ' || e.run_id || ' differs from the file''s run ' || m.run_id
FROM (SELECT unnest($files::STRUCT(path VARCHAR, run_id VARCHAR)[], recursive := true)) m
WHERE e.batch = $batch AND e.problem IS NULL AND e.source_path = m.path
    AND e.run_id <> m.run_id
"""

# Duplicate seq within a run: the first occurrence (earliest batch, then line) wins. Only
# runs that got carefully read lines can have one: a bulk file with a repeated seq is
# re-read carefully, and a run is read from one file.
MARK_DUPLICATE_SEQ = """
UPDATE event_rows AS e
SET problem = 'duplicate seq ' || e.seq || ' of run ' || e.run_id
    || ' (the first one, from ' || d.first_path || ', is kept)'
FROM (
    SELECT rid, first_path FROM (
        SELECT rowid AS rid,
            row_number() OVER w AS n,
            first_value(source_path) OVER w AS first_path
        FROM event_rows
        WHERE problem IS NULL AND (run_id, seq) IN (
            SELECT run_id, seq FROM event_rows
            WHERE problem IS NULL AND run_id IN (
                SELECT DISTINCT run_id FROM event_rows
                WHERE batch = $batch AND line_no IS NOT NULL)
            GROUP BY run_id, seq HAVING count(*) > 1)
        WINDOW w AS (PARTITION BY run_id, seq ORDER BY batch, line_no)
    ) WHERE n > 1
) d
WHERE e.rowid = d.rid
"""

BATCH_PROBLEMS = """
SELECT source_path, line_no, problem FROM event_rows
WHERE batch = $batch AND problem IS NOT NULL ORDER BY source_path, line_no
"""

UPSERT_FILES = """
INSERT OR REPLACE INTO trace_files
SELECT unnest($path::VARCHAR[]), unnest($run_id::VARCHAR[]), unnest($bytes_done::BIGINT[]),
    unnest($lines_done::BIGINT[]), unnest($size_seen::BIGINT[]), unnest($refused::VARCHAR[])
"""

# Rebuild the `runs` rows of the runs this batch touched. `touched` is each one with the
# batches that hold its rows (`run_batches`), this one added; its events are read from those
# batches only, so a batch of new runs costs the same in a store of any size. Totals come
# from run_end when the run ended, else they are counted from its events (an incomplete
# run). The CASEs keep JSON parsing to the few rows each figure needs.
TOUCHED = """
CREATE OR REPLACE TEMP TABLE touched AS
SELECT t.run_id, list_sort(list_distinct(list_append(coalesce(b.batches, []), $batch))) AS batches
FROM (SELECT DISTINCT run_id FROM event_rows WHERE batch = $batch AND run_id IS NOT NULL) t
LEFT JOIN run_batches b USING (run_id)
"""
DELETE_TOUCHED_RUNS = """
DELETE FROM runs WHERE run_id IN (SELECT run_id FROM touched);
DELETE FROM run_batches WHERE run_id IN (SELECT run_id FROM touched);
INSERT INTO run_batches SELECT run_id, batches FROM touched;
"""
# What a run's row takes from its run_start and run_end, each read in one parse of the event
# (`json_extract_string` with a list of paths): the events themselves never go through the
# aggregate, and a captured run_start holding a 30 MB first request is parsed once, not once
# a field (which took more than the ingest's whole memory limit).
# A run's task fingerprint: what makes two runs "runs of the same task" (`workbench compare
# --task`, `why`): its system prompt, its task (the first user message) and the names of the
# tools it was offered, in any order. 16 hex digits of an md5: a key, not a secret.
TASK_FINGERPRINT = """left(md5(concat_ws(chr(31),
    coalesce(event->>'system_prompt', ''), coalesce(event->>'task', ''),
    array_to_string(list_sort(coalesce(
        json_extract_string(event, '$.tools[*].function.name'), []::VARCHAR[])), chr(31)))), 16)"""

# The session a run is part of: `meta.session_id` (`workbench run --session`, the proxy's
# `X-Workbench-Session` and the clients' own session ids, a session import), or the session
# id of a session imported before imports said it there. A run another run names as its
# session is part of it (`SESSION_ROOTS`: the first run of a proxied conversation).
# Both read with the run_start's other fields in its one extraction (`_START_FIELDS`): each
# extraction of its own parses the whole line again, and a run_start may hold a 30 MB task.

_START_FIELDS = (
    "task",
    "model",
    "parent_run_id",
    "fork_turn",
    "schema_version",
    "origin",
    "meta.session_id",
    "meta.session.session_id",
)
_END_FIELDS = (
    "status",
    "totals.turns",
    "totals.model_calls",
    "totals.tool_calls",
    "totals.tool_errors",
    "totals.total_tokens",
    "final_answer",
    "reason",
    "timeout_layer",
)


def _paths(fields: tuple[str, ...]) -> str:
    return "[" + ", ".join(f"'$.{field}'" for field in fields) + "]"


def _s(name: str) -> str:
    """A run_start field as `_paths` reads it into the list `s`."""
    return f"s[{_START_FIELDS.index(name) + 1}]"


def _e(name: str) -> str:
    """A run_end field as `_paths` reads it into the list `e`."""
    return f"e[{_END_FIELDS.index(name) + 1}]"


INSERT_TOUCHED_RUNS = f"""
INSERT INTO runs
WITH touched_rows AS (
    SELECT run_id, seq, type, turn, ts, source_path,
        CASE WHEN type = 'run_start'
            THEN json_extract_string(event, {_paths(_START_FIELDS)}) END AS s,
        CASE WHEN type = 'run_end'
            THEN json_extract_string(event, {_paths(_END_FIELDS)}) END AS e,
        CASE WHEN type = 'tool_end' THEN event->>'ok' = 'false' END AS tool_failed,
        CASE WHEN type = 'model_response'
            THEN try_cast(event->'usage'->>'total_tokens' AS BIGINT) END AS tokens,
        CASE WHEN type = 'run_start' THEN {TASK_FINGERPRINT} END AS fingerprint
    FROM event_rows
    WHERE batch IN (SELECT DISTINCT unnest(batches) FROM touched)
        AND run_id IN (SELECT run_id FROM touched) AND problem IS NULL
), agg AS (
    SELECT run_id, count(*) AS n, min(ts) AS first_ts, max(ts) AS last_ts,
        max(turn) AS turns,
        count(*) FILTER (WHERE type = 'model_response') AS model_calls,
        count(*) FILTER (WHERE type = 'tool_end') AS tool_calls,
        count(*) FILTER (WHERE tool_failed) AS tool_errors,
        sum(tokens) AS tokens,
        arg_min(s, seq) FILTER (WHERE type = 'run_start') AS s,
        arg_max(e, seq) FILTER (WHERE type = 'run_end') AS e,
        min(ts) FILTER (WHERE type = 'run_start') AS started_at,
        max(ts) FILTER (WHERE type = 'run_end') AS ended_at,
        arg_min(fingerprint, seq) FILTER (WHERE type = 'run_start') AS fingerprint,
        min(source_path) AS source_path
    FROM touched_rows GROUP BY run_id
)
SELECT run_id, coalesce(started_at, first_ts), ended_at, {_s("task")}, {_s("model")},
    coalesce({_e("status")}, 'incomplete'),
    coalesce(try_cast({_e("totals.turns")} AS INTEGER), turns, 0),
    coalesce(try_cast({_e("totals.model_calls")} AS INTEGER), model_calls),
    coalesce(try_cast({_e("totals.tool_calls")} AS INTEGER), tool_calls),
    coalesce(try_cast({_e("totals.tool_errors")} AS INTEGER), tool_errors),
    coalesce(try_cast({_e("totals.total_tokens")} AS BIGINT), tokens, 0),
    -- The run's duration on the trace's own clock, as `traces.tree.run_duration_ms`
    -- counts it (the timeline's length too): from its first event to its last.
    epoch_us(last_ts) / 1000.0 - epoch_us(first_ts) / 1000.0,
    {_s("parent_run_id")}, try_cast({_s("fork_turn")} AS INTEGER), {_e("final_answer")},
    {_e("reason")}, {_e("timeout_layer")}, try_cast({_s("schema_version")} AS INTEGER), n,
    source_path, coalesce({_s("origin")}, 'agent'), fingerprint,
    coalesce({_s("meta.session_id")}, {_s("meta.session.session_id")})
FROM agg
"""
# A run that another run names as its session, and names none itself, is that session's
# first run (set-based over the runs just ingested and those they name).
SESSION_ROOTS = """
UPDATE runs SET session = run_id WHERE session IS NULL AND run_id IN (
    SELECT session FROM runs WHERE run_id IN (SELECT run_id FROM touched)
    UNION SELECT run_id FROM touched WHERE run_id IN (
        SELECT session FROM runs WHERE session IS NOT NULL))
"""

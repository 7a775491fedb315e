"""The store's tables and views, and the SQL of every read, as named parameterised strings.

Ingest's statements live in `ingest_sql`.
"""

from __future__ import annotations

import zlib

from traces.store.notes_sql import ANNOTATION_DROP, ANNOTATION_SCHEMA
from traces.versions import SCHEMA_VERSION

# Bump when the tables below change shape; an older store file is rebuilt from its traces.
# A table added needs no bump: it is created in an older store when that opens (the schema
# text differs, see `SCHEMA_TEXT`), and DROP_ALL drops it for the next rebuild.
# 6: events clustered by ingest batch (run_batches), search_text; runs.duration_ms is the
# trace's own span; 7: search_text holds a tool call's name; 8: runs.task_fingerprint;
# 9: runs.session
STORE_VERSION = 9
# Rows are read back with the current event models, so a store is rebuilt when either the
# tables or the trace schema it was filled under differ from this workbench's.
STORE_META = {"store_version": str(STORE_VERSION), "schema_version": str(SCHEMA_VERSION)}

# One row per sample of a stored suite run (`traces.store.regress` keeps the other tables
# of regression results); here because the failed filter reads whether a sample passed.
# Results, not a cache of the traces: a rebuild of the store keeps them (see DROP_ALL).
REGRESS_SAMPLES = """
CREATE TABLE IF NOT EXISTS regress_samples (
    suite_run_id VARCHAR NOT NULL,
    case_id VARCHAR NOT NULL,
    sample INTEGER NOT NULL,
    run_id VARCHAR,
    passed BOOLEAN,
    reason VARCHAR,
    chosen VARCHAR,
    status VARCHAR,
    error VARCHAR
);
"""

SCHEMA = f"""{REGRESS_SAMPLES}
CREATE TABLE IF NOT EXISTS store_meta (key VARCHAR PRIMARY KEY, value VARCHAR);
CREATE TABLE IF NOT EXISTS trace_files (
    path VARCHAR PRIMARY KEY,   -- absolute path of the .jsonl file
    run_id VARCHAR,             -- the run this file holds (first good line)
    bytes_done BIGINT,          -- bytes ingested: whole lines only
    lines_done BIGINT,          -- lines ingested, good or reported
    size_seen BIGINT,           -- file size at the last look; unchanged means nothing to do
    refused VARCHAR             -- why the whole file was refused, if it was
);
-- Every line read, good or bad; users query the `events` view of the good ones.
CREATE TABLE IF NOT EXISTS event_rows (
    run_id VARCHAR,
    seq BIGINT,
    type VARCHAR,
    turn INTEGER,
    ts TIMESTAMPTZ,
    -- The line exactly as written. zstd: traces repeat themselves (every request resends
    -- the history), and a fixed codec spares DuckDB trying each one on every segment,
    -- which was most of the cost of writing the store.
    event JSON USING COMPRESSION zstd,
    source_path VARCHAR NOT NULL,
    line_bytes BIGINT,          -- the line's length in bytes, without its newline
    line_no BIGINT,             -- NULL when read in bulk: see ingest.py
    batch INTEGER NOT NULL,
    problem VARCHAR,            -- why the line was refused; NULL for a good event
    -- What `search` looks in (task, message text, tool name, arguments and result, error,
    -- answer), lowered, for the event types it covers: one scan of a column finds the few
    -- events whose JSON is then read, instead of parsing the JSON of every event.
    search_text VARCHAR
);
CREATE OR REPLACE VIEW events AS
SELECT run_id, seq, type, turn, ts, event, source_path FROM event_rows WHERE problem IS NULL;
CREATE TABLE IF NOT EXISTS runs (
    run_id VARCHAR PRIMARY KEY,
    started_at TIMESTAMPTZ,
    ended_at TIMESTAMPTZ,
    task VARCHAR,
    model VARCHAR,
    status VARCHAR,
    turns INTEGER,
    model_calls INTEGER,
    tool_calls INTEGER,
    tool_errors INTEGER,
    total_tokens BIGINT,
    duration_ms DOUBLE,
    parent_run_id VARCHAR,
    fork_turn INTEGER,
    final_answer VARCHAR,
    reason VARCHAR,
    timeout_layer VARCHAR,
    schema_version INTEGER,
    events INTEGER,
    source_path VARCHAR,
    origin VARCHAR,             -- run_start.origin: agent, fork, captured, ...
    task_fingerprint VARCHAR,   -- runs of one task share it (`ingest_sql.TASK_FINGERPRINT`)
    session VARCHAR             -- its conversation or agent session (run_start meta.session_id)
);
-- The ingest batches that hold each run's rows. `event_rows` grows a batch at a time, so
-- its zone maps on `batch` let a read of one run scan only these batches' row groups: a
-- point lookup in a store of any size (`EVENTS`).
CREATE TABLE IF NOT EXISTS run_batches (run_id VARCHAR PRIMARY KEY, batches INTEGER[]);
CREATE OR REPLACE VIEW model_calls AS
SELECT run_id, turn, seq, ts,
    (event->>'attempt')::INTEGER AS attempt,
    event->>'finish_reason' AS finish_reason,
    event->'message'->>'content' AS content,
    coalesce(json_array_length(event->'message'->'tool_calls'), 0) AS tool_call_count,
    (event->'usage'->>'prompt_tokens')::BIGINT AS prompt_tokens,
    (event->'usage'->>'completion_tokens')::BIGINT AS completion_tokens,
    (event->'usage'->>'total_tokens')::BIGINT AS total_tokens,
    (event->>'ttft_ms')::DOUBLE AS ttft_ms,
    (event->>'latency_ms')::DOUBLE AS latency_ms,
    (event->>'chunks')::INTEGER AS chunks,
    event->'message' AS message
FROM events WHERE type = 'model_response';
CREATE OR REPLACE VIEW tool_calls AS
WITH starts AS (
    SELECT run_id, turn, seq, ts, event->>'call_id' AS call_id, event FROM events
    WHERE type = 'tool_start'
), ends AS (
    SELECT run_id, seq, ts, event->>'call_id' AS call_id, event FROM events
    WHERE type = 'tool_end'
)
SELECT s.run_id, s.turn, s.call_id, s.event->>'name' AS name, s.event->>'source' AS source,
    s.event->>'arguments_raw' AS arguments_raw, s.event->'arguments' AS arguments,
    s.event->>'parse_error' AS parse_error, s.event->>'reasoning' AS reasoning,
    CASE WHEN e.event IS NULL THEN 'running'
         WHEN (e.event->>'ok')::BOOLEAN THEN 'ok' ELSE 'error' END AS status,
    e.event->>'result' AS result, e.event->>'error' AS error,
    (e.event->>'duration_ms')::DOUBLE AS duration_ms,
    coalesce((e.event->>'mocked')::BOOLEAN, false) AS mocked,
    coalesce((e.event->>'replayed')::BOOLEAN, false) AS replayed,
    s.seq AS start_seq, e.seq AS end_seq, s.ts AS started_at, e.ts AS ended_at
FROM starts s LEFT JOIN ends e ON e.run_id = s.run_id AND e.call_id = s.call_id;
CREATE OR REPLACE VIEW tool_schemas AS
SELECT run_id, pos AS position, tool->'function'->>'name' AS name,
    tool->'function'->>'description' AS description,
    tool->'function'->'parameters' AS parameters,
    event->'tool_sources'->>(tool->'function'->>'name') AS source,
    tool AS schema
FROM (
    SELECT run_id, event, unnest(json_extract(event, '$.tools[*]')) AS tool,
        generate_subscripts(json_extract(event, '$.tools[*]'), 1) AS pos
    FROM events WHERE type = 'run_start'
);
-- The names (relative to the folder, NUL between) of a listing of a traces folder, all of
-- them files the store knows (`scan.pending_in_folder`). Apart from store_meta, which is
-- written far more often: a checkpoint copies a changed table whole.
CREATE TABLE IF NOT EXISTS listings (folder VARCHAR PRIMARY KEY, names VARCHAR);
{ANNOTATION_SCHEMA}
INSERT OR IGNORE INTO store_meta VALUES
    ('store_version', '{STORE_VERSION}'), ('schema_version', '{SCHEMA_VERSION}');
"""
# Opening a store runs `SCHEMA` only when it differs from the one the file was made with
# (re-creating the views costs more than the rest of a `workbench runs`).
SCHEMA_TEXT = f"{zlib.crc32(SCHEMA.encode()):08x}"
SCHEMA_TEXT_SET = "INSERT OR REPLACE INTO store_meta VALUES ('schema_text', $text)"

DROP_ALL = f"""{ANNOTATION_DROP}
DROP VIEW IF EXISTS tool_schemas; DROP VIEW IF EXISTS tool_calls; DROP VIEW IF EXISTS model_calls;
DROP VIEW IF EXISTS events; DROP TABLE IF EXISTS runs; DROP TABLE IF EXISTS event_rows;
DROP TABLE IF EXISTS run_batches;
DROP TABLE IF EXISTS trace_files; DROP TABLE IF EXISTS listings;
DROP TABLE IF EXISTS store_meta;
"""

STORE_META_GET = "SELECT key, value FROM store_meta"
NEXT_BATCH = "SELECT coalesce(max(batch), 0) + 1 FROM event_rows"
KNOWN_FILES = "SELECT path, run_id, bytes_done, lines_done, size_seen, refused FROM trace_files"
# The quick look of `scan.pending_in_folder`: the paths in $names (one text, NUL between
# paths) the store does not know; and the known files under $folder that may still grow:
# not refused, and not read to their end or their run not ended (or no run at all). Both
# pick rows first by what is cheap to read, then read the paths of only those rows: reading
# all 100,000 paths costs a few milliseconds.
LISTING_GET = "SELECT value FROM store_meta WHERE key = $key"
LISTING_SET = "INSERT OR REPLACE INTO store_meta VALUES ($key, $value)"
NAMES_GET = "SELECT names FROM listings WHERE folder = $folder"
NAMES_SET = "INSERT OR REPLACE INTO listings VALUES ($folder, $names)"
NEW_FILES = """
WITH listed AS (SELECT unnest(string_split($names, chr(0))) AS name),
known AS (SELECT path FROM trace_files WHERE path IN (SELECT name FROM listed))
SELECT name FROM listed ANTI JOIN known ON path = name WHERE name <> ''
"""
OPEN_FILES = """
SELECT path, run_id, bytes_done, lines_done, size_seen, refused FROM trace_files
WHERE starts_with(path, $folder) AND rowid IN (
    SELECT rowid FROM trace_files WHERE refused IS NULL AND (
        bytes_done < size_seen OR run_id IS NULL
        OR run_id IN (SELECT run_id FROM runs WHERE status = 'incomplete')))
"""

# --- reads ------------------------------------------------------------------------------

# What its suite case judged of a regression sample (NULL for any other run), over `runs`.
JUDGED = """(SELECT CASE WHEN count(*) = 0 THEN NULL WHEN bool_or(s.passed) THEN 'passed'
                 WHEN bool_or(coalesce(s.error, '') <> '') THEN 'error' ELSE 'failed' END
     FROM regress_samples s WHERE s.run_id = runs.run_id)"""
RUN_COLUMNS = f"""run_id, started_at, ended_at, task, model, status, turns, model_calls,
    tool_calls, tool_errors, total_tokens, duration_ms, parent_run_id, fork_turn,
    final_answer, reason, source_path, origin, task_fingerprint, session,
    {JUDGED} AS judged"""
# Columns a runs listing may be sorted by (names of the `runs` table; never user text).
RUN_SORT_COLUMNS = (
    "started_at",
    "run_id",
    "task",
    "model",
    "status",
    "turns",
    "tool_calls",
    "total_tokens",
    "duration_ms",
    "parent_run_id",
    "origin",
)


def runs_select(
    where: str, sort: str | None = None, descending: bool = True, reverse: bool = False
) -> str:
    """The runs `where` keeps (`run_filter.RunQuery.where`), ordered by one of
    RUN_SORT_COLUMNS (ties newest first), or newest first when `sort` is None; `reverse`
    reads the same order from its other end (NULLs first), so a page near the end of a long
    listing skips a few rows instead of nearly all."""
    if sort is not None and sort not in RUN_SORT_COLUMNS:
        raise ValueError(f"cannot sort runs by {sort!r}")
    keys = [(sort, "DESC" if descending else "ASC")] if sort is not None else []
    keys += [("started_at", "DESC"), ("run_id", "ASC")]
    flip = {"ASC": "DESC", "DESC": "ASC"}
    order = ", ".join(
        f"{name} {flip[way] if reverse else way}"
        + ("" if name == "run_id" else " NULLS FIRST" if reverse else " NULLS LAST")
        for name, way in keys
    )
    return f"""
SELECT {RUN_COLUMNS} FROM runs {where}
ORDER BY {order}
LIMIT $limit OFFSET $offset
"""


def runs_count(where: str) -> str:
    return f"SELECT count(*) FROM runs {where}"


RUN = f"SELECT {RUN_COLUMNS} FROM runs WHERE run_id = $run_id"
RUNS_BY_PREFIX = """
SELECT run_id FROM runs WHERE starts_with(run_id, $prefix) ORDER BY run_id LIMIT 6
"""
# One run's rows: only the row groups of its batches are read (see `run_batches`).
RUN_ROWS = """
FROM event_rows
WHERE batch IN (SELECT unnest(batches) FROM run_batches WHERE run_id = $run_id)
  AND run_id = $run_id AND problem IS NULL"""
_EVENT_FILTER = """
  AND ($types IS NULL OR list_contains($types, type)) AND ($turn IS NULL OR turn = $turn)
  AND ($turn_from IS NULL OR turn IS NULL OR turn BETWEEN $turn_from AND $turn_to)"""
EVENTS = f"SELECT event, seq {RUN_ROWS} {_EVENT_FILTER} ORDER BY seq OFFSET $offset"
# The same, with each model_request's messages, tools and wire body left out (`events`).
EVENTS_UNSENT = f"""
SELECT CASE WHEN type = 'model_request'
        THEN json_merge_patch(event, '{{"messages": [], "tools": [], "body": null}}')
        ELSE event END,
    seq
{RUN_ROWS} {_EVENT_FILTER} ORDER BY seq OFFSET $offset
"""
# A page: its rows are picked by seq first and only their JSON is read (sorting the run's
# rows with their JSON to keep a few read every event's text).
EVENTS_PAGE = f"""
SELECT event, seq FROM event_rows WHERE rowid IN (
    SELECT rowid {RUN_ROWS} {_EVENT_FILTER} ORDER BY seq LIMIT $limit OFFSET $offset)
ORDER BY seq
"""
COUNT_EVENTS = f"SELECT count(*) {RUN_ROWS}"
# When the run's first and last events happened (`traces.tree.run_duration_ms`).
TIME_SPAN = f"SELECT min(ts), max(ts) {RUN_ROWS}"
TURN_NUMBERS = f"SELECT DISTINCT turn {RUN_ROWS} AND turn IS NOT NULL ORDER BY turn"
# A run whose seqs are 0..n-1 (every run the recorder wrote whole) has the event at
# position k at seq k: a page far into a long run is then read by seq, without an OFFSET
# that sorts and skips every event before it.
EVENT_SPAN = f"SELECT count(*), min(seq), max(seq) {RUN_ROWS}"
EVENTS_FROM_SEQ = f"""
SELECT event, seq FROM event_rows WHERE rowid IN (
    SELECT rowid {RUN_ROWS} AND seq >= $seq ORDER BY seq LIMIT $limit)
ORDER BY seq
"""
# What a decision chain (`traces.tree.build_chain`, the chain diff) is made of, of turns
# $turn_from to $turn_to and the run's own: its start and end, tool calls, errors, the
# model requests without what they sent, the responses, and of the chunks only those that
# begin a model call (the first of an attempt, or after an answer): a chunk that follows a
# request or chunk of its attempt joins that call and adds nothing to the chain.
CHAIN_EVENTS = f"""
WITH model AS (
    -- A request without what it sent: the window below holds a thousand turns' of them.
    SELECT seq, turn, type, coalesce((event->>'attempt')::BIGINT, 1) AS attempt,
        CASE WHEN type = 'model_request'
            THEN json_merge_patch(event, '{{"messages": [], "tools": [], "body": null}}')
            ELSE event END AS event
    {RUN_ROWS} AND turn BETWEEN $turn_from AND $turn_to
        AND type IN ('model_request', 'model_chunk', 'model_response')
), placed AS (
    SELECT seq, type, event, attempt,
        lag(type) OVER turn_order AS type_before, lag(attempt) OVER turn_order AS attempt_before
    FROM model WINDOW turn_order AS (PARTITION BY turn ORDER BY seq)
)
-- The events are carried through: fetching them again by rowid scanned the run's rows a
-- second time, a third of the query.
SELECT event, seq FROM placed
WHERE type <> 'model_chunk' OR type_before IS NULL OR type_before = 'model_response'
    OR attempt_before <> attempt
UNION ALL
SELECT event, seq {RUN_ROWS} AND (turn IS NULL OR turn BETWEEN $turn_from AND $turn_to)
    AND type IN ('run_start', 'run_end', 'tool_start', 'tool_end', 'error')
ORDER BY seq
"""
# The run's first failure (`workbench.engine.views.outline.event_is_failure`): an error, a
# failed tool call, unparsable arguments, or an end that is not `completed`; one query,
# reading the JSON of those event types only.
# Also what `traces.store.failures` groups failing runs by.
FAILURE_EVENT = """type IN ('error', 'tool_end', 'tool_start', 'run_end')
  AND CASE type
      WHEN 'error' THEN true
      WHEN 'tool_end' THEN NOT coalesce(try_cast(event->>'ok' AS BOOLEAN), true)
      WHEN 'tool_start' THEN event->>'parse_error' IS NOT NULL
      ELSE coalesce(event->>'status', '') <> 'completed' END"""
FIRST_FAILURE = f"""
SELECT event, seq {RUN_ROWS}
  AND {FAILURE_EVENT}
ORDER BY seq LIMIT 1
"""
TOOL_SCHEMAS = "SELECT schema FROM tool_schemas WHERE run_id = $run_id ORDER BY position"

# What a fork reads of the run it forks, without reading the run's other turns
# (`workbench.engine.recording.runs.parent.StoredParent`).
# The turns that hold an event of one of $types (a model request: the turns a fork can
# start at).
TURNS_WITH = f"""
SELECT DISTINCT turn {RUN_ROWS} AND turn IS NOT NULL AND list_contains($types, type)
ORDER BY turn
"""
# The tool_start and tool_end events of the calls named, in seq order.
TOOL_CALL_EVENTS = f"""
SELECT event, seq {RUN_ROWS}
  AND type IN ('tool_start', 'tool_end') AND list_contains($call_ids, event->>'call_id')
ORDER BY seq
"""
# Every call of tool $name made in a turn: its seq, call id and parsed arguments (JSON, null
# when they did not parse), in seq order; only these columns of the JSON are read.
TOOL_ARGUMENTS = f"""
SELECT seq, event->>'call_id', event->'arguments' {RUN_ROWS}
  AND type = 'tool_start' AND turn IS NOT NULL AND (event->>'name') = $name
ORDER BY seq
"""
# How many calls of each tool (made in a turn) have a recorded result: the k-th start of a
# call id is paired with its k-th end, as `traces.tree` pairs them in a trace whose ends
# each follow their start.
TOOL_RESULT_COUNTS = f"""
WITH tool AS (
    SELECT seq, type, turn, event->>'call_id' AS call_id, event->>'name' AS name,
        row_number() OVER (PARTITION BY event->>'call_id', type ORDER BY seq) AS nth
    {RUN_ROWS} AND type IN ('tool_start', 'tool_end')
)
SELECT s.name, count(*) FROM tool s JOIN tool e
    ON e.type = 'tool_end' AND e.call_id = s.call_id AND e.nth = s.nth AND e.seq > s.seq
WHERE s.type = 'tool_start' AND s.turn IS NOT NULL
GROUP BY s.name
"""
# Each turn from $turn_from to $turn_to in one row: how many model calls it made and the
# tools it called, in order. `traces.tree` makes a model call of each request, and of a chunk or a
# response that follows no unanswered call (the first of its turn, or after an answer); it
# also counts one whose attempt differs from the call before it, which only a trace whose
# attempts do not each start with their request (none the workbench writes) shows.
TURN_CALLS = f"""
WITH model AS (
    SELECT turn, type, lag(type) OVER (PARTITION BY turn ORDER BY seq) AS type_before
    {RUN_ROWS} AND turn BETWEEN $turn_from AND $turn_to
        AND type IN ('model_request', 'model_chunk', 'model_response')
), calls AS (
    SELECT turn, count(*) FILTER (
        WHERE type = 'model_request' OR type_before IS NULL OR type_before = 'model_response'
    ) AS calls
    FROM model GROUP BY turn
), tools AS (
    SELECT turn, list(event->>'name' ORDER BY seq) AS names
    {RUN_ROWS} AND turn BETWEEN $turn_from AND $turn_to AND type = 'tool_start'
    GROUP BY turn
), turns AS (SELECT DISTINCT turn {RUN_ROWS} AND turn BETWEEN $turn_from AND $turn_to)
SELECT turn, coalesce(calls, 0), coalesce(names, []::VARCHAR[])
FROM turns LEFT JOIN calls USING (turn) LEFT JOIN tools USING (turn)
ORDER BY turn
"""

# Text search over what a run said and did: one row per matching field, with a snippet
# around the first match. `instr` on lowered text, so the search text needs no escaping.
# `search_text` picks the events first; only theirs is read from the JSON.
_SEARCHED = """problem IS NULL AND contains(search_text, lower($text))
      AND type IN ('run_start', 'model_response', 'tool_start', 'tool_end', 'error', 'run_end')"""
# The fields of the `scoped` events, each with where `$text` is in it (0: nowhere).
_SEARCH_FIELDS = """fields AS (
    SELECT run_id, turn, seq, 'task' AS place, event->>'task' AS body
    FROM scoped WHERE type = 'run_start'
    UNION ALL SELECT run_id, turn, seq, 'message', event->'message'->>'content'
    FROM scoped WHERE type = 'model_response'
    UNION ALL SELECT run_id, turn, seq, 'tool_name', event->>'name'
    FROM scoped WHERE type = 'tool_start'
    UNION ALL SELECT run_id, turn, seq, 'tool_arguments', event->>'arguments_raw'
    FROM scoped WHERE type = 'tool_start'
    UNION ALL SELECT run_id, turn, seq, 'tool_result', event->>'result'
    FROM scoped WHERE type = 'tool_end'
    UNION ALL SELECT run_id, turn, seq, 'error', event->>'error'
    FROM scoped WHERE type = 'tool_end'
    UNION ALL SELECT run_id, turn, seq, 'error', event->>'message'
    FROM scoped WHERE type = 'error'
    -- A stopped run's last text is not an answer (`traces.tree.answer_label`).
    UNION ALL SELECT run_id, turn, seq,
        CASE WHEN event->>'status' = 'completed' THEN 'answer' ELSE 'last_text' END,
        event->>'final_answer'
    FROM scoped WHERE type = 'run_end'
), found AS (
    SELECT run_id, turn, seq, place, body, instr(lower(body), lower($text)) AS at
    FROM fields WHERE body IS NOT NULL
)"""
_SEARCH_HIT = """f.run_id, f.turn, f.seq, f.place,
    CASE WHEN f.at > $context + 1 THEN '…' ELSE '' END
    || substr(f.body, greatest(1, f.at - $context), length($text) + 2 * $context)
    || CASE WHEN f.at + length($text) + $context <= length(f.body) THEN '…' ELSE '' END"""
SEARCH = f"""
WITH scoped AS (
    SELECT run_id, turn, seq, type, event FROM event_rows
    WHERE {_SEARCHED} AND ($run_id IS NULL OR run_id = $run_id)
), {_SEARCH_FIELDS}
SELECT {_SEARCH_HIT}
FROM found f LEFT JOIN runs r ON r.run_id = f.run_id
WHERE f.at > 0
ORDER BY r.started_at DESC NULLS LAST, f.run_id, f.seq, f.place
LIMIT $limit
"""
# The same within one run, a page at a time: the run's matching events are counted and
# picked from `search_text` alone (its batches' row groups only), and the JSON is read
# for the page's events only, so a search of a long run holds no more than a page. One
# hit per event: its first, in `SEARCH`'s order (else its first field, for a match that
# only the joined `search_text` holds).
RUN_MATCH_COUNT = f"SELECT count(*) {RUN_ROWS} AND {_SEARCHED}"
RUN_MATCHES = f"""
WITH scoped AS (
    SELECT run_id, turn, seq, type, event FROM event_rows WHERE rowid IN (
        SELECT rowid {RUN_ROWS} AND {_SEARCHED} ORDER BY seq LIMIT $limit OFFSET $offset)
), {_SEARCH_FIELDS}
SELECT {_SEARCH_HIT}
FROM found f
QUALIFY row_number() OVER (PARTITION BY f.seq ORDER BY f.at > 0 DESC, f.place) = 1
ORDER BY f.seq
"""

# Input and output tokens of each run, from its run_end totals (the runs table keeps only
# the sum), for pricing a listing. The rows are picked first and only their event text is
# read: filtering `events` read the text of every run_end (20 ms with 100,000 runs).
RUN_TOKENS = """
SELECT run_id, (event->'totals'->>'input_tokens')::BIGINT,
    (event->'totals'->>'output_tokens')::BIGINT
FROM event_rows WHERE rowid IN (
    SELECT rowid FROM event_rows
    WHERE type = 'run_end' AND problem IS NULL AND list_contains($run_ids, run_id))
"""

# Each turn of a run in one row, for a tree that shows every turn's status, time and tokens
# before any is opened: wall time from its first event to its last, the provider's usage
# (with the loop's estimate of the prompt beside it), the tool calls asked for, started,
# ended and failed, and the kind of its last error.
TURN_SUMMARIES = f"""
SELECT turn,
    (epoch_us(max(ts)) - epoch_us(min(ts))) / 1000.0,
    count(*) FILTER (WHERE type = 'model_response'),
    sum((event->'usage'->>'prompt_tokens')::BIGINT) FILTER (WHERE type = 'model_response'),
    sum((event->'usage'->>'completion_tokens')::BIGINT) FILTER (WHERE type = 'model_response'),
    sum((event->>'estimated_tokens')::BIGINT) FILTER (WHERE type = 'model_request'),
    sum(coalesce(json_array_length(event->'message'->'tool_calls'), 0))
        FILTER (WHERE type = 'model_response'),
    count(*) FILTER (WHERE type = 'tool_start'),
    count(*) FILTER (WHERE type = 'tool_end'),
    count(*) FILTER (WHERE type = 'tool_end' AND NOT (event->>'ok')::BOOLEAN),
    count(*) FILTER (WHERE type = 'tool_start' AND event->>'parse_error' IS NOT NULL),
    count(*) FILTER (WHERE type = 'error'),
    arg_max(event->>'kind', seq) FILTER (WHERE type = 'error')
{RUN_ROWS}
  AND turn IS NOT NULL
  AND type IN ('model_request', 'model_response', 'tool_start', 'tool_end', 'error')
GROUP BY turn ORDER BY turn
"""

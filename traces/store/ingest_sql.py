"""The SQL of ingest: set-based contract checks generated from the event models, the two
read paths, and the checks that run on each batch once its lines are in `event_rows`.
"""

from __future__ import annotations

from traces.events import EVENT_TYPES

_ENVELOPE = ("run_id", "type", "seq", "ts", "turn", "schema_version")
_REQUIRED: dict[str, list[str]] = {
    cls.model_fields["type"].default: [
        name
        for name, info in cls.model_fields.items()
        if info.is_required() and name not in _ENVELOPE
    ]
    for cls in EVENT_TYPES
}
# Required fields whose values are large JSON (message lists, raw chunks, frames) are checked
# as keys in the text, so their values are never copied out during ingest; their shape is
# checked when an event is read back through `EVENT_ADAPTER`.
_BULKY = frozenset({"messages", "data", "frame"})
# One JSON parse per line extracts every other field a check needs: the envelope first, then
# each event type's required fields (1-based positions in the extracted list).
FIELDS: list[str] = list(_ENVELOPE) + sorted(
    {name for names in _REQUIRED.values() for name in names} - _BULKY
)
_POS = {name: index + 1 for index, name in enumerate(FIELDS)}
EVENT_TYPE_NAMES = tuple(_REQUIRED)


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _missing(name: str) -> str:
    if name in _BULKY:
        return f"NOT contains(raw::VARCHAR, {_quote(chr(34) + name + chr(34))})"
    return f"f[{_POS[name]}] IS NULL"


def _required_checks() -> str:
    branches = []
    for event_type, names in _REQUIRED.items():
        if not names:
            continue
        whens = " ".join(
            f"WHEN {_missing(name)} THEN {_quote(f'missing field {name!r}')}" for name in names
        )
        branches.append(f"WHEN {_quote(event_type)} THEN CASE {whens} END")
    return "CASE f[2] " + " ".join(branches) + " END"


_TYPES_LIST = ", ".join(_quote(name) for name in EVENT_TYPE_NAMES)
_FIELDS_LIST = "[" + ", ".join(_quote(name) for name in FIELDS) + "]"

# Why a line is refused, or NULL when it passes. `raw` is the line (NULL when it is not JSON
# at all), `f` the extracted fields, `seq`/`ts`/`turn` their typed values.
PROBLEM_EXPR = f"""CASE
    WHEN raw IS NULL THEN 'not valid JSON'
    WHEN NOT starts_with(ltrim(raw::VARCHAR), '{{') THEN 'not a JSON object'
    WHEN f[2] IS NULL THEN 'missing field ''type'''
    WHEN f[2] NOT IN ({_TYPES_LIST}) THEN 'unknown event type ''' || f[2] || ''''
    WHEN f[1] IS NULL THEN 'missing field ''run_id'''
    WHEN f[3] IS NULL THEN 'missing field ''seq'''
    WHEN seq IS NULL THEN 'seq must be a non-negative integer'
    WHEN f[4] IS NULL THEN 'missing field ''ts'''
    WHEN ts IS NULL THEN 'ts is not an ISO 8601 time'
    WHEN f[5] IS NOT NULL AND coalesce(turn, 0) < 1
        THEN 'turn must be null or a positive integer'
    ELSE {_required_checks()}
END"""

# The columns of `event_rows`, from `path`, `line_no`, `raw` and `f` of the inner query.
_ROW = f"""f[1], seq, f[2], turn, ts, raw, path, line_no, $batch, {PROBLEM_EXPR}
FROM (
    SELECT *, try_cast(f[3] AS UBIGINT) AS seq, try_cast(f[4] AS TIMESTAMPTZ) AS ts,
        try_cast(f[5] AS INTEGER) AS turn
    FROM ("""

# Bulk path: whole new files, read by DuckDB's own NDJSON reader straight into `event_rows`.
# With ignore_errors a malformed line becomes a NULL row (not dropped), so rows keep file
# order; a line's number is its row's position in the file (see ingest.py).
INSERT_BULK = f"""
INSERT INTO event_rows SELECT {_ROW}
        SELECT filename AS path, NULL::BIGINT AS line_no, json AS raw,
            json_extract_string(json, {_FIELDS_LIST}) AS f
        FROM read_ndjson_objects($files, filename = true, ignore_errors = true,
                                 maximum_object_size = 268435456)
    )
)
"""

# Careful path: each line with its exact number, for the new lines of grown files, files
# with blank or malformed lines, and migrated files. Python copies exactly the new whole
# lines to a scratch file; `$map` says which trace each scratch file stands for and how many
# of its lines came before.
INSERT_LINES = f"""
INSERT INTO event_rows SELECT {_ROW}
        SELECT path, line_no, CASE WHEN json_valid(line) THEN line::JSON END AS raw,
            json_extract_string(CASE WHEN json_valid(line) THEN line END, {_FIELDS_LIST}) AS f
        FROM (
            SELECT m.path, m.line_base + t.n AS line_no, t.line
            FROM read_text($files) r
            JOIN (SELECT unnest($map::STRUCT(read_path VARCHAR, path VARCHAR,
                                             line_base BIGINT)[], recursive := true)) m
                ON m.read_path = r.filename,
            unnest(string_split(r.content, chr(10))) WITH ORDINALITY AS t(line, n)
        )
        WHERE trim(line) <> ''
    )
)
"""

# --- checks on one batch, after its lines are in `event_rows` -------------------------------

# Per bulk-read file: rows, malformed rows, and whether the rows account for every byte (a
# blank line would shift the line numbers, so such a file is re-read line by line).
BULK_FILE_STATS = """
SELECT source_path, count(*) AS rows,
    count(*) FILTER (WHERE event IS NULL) AS malformed,
    sum(strlen(event::VARCHAR)) + count(*) AS nbytes
FROM event_rows WHERE batch = $batch AND line_no IS NULL GROUP BY source_path
"""
DELETE_FILE_ROWS = "DELETE FROM event_rows WHERE batch = $batch AND source_path = $path"
DELETE_PATH_ROWS = "DELETE FROM event_rows WHERE source_path = $path"

# Bulk rows get their line number from their position in the file (rows keep file order).
NUMBER_BULK_PROBLEMS = """
UPDATE event_rows AS e SET line_no = e.rowid - f.first_row + 1
FROM (SELECT source_path, min(rowid) AS first_row FROM event_rows
      WHERE batch = $batch AND line_no IS NULL GROUP BY source_path) f
WHERE e.batch = $batch AND e.line_no IS NULL AND e.problem IS NOT NULL
    AND e.source_path = f.source_path
"""

# Per file of the batch: the run it holds (its first good line's run id), and the schema
# version and line of its run_start. A bulk row's line is its position in the file.
BATCH_FILE_RUNS = """
SELECT e.source_path, arg_min(e.run_id, e.rowid) AS run_id,
    max(try_cast(e.event->>'schema_version' AS INTEGER))
        FILTER (WHERE e.type = 'run_start') AS schema_version,
    min(coalesce(e.line_no, e.rowid - f.first_row + 1))
        FILTER (WHERE e.type = 'run_start') AS start_line
FROM event_rows e
JOIN (SELECT source_path, min(rowid) AS first_row FROM event_rows WHERE batch = $batch
      GROUP BY source_path) f ON f.source_path = e.source_path
WHERE e.batch = $batch AND e.problem IS NULL
GROUP BY e.source_path
"""

MARK_FOREIGN_RUN_IDS = """
UPDATE event_rows AS e
SET problem = 'run_id ' || e.run_id || ' differs from the file''s run ' || m.run_id
FROM (SELECT unnest($files::STRUCT(path VARCHAR, run_id VARCHAR)[], recursive := true)) m
WHERE e.batch = $batch AND e.problem IS NULL AND e.source_path = m.path
    AND e.run_id <> m.run_id
"""

# Duplicate seq within a run: the first occurrence (earliest batch, then file order) wins.
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
                SELECT DISTINCT run_id FROM event_rows WHERE batch = $batch)
            GROUP BY run_id, seq HAVING count(*) > 1)
        WINDOW w AS (PARTITION BY run_id, seq ORDER BY batch, rowid)
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
SELECT unnest($files::STRUCT(path VARCHAR, run_id VARCHAR, bytes_done BIGINT,
    lines_done BIGINT, size_seen BIGINT, refused VARCHAR)[], recursive := true)
"""

# Rebuild the `runs` rows of the runs this batch touched. Totals come from run_end when
# the run ended, else they are counted from its events (an incomplete run). The CASEs keep
# JSON parsing to the few rows each figure needs.
DELETE_TOUCHED_RUNS = """
DELETE FROM runs WHERE run_id IN (SELECT DISTINCT run_id FROM event_rows WHERE batch = $batch)
"""
INSERT_TOUCHED_RUNS = """
INSERT INTO runs
WITH touched AS (
    SELECT run_id, seq, type, turn, ts, source_path,
        CASE WHEN type IN ('run_start', 'run_end') THEN event END AS event,
        CASE WHEN type = 'tool_end' THEN event->>'ok' = 'false' END AS tool_failed,
        CASE WHEN type = 'model_response'
            THEN try_cast(event->'usage'->>'total_tokens' AS BIGINT) END AS tokens
    FROM events
    WHERE run_id IN (SELECT DISTINCT run_id FROM event_rows WHERE batch = $batch)
), agg AS (
    SELECT run_id, count(*) AS n, min(ts) AS first_ts, max(ts) AS last_ts,
        max(turn) AS turns,
        count(*) FILTER (WHERE type = 'model_response') AS model_calls,
        count(*) FILTER (WHERE type = 'tool_end') AS tool_calls,
        count(*) FILTER (WHERE tool_failed) AS tool_errors,
        sum(tokens) AS tokens,
        arg_min(event, seq) FILTER (WHERE type = 'run_start') AS s,
        arg_max(event, seq) FILTER (WHERE type = 'run_end') AS e,
        min(ts) FILTER (WHERE type = 'run_start') AS started_at,
        max(ts) FILTER (WHERE type = 'run_end') AS ended_at,
        min(source_path) AS source_path
    FROM touched GROUP BY run_id
)
SELECT run_id, coalesce(started_at, first_ts), ended_at, s->>'task', s->>'model',
    coalesce(e->>'status', 'incomplete'),
    coalesce(try_cast(e->'totals'->>'turns' AS INTEGER), turns, 0),
    coalesce(try_cast(e->'totals'->>'model_calls' AS INTEGER), model_calls),
    coalesce(try_cast(e->'totals'->>'tool_calls' AS INTEGER), tool_calls),
    coalesce(try_cast(e->'totals'->>'tool_errors' AS INTEGER), tool_errors),
    coalesce(try_cast(e->'totals'->>'total_tokens' AS BIGINT), tokens, 0),
    coalesce(try_cast(e->'totals'->>'duration_ms' AS DOUBLE),
             epoch_us(last_ts) / 1000.0 - epoch_us(first_ts) / 1000.0),
    s->>'parent_run_id', try_cast(s->>'fork_turn' AS INTEGER), e->>'final_answer',
    e->>'reason', e->>'timeout_layer', try_cast(s->>'schema_version' AS INTEGER), n,
    source_path
FROM agg
"""

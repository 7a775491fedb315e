"""The store's annotation tables and views, and the SQL that fills and reads them
(`traces.store.notes`). Part of `sql.SCHEMA`: a cache of `<home>/annotations/*.jsonl`,
dropped and re-read with the traces on a rebuild."""

from __future__ import annotations

ANNOTATION_SCHEMA = """
CREATE TABLE IF NOT EXISTS annotation_files (
    path VARCHAR PRIMARY KEY,   -- absolute path of an `<author>.jsonl`
    bytes_done BIGINT,          -- bytes ingested: whole lines only
    lines_done BIGINT,          -- lines ingested, good or reported
    size_seen BIGINT            -- file size at the last look
);
-- Every line read, good or bad (`problem` says why a line was refused).
CREATE TABLE IF NOT EXISTS annotation_rows (
    id VARCHAR,
    type VARCHAR,               -- note or remove
    run_id VARCHAR,
    turn INTEGER,
    call_id VARCHAR,
    author VARCHAR,
    ts TIMESTAMPTZ,
    labels VARCHAR[],
    scores JSON,                -- {name: value}
    text VARCHAR,
    removes VARCHAR,            -- the id a tombstone removes
    record JSON,                -- the line as read (migrated to the current version)
    source_path VARCHAR NOT NULL,
    line_no BIGINT NOT NULL,
    problem VARCHAR
);
-- The good records, each id once (the same file copied into two homes and merged).
CREATE OR REPLACE VIEW annotation_records AS
SELECT * FROM annotation_rows WHERE problem IS NULL
QUALIFY row_number() OVER (PARTITION BY id ORDER BY source_path, line_no) = 1;
-- The annotations that count: notes no tombstone removed.
CREATE OR REPLACE VIEW annotations AS
SELECT id, run_id, turn, call_id, author, ts, labels, scores, text, source_path, line_no
FROM annotation_records
WHERE type = 'note'
    AND id NOT IN (SELECT removes FROM annotation_records WHERE type = 'remove');
CREATE OR REPLACE VIEW annotation_scores AS
SELECT a.id, a.run_id, a.turn, a.call_id, a.author, k.name,
    try_cast(a.scores->>k.name AS DOUBLE) AS value
FROM annotations a, unnest(json_keys(a.scores)) AS k(name);
"""

ANNOTATION_DROP = """
DROP VIEW IF EXISTS annotation_scores; DROP VIEW IF EXISTS annotations;
DROP VIEW IF EXISTS annotation_records;
DROP TABLE IF EXISTS annotation_rows; DROP TABLE IF EXISTS annotation_files;
"""

KNOWN_ANNOTATION_FILES = """
SELECT path, NULL, bytes_done, lines_done, size_seen, NULL FROM annotation_files
"""
UPSERT_ANNOTATION_FILES = """
INSERT OR REPLACE INTO annotation_files
SELECT unnest($path::VARCHAR[]), unnest($bytes_done::BIGINT[]),
    unnest($lines_done::BIGINT[]), unnest($size_seen::BIGINT[])
"""
DELETE_ANNOTATION_PATH = "DELETE FROM annotation_rows WHERE source_path = $path"

# The lines read, one JSON object each (`notes._Line`), through DuckDB's own JSON reader:
# the record (NULL for a refused line), where it came from, and why it was refused.
INSERT_ANNOTATION_LINES = """
INSERT INTO annotation_rows
SELECT r->>'id', r->>'type', r->>'run_id', try_cast(r->>'turn' AS INTEGER), r->>'call_id',
    r->>'author', try_cast(r->>'ts' AS TIMESTAMPTZ),
    coalesce(from_json(r->'labels', '["VARCHAR"]'), []), coalesce(r->'scores', '{}'),
    r->>'text', r->>'removes', r, path, line_no, problem
FROM (
    SELECT json->'record' AS r, json->>'path' AS path,
        try_cast(json->>'line_no' AS BIGINT) AS line_no, json->>'problem' AS problem
    FROM read_ndjson_objects($file)
)
"""

ANNOTATION_COLUMNS = "id, run_id, turn, call_id, author, ts, labels, scores, text"
# A run's annotations that count (all runs' when $run_id is NULL), oldest first.
RUN_ANNOTATIONS = f"""
SELECT {ANNOTATION_COLUMNS} FROM annotations
WHERE $run_id IS NULL OR run_id = $run_id ORDER BY ts, id
"""

"""`workbench push` from a home with redaction patterns of its own: the rows on their way to
the lake rewritten by the home's redactor (`traces.home.home_redactor`), the one a bundle
uses, so what leaves the home is redacted the same way by either road (a pattern added
after the runs were recorded scrubs them from the lake as from a bundle).

The rows go a page at a time: their row ids are read first (the push's own filter, run
once), then each page's texts are read, redacted in Python and only the rows that changed
are sent back, joined to the page's rows in one `INSERT … SELECT`. Memory stays one page.
DuckDB's `regexp_replace` could do it in SQL, but its RE2 reads some of Python's patterns
otherwise or not at all (look-arounds, back-references, Unicode `\\w` and `\\b`), and a
lake that redacts other than the bundle would break the very promise; a Python UDF would
need numpy, which the store does not ship with.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from traces.redact import Redactor
from traces.store.db import duckdb
from traces.store.ingest_sql import search_text
from traces.store.lake.schema import LAKE

# Rows redacted and sent at a time: an event line can hold a long history.
PAGE_ROWS = 1_000

# The free-text columns of each pushed table the redactor rewrites, with their types.
EVENT_TEXTS = {"event": "JSON"}
RUN_TEXTS = {"task": "VARCHAR", "final_answer": "VARCHAR", "reason": "VARCHAR"}
ANNOTATION_TEXTS = {"text": "VARCHAR", "labels": "VARCHAR[]", "scores": "JSON", "record": "JSON"}
TEXTS = {"event_rows": EVENT_TEXTS, "runs": RUN_TEXTS, "annotation_rows": ANNOTATION_TEXTS}

# An event whose line was redacted gets its length and `search_text` from the new line, so
# `search` on the lake finds no more than the line holds.
_EVENT_EXTRAS = (
    "0 AS batch",
    "coalesce(strlen(c.event), t.line_bytes) AS line_bytes",
    "CASE WHEN c.id IS NULL THEN t.search_text ELSE "
    + search_text(
        "t.type",
        "json_extract_string(c.event, '$.{}')",
        "json_extract_string(c.event, '$.message.content')",
    )
    + " END AS search_text",
)


def insert_redacted(
    cur: duckdb.DuckDBPyConnection,
    redactor: Redactor,
    table: str,
    target: str,
    where: str,
    params: dict[str, Any],
) -> int:
    """Insert the rows of `main.<table>` (aliased `t`) that `where` picks into
    `lake.<target>`, their free texts redacted; how many rows were inserted."""
    columns = TEXTS[table]
    ids = [
        int(row_id)
        for (row_id,) in cur.execute(
            f"SELECT t.rowid FROM main.{table} t WHERE {where} ORDER BY t.rowid", params
        ).fetchall()
    ]
    texts = ", ".join(f"{name}::{_as_text(kind)}" for name, kind in columns.items())
    read = f"SELECT rowid, {texts} FROM main.{table} WHERE rowid IN (SELECT unnest($ids::BIGINT[]))"
    insert = _insert(table, target, columns)
    for start in range(0, len(ids), PAGE_ROWS):
        page = ids[start : start + PAGE_ROWS]
        changed = []
        for row in cur.execute(read, {"ids": page}).fetchall():
            redacted = [_redacted(redactor, value) for value in row[1:]]
            if redacted != list(row[1:]):
                changed.append({"id": row[0], **dict(zip(columns, redacted, strict=True))})
        cur.execute(insert, {"ids": page, "changed": changed})
    return len(ids)


def _insert(table: str, target: str, columns: dict[str, str]) -> str:
    fields = ", ".join(f"{name} {_as_text(kind)}" for name, kind in columns.items())
    replaced = [f"coalesce(c.{name}::{kind}, t.{name}) AS {name}" for name, kind in columns.items()]
    if table == "event_rows":
        replaced += _EVENT_EXTRAS
    pushed_at = ", now()" if table == "runs" else ""
    return f"""
INSERT INTO {LAKE}.{target}
SELECT t.* REPLACE ({", ".join(replaced)}){pushed_at}
FROM main.{table} t LEFT JOIN (
    SELECT unnest($changed::STRUCT(id BIGINT, {fields})[], max_depth := 2)) c ON t.rowid = c.id
WHERE t.rowid IN (SELECT unnest($ids::BIGINT[]))
"""


def _as_text(kind: str) -> str:
    """How a column of type `kind` is read and sent back: a JSON column as its text."""
    return "VARCHAR" if kind == "JSON" else kind


def _redacted(redactor: Redactor, value: str | Sequence[str] | None) -> Any:
    """A column's value redacted as a bundle redacts its line: the text as it is (a JSON
    column as its text), a list of labels each."""
    if isinstance(value, str):
        return redactor.text(value)
    if isinstance(value, list):
        return [redactor.text(item) for item in value]
    return value

"""A run's events as indented JSON, formatted by DuckDB a page at a time (`json_pretty`),
for the JSON export of a long run: the text Python's `json.dumps(event.model_dump(mode=
"json"), indent=...)` writes, without reading each event into its model.

    rows = pretty_page(store, run_id, after=(-1, -1), limit=20_000)
    for seq, row, pretty, raw in rows: ...   # pretty: 4 spaces a level; else raw, to read

DuckDB's text is the models' only for an event stored as the models write it: every field
of its type, in the models' order, floats as floats, the time as `ts_text` writes it.
Nor do DuckDB and Python write every number and string alike: a float in exponent form, or
one Python writes so (from 1e16, below 1e-4), an integer of 16 digits or more, `-0`, and an
escaped control character (DuckDB writes `\\u001F`, Python `\\u001f`). Such an event, and
one of a type with nested models (run_start, run_end), comes back `raw`: the caller reads
it into its model. Duplicate keys inside an event's free-form JSON (a message, a frame)
are the one difference not looked for: no writer of traces writes them.
"""

from __future__ import annotations

import typing
from typing import TYPE_CHECKING

from pydantic import BaseModel

from traces.events import EVENT_TYPES
from traces.store.sql import RUN_ROWS

if TYPE_CHECKING:
    from traces.store.store import TraceStore


def _has_model(annotation: object) -> bool:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return True
    return any(_has_model(arg) for arg in typing.get_args(annotation))


def _stored_as_written(cls: type[BaseModel]) -> str | None:
    """SQL true for an event of `cls`'s type whose stored JSON is what the model writes;
    None when DuckDB's text cannot be its (a type with nested models)."""
    fields = cls.model_fields
    if any(_has_model(field.annotation) for field in fields.values()):
        return None
    keys = ", ".join(f"'{name}'" for name in fields)
    checks = [f"json_keys(event) = [{keys}]"]
    for name, field in fields.items():
        args = typing.get_args(field.annotation) or (field.annotation,)
        if float in args:
            types = "'DOUBLE', 'NULL'" if type(None) in args else "'DOUBLE'"
            checks.append(f"json_type(event, '$.{name}') IN ({types})")
    return " AND ".join(checks)


def _as_written() -> str:
    cases = []
    for cls in EVENT_TYPES:
        check = _stored_as_written(cls)
        if check is not None:
            cases.append(f"WHEN '{cls.model_fields['type'].default}' THEN {check}")
    return f"""coalesce(CASE type {" ".join(cases)} END, false)
        AND regexp_full_match(event->>'ts',
            '[0-9]{{4}}-[0-9]{{2}}-[0-9]{{2}}T[0-9]{{2}}:[0-9]{{2}}:[0-9]{{2}}\\.[0-9]{{6}}Z')
        AND NOT regexp_matches(event,
            '[:,\\[]\\s*(-?[0-9]+(\\.[0-9]+)?[eE]|-?0\\.0000|-?[0-9]{{16}}|-0[^.0-9])')
        AND NOT contains(event, '\\u00')"""


# A page of the run's events after ($seq, $row), in order: each formatted by DuckDB when it
# is stored as the models write it, else its stored text. Rows are picked by seq first and
# only theirs is read (as `sql.EVENTS_PAGE`).
PRETTY_PAGE = f"""
WITH page AS (
    SELECT rowid AS row, seq, event, {_as_written()} AS as_written
    FROM event_rows WHERE rowid IN (
        SELECT rowid {RUN_ROWS} AND (seq > $seq OR (seq = $seq AND rowid > $row))
        ORDER BY seq, rowid LIMIT $limit)
)
SELECT seq, row, CASE WHEN as_written THEN json_pretty(event) END,
    CASE WHEN NOT as_written THEN event END
FROM page ORDER BY seq, row
"""


def pretty_page(
    store: TraceStore, run_id: str, after: tuple[int, int], limit: int
) -> list[tuple[int, int, str | None, str | None]]:
    """Up to `limit` of the run's events after (seq, row) `after` ((-1, -1): from the
    first), in seq order: (seq, row, DuckDB's indented text or None, stored text or None)."""
    params = {"run_id": run_id, "seq": after[0], "row": after[1], "limit": limit}
    _, rows = store.query(PRETTY_PAGE, params)
    return [(int(seq), int(row), pretty, raw) for seq, row, pretty, raw in rows]

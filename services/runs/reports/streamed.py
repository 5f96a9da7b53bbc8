"""A run's per-request CSV and run JSON as a stream of byte chunks, read from the database
in batches, so exporting a 500,000-request run holds one batch of rows, never the run
(issue 20: a JSON export of such a run built 2.8 GB in memory).

The JSON is byte for byte what `json.dumps(document, indent=1)` of the whole run gives
(services.runs.reports.run_document), so Shootout's importer reads it back unchanged.

Rows are read by keyset pagination, each batch in its own short session, rather than in
one session held open for the whole stream: a browser that downloads slowly would keep a
read transaction open for minutes (SQLite cannot checkpoint its WAL past it, PostgreSQL
keeps the old row versions), a client that goes away leaves the generator unfinished with
nobody to close the session, and the web layer pulls each chunk on whichever worker
thread is free. The price: rows written while a run is exported may or may not be in it.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select, tuple_
from sqlalchemy.orm import InstrumentedAttribute

from db.models import REQUEST_RESULT_FIELDS, Exchange, RequestResult, Run, Sample
from db.session import session_scope
from services.core.errors import NotFoundError, ValidationError
from services.core.json_types import ForeignJson, JsonOut
from services.core.safe_text import csv_cell
from services.importers.shootout import EXCHANGE_FIELDS, FORMAT, SAMPLE_FIELDS, VERSION
from services.playground import votes as playground_votes

__all__ = [
    "BATCH_ROWS",
    "REQUEST_COLUMNS",
    "STREAM_FORMATS",
    "ExportStream",
    "csv_cell",
    "export_filename",
    "json_safe",
    "run_header",
    "stream_run",
]

#: Rows per query: large enough that a 500k-request run is 250 queries, small enough that
#: a batch with long inter-token lists stays a few megabytes.
BATCH_ROWS = 2000
STREAM_FORMATS: dict[str, str] = {"csv": "text/csv", "json": "application/json"}
REQUEST_COLUMNS = REQUEST_RESULT_FIELDS


@dataclass(frozen=True)
class ExportStream:
    filename: str
    mime: str
    #: Lazy: nothing is read from the database before the first chunk is asked for.
    chunks: Iterator[bytes]


def export_filename(run_ids: int | Sequence[int], fmt: str) -> str:
    ids = [run_ids] if isinstance(run_ids, int) else list(run_ids)
    stem = f"run-{ids[0]}" if len(ids) == 1 else "compare-" + "-".join(str(i) for i in ids)
    return f"shootout-{stem}.{fmt}"


def json_safe(value: Any) -> Any:
    """Strict JSON: infinities and NaN (an unlimited rate, a failed mean) become null."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(key): json_safe(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(item) for item in value]
    return value


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def run_header(run: Run) -> JsonOut:
    """The "run" object of Shootout run JSON (see services.importers.shootout)."""
    return {
        "id": run.id,
        "kind": run.kind,
        "name": run.name,
        "status": run.status,
        "config": run.config,
        "summary": run.summary,
        "engines": run.engines,
        "engine_names": run.engine_names,
        "model": run.model,
        "workload": run.workload,
        "notes": run.notes,
        "tags": run.tags,
        "archived": run.archived,
        "error": run.error,
        "created_at": _iso(run.created_at),
        "started_at": _iso(run.started_at),
        "finished_at": _iso(run.finished_at),
    }


# ---------------------------------------------------------------- reading in batches

_TABLES: dict[str, tuple[Any, Sequence[str], tuple[InstrumentedAttribute[Any], ...]]] = {
    # table -> model, exported columns, order (the keyset: unique, the last column is the id)
    "requests": (RequestResult, REQUEST_COLUMNS, (RequestResult.id,)),
    "exchanges": (Exchange, EXCHANGE_FIELDS, (Exchange.id,)),
    "samples": (Sample, SAMPLE_FIELDS, (Sample.ts, Sample.id)),
}


def _batches(table: str, run_id: int, columns: Sequence[str] | None = None) -> Iterator[list[JsonOut]]:
    """A run's rows of one table in export order, BATCH_ROWS at a time, one session each."""
    model, all_columns, order = _TABLES[table]
    wanted = tuple(columns or all_columns)
    selected = [getattr(model, column) for column in wanted]
    last: tuple[Any, ...] | None = None
    while True:
        query = select(*selected, *order).where(model.run_id == run_id)
        if last is not None:
            query = query.where(
                order[0] > last[0] if len(order) == 1 else tuple_(*order) > tuple_(*last)
            )
        with session_scope() as session:
            rows = session.execute(query.order_by(*order).limit(BATCH_ROWS)).all()
        if not rows:
            return
        last = tuple(rows[-1][len(wanted) :])
        yield [dict(zip(wanted, row[: len(wanted)])) for row in rows]
        if len(rows) < BATCH_ROWS:
            return


def _has_rows(session: Any, table: str, run_id: int) -> bool:
    # Not "does this run have results" (RunDetail.has_measurements): a CSV is rows, so the
    # question is which table holds them; a run with only a stored summary exports as JSON.
    model = _TABLES[table][0]
    return session.scalar(select(model.id).where(model.run_id == run_id).limit(1)) is not None


# ---------------------------------------------------------------- JSON


def _dumps(value: Any) -> str:
    return json.dumps(json_safe(value), indent=1, default=str, allow_nan=False)


def _json_list(table: str, run_id: int, before: str, after: str) -> Iterator[bytes]:
    """`before` + `[...]` + `after`, the list as json.dumps(indent=1) writes one two levels
    deep, one chunk per batch of rows."""
    pending, first = before + "[", True
    for batch in _batches(table, run_id):
        parts = [pending]
        for row in batch:
            # json.dumps indents by nesting level only, and escapes every newline inside a
            # string: a row dumped alone and shifted two spaces is what the whole dump holds.
            parts.append(("\n  " if first else ",\n  ") + _dumps(row).replace("\n", "\n  "))
            first = False
        yield "".join(parts).encode("utf-8")
        pending = ""
    yield (pending + ("]" if first else "\n ]") + after).encode("utf-8")


def _json_chunks(header: JsonOut, run_id: int) -> Iterator[bytes]:
    head = _dumps(header)  # '{\n "format": ...,\n "run": {...}\n}'
    before = head[: -len("\n}")] + ",\n"
    tables = list(_TABLES)
    for position, table in enumerate(tables):
        last = position == len(tables) - 1
        yield from _json_list(table, run_id, f'{before} "{table}": ', "\n}" if last else ",\n")
        before = ""


# ---------------------------------------------------------------- CSV


def _csv_text(rows: list[list[Any]]) -> bytes:
    """Rows as CSV, every cell through csv_cell: the header too (a sample's signal names come
    from the scraped engine) and the columns that look safe (an engine's name as a source)."""
    buffer = io.StringIO()
    csv.writer(buffer).writerows([csv_cell(value) for value in row] for row in rows)
    return buffer.getvalue().encode("utf-8")


def _signals(row: JsonOut) -> ForeignJson:
    """A sample row's signal values (the scraped engine's or GPU's metrics, by name)."""
    values = row["values"]
    return values if isinstance(values, dict) else {}


def _csv_chunks(table: str, run_id: int) -> Iterator[bytes]:
    """Per-request rows; a playground run's exchanges; a recording's samples."""
    if table == "samples":
        # The header names every signal of every sample: one pass for the names, one to write.
        signals = sorted(
            {
                key
                for batch in _batches("samples", run_id, ("values",))
                for row in batch
                for key in _signals(row)
            }
        )
        yield _csv_text([["run_id", "ts", "source", *signals]])
        for batch in _batches("samples", run_id):
            yield _csv_text(
                [
                    [
                        run_id,
                        row["ts"],
                        row["source"],
                        *(_signals(row).get(s) for s in signals),
                    ]
                    for row in batch
                ]
            )
        return
    columns = _TABLES[table][1]
    yield _csv_text([["run_id", *columns]])
    for batch in _batches(table, run_id):
        yield _csv_text([[run_id, *(row[column] for column in columns)] for row in batch])


# ---------------------------------------------------------------- the export


def refuse_hidden(run_id: int) -> None:
    """A file would say which engine wrote which answer of a blind exchange: none before an
    operator reveals it (a room may still be voting), as no page says it."""
    if playground_votes.engines_hidden(run_id):
        raise ValidationError(
            f"Exchange #{run_id} is blind until an operator reveals its engines (others may "
            "still be voting on it): export it after the reveal."
        )


def stream_run(run_id: int, fmt: str) -> ExportStream:
    """A run as per-request CSV or run JSON. What can be refused (an unknown format, a
    missing run, a CSV of a run with no rows) is refused here, before the first byte."""
    if fmt not in STREAM_FORMATS:
        raise ValidationError(f"Unknown export format {fmt!r}: use {' or '.join(STREAM_FORMATS)}.")
    with session_scope() as session:
        run = session.get(Run, run_id)
        if run is None:
            raise NotFoundError(f"Run #{run_id} does not exist.")
        refuse_hidden(run_id)
        if fmt == "json":
            header = {
                "format": FORMAT,
                "version": VERSION,
                "exported_at": datetime.now(UTC).isoformat(),
                "run": run_header(run),
            }
            chunks = _json_chunks(header, run_id)
        else:
            table = next((t for t in _TABLES if _has_rows(session, t, run_id)), None)
            if table is None:
                raise ValidationError(
                    f"Run #{run_id} has no per-request rows, exchanges or samples to export as CSV; export JSON instead."
                )
            chunks = _csv_chunks(table, run_id)
    return ExportStream(filename=export_filename(run_id, fmt), mime=STREAM_FORMATS[fmt], chunks=chunks)

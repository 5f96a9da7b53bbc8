"""Our own run JSON (`shootout export RUN --format json`), so a run moves between
Shootout servers and comes back as it left: same kind, status, config, summary, engine
snapshots, notes, tags, per-request rows, playground exchanges and telemetry samples.

Format (version 1):
    {"format": "shootout.run", "version": 1, "exported_at": ISO time,
     "run": {id, kind, name, status, config, summary, engines, engine_names, model,
             workload, notes, tags, archived, error, created_at, started_at, finished_at},
     "requests": [RequestResult fields ...], "exchanges": [...], "samples": [...]}

Imported as a stream: the lists are read item by item while the rows are inserted in
batches, so a 500,000-request export imports in the memory of one batch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar, cast

from sqlalchemy import Boolean, Float, Integer, String

from db.models import RequestResult, RequestRow
from services.core.errors import ValidationError
from services.core.json_types import ForeignJson, JsonOut
from services.importers import reading
from services.importers.common import REQUEST_FIELDS, ImportedRun, SourceFile, parse_timestamp
from services.runstate.lifecycle import ACTIVE_STATUSES, RunStatus

TOOL = "shootout"
LABEL = "Shootout run JSON"
FORMAT = "shootout.run"
VERSION = 1
EXCHANGE_FIELDS = (
    "conversation_id",
    "turn",
    "engine_name",
    "model",
    "messages",
    "params",
    "answer",
    "choices",
    "status",
    "metrics",
    "usage",
    "finish_reason",
    "error_class",
    "error",
)
SAMPLE_FIELDS = ("ts", "source", "values")

#: A row of one of the lists, cleaned: a request row, an exchange's or a sample's columns.
Row = TypeVar("Row", RequestRow, JsonOut)


def sniff(source: SourceFile) -> bool:
    return isinstance(source.document, dict) and source.document.get("format") == FORMAT


#: The long lists of the format: streamed item by item, never built whole by the importer.
LISTS = frozenset({"requests", "exchanges", "samples"})


def _column_kinds() -> dict[str, tuple[str, Callable[[object], bool]]]:
    """Each request column's kind, in words, and what a value of it is (None aside)."""
    kinds: dict[str, tuple[str, Callable[[object], bool]]] = {}
    for column in RequestResult.__table__.columns:
        if isinstance(column.type, Boolean):
            kinds[column.name] = ("true or false", lambda value: isinstance(value, bool))
        elif isinstance(column.type, Integer):
            kinds[column.name] = ("a whole number", _whole)
        elif isinstance(column.type, Float):
            kinds[column.name] = ("a number", _number)
        elif isinstance(column.type, String):
            kinds[column.name] = ("text", lambda value: isinstance(value, str))
    kinds["itl_s"] = (
        "a list of numbers",
        lambda value: isinstance(value, list) and set(map(type, value)) <= _NUMBERS,
    )
    kinds["extra"] = ("an object", lambda value: isinstance(value, dict))
    return kinds


#: JSON's numbers as the reader builds them (a bool's type is bool, not int).
_NUMBERS = {int, float}


def _whole(value: object) -> bool:
    return type(value) is int


def _number(value: object) -> bool:
    return type(value) in _NUMBERS


_COLUMN_KINDS = _column_kinds()


def _request(row: Any, name: str) -> RequestRow | None:
    """A request of the file as its row: each value of its column's type (SQLite would keep
    text in a count column, where every reader of the rows takes a count), else one line."""
    if not isinstance(row, dict):
        return None
    clean = {field: row.get(field) for field in REQUEST_FIELDS}
    clean["itl_s"] = clean["itl_s"] or []
    clean["extra"] = clean["extra"] or {}
    clean["warmup"] = bool(clean["warmup"])
    clean["ok"] = bool(clean["ok"]) if clean["ok"] is not None else True
    for field, value in clean.items():
        kind, holds = _COLUMN_KINDS[field]
        if value is not None and not holds(value):
            shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
            raise ValidationError(
                f"{name}: looks like {LABEL} but could not be stored (a request's {field} is "
                f"{shown}, not {kind})."
            )
    # Every value checked against its column above.
    return cast(RequestRow, clean)


def _exchange(row: Any) -> JsonOut | None:
    return (
        {name: row.get(name) for name in EXCHANGE_FIELDS if name in row}
        if isinstance(row, dict)
        else None
    )


def _sample(row: Any) -> JsonOut | None:
    if not isinstance(row, dict) or row.get("ts") is None:
        return None
    return {name: row.get(name) for name in SAMPLE_FIELDS}


def _cleaned(rows: Iterable[Any], clean: Callable[[Any], Row | None]) -> Iterator[Row]:
    for row in rows:
        cleaned = clean(row)
        if cleaned is not None:
            yield cleaned


def parse(source: SourceFile, engine_name: str | None = None) -> list[ImportedRun]:
    """A document already in memory (services.importers.parse_file)."""
    document = source.document
    run = _run(document, source.name, engine_name, {key: list(document.get(key) or []) for key in LISTS})
    run.requests, run.exchanges, run.samples = list(run.requests), list(run.exchanges), list(run.samples)
    return [run]


def parse_stream(
    upload: reading.Upload, header: ForeignJson, engine_name: str | None = None
) -> ImportedRun:
    """The run, its rows read from the file item by item while they are stored: `header` is
    the document without its lists (reading.scan with skip=LISTS)."""
    return _run(
        header, upload.name, engine_name, {key: reading.items(upload, f"{key}.item") for key in LISTS}
    )


def _run(
    document: ForeignJson, name: str, engine_name: str | None, lists: dict[str, Iterable[Any]]
) -> ImportedRun:
    version = document.get("version")
    if not isinstance(version, int) or version > VERSION:
        raise ValidationError(
            f"{name} is Shootout run JSON version {version!r}; this server reads up to {VERSION}."
        )
    run = document.get("run")
    if not isinstance(run, dict):
        raise ValidationError(f'{name} has no "run" object.')
    if engine_name:
        raise ValidationError(
            "Shootout run JSON keeps its own engine names; --engine-name does not apply to it."
        )
    config = dict(run.get("config") or {})
    config["import"] = {
        "tool": LABEL,
        "file": name,
        "original_id": run.get("id"),
        "exported_at": document.get("exported_at"),
    }
    kind = str(run.get("kind") or "import")
    status = str(run.get("status") or "finished")
    if status in ACTIVE_STATUSES:
        # Exported mid-run: no worker will ever finish it here.
        status = RunStatus.INTERRUPTED
    return ImportedRun(
        tool=TOOL,
        name=str(run.get("name") or ""),
        config=config,
        summary=dict(run.get("summary") or {}),
        engines=list(run.get("engines") or []),
        model=run.get("model"),
        workload=run.get("workload"),
        kind=kind,
        status=status,
        explicit_engine_names=str(run["engine_names"]) if run.get("engine_names") is not None else None,
        notes=str(run.get("notes") or ""),
        tags=[str(tag) for tag in run.get("tags") or []],
        created_at=parse_timestamp(run.get("created_at")),
        started_at=parse_timestamp(run.get("started_at")),
        finished_at=parse_timestamp(run.get("finished_at")),
        error=run.get("error"),
        requests=_cleaned(lists["requests"], lambda row: _request(row, name)),
        exchanges=_cleaned(lists["exchanges"], _exchange),
        samples=_cleaned(lists["samples"], _sample),
    )

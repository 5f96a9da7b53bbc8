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
from typing import Any

from services.core.errors import ValidationError
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


def sniff(source: SourceFile) -> bool:
    return isinstance(source.document, dict) and source.document.get("format") == FORMAT


#: The long lists of the format: streamed item by item, never built whole by the importer.
LISTS = frozenset({"requests", "exchanges", "samples"})


def _request(row: Any) -> dict[str, Any] | None:
    if not isinstance(row, dict):
        return None
    clean = {name: row.get(name) for name in REQUEST_FIELDS}
    clean["itl_s"] = clean["itl_s"] or []
    clean["extra"] = clean["extra"] or {}
    clean["warmup"] = bool(clean["warmup"])
    clean["ok"] = bool(clean["ok"]) if clean["ok"] is not None else True
    return clean


def _exchange(row: Any) -> dict[str, Any] | None:
    return (
        {name: row.get(name) for name in EXCHANGE_FIELDS if name in row}
        if isinstance(row, dict)
        else None
    )


def _sample(row: Any) -> dict[str, Any] | None:
    if not isinstance(row, dict) or row.get("ts") is None:
        return None
    return {name: row.get(name) for name in SAMPLE_FIELDS}


def _cleaned(
    rows: Iterable[Any], clean: Callable[[Any], dict[str, Any] | None]
) -> Iterator[dict[str, Any]]:
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
    upload: reading.Upload, header: dict[str, Any], engine_name: str | None = None
) -> ImportedRun:
    """The run, its rows read from the file item by item while they are stored: `header` is
    the document without its lists (reading.scan with skip=LISTS)."""
    return _run(
        header, upload.name, engine_name, {key: reading.items(upload, f"{key}.item") for key in LISTS}
    )


def _run(
    document: dict[str, Any], name: str, engine_name: str | None, lists: dict[str, Iterable[Any]]
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
        requests=_cleaned(lists["requests"], _request),
        exchanges=_cleaned(lists["exchanges"], _exchange),
        samples=_cleaned(lists["samples"], _sample),
    )

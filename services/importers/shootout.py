"""Our own run JSON (`python cli.py export RUN --format json`), so a run moves between
Shootout servers and comes back as it left: same kind, status, config, summary, engine
snapshots, notes, tags, per-request rows, playground exchanges and telemetry samples.

Format (version 1):
    {"format": "shootout.run", "version": 1, "exported_at": ISO time,
     "run": {id, kind, name, status, config, summary, engines, engine_names, model,
             workload, notes, tags, archived, error, created_at, started_at, finished_at},
     "requests": [RequestResult fields ...], "exchanges": [...], "samples": [...]}
"""

from __future__ import annotations


from services.errors import ValidationError
from services.importers.common import REQUEST_FIELDS, ImportedRun, SourceFile, parse_timestamp

TOOL = "shootout"
LABEL = "Shootout run JSON"
FORMAT = "shootout.run"
VERSION = 1
EXCHANGE_FIELDS = (
    "conversation_id", "turn", "engine_name", "model", "messages", "params", "answer", "choices", "status",
    "metrics", "usage", "finish_reason", "error_class", "error",
)
SAMPLE_FIELDS = ("ts", "source", "values")


def sniff(source: SourceFile) -> bool:
    return isinstance(source.document, dict) and source.document.get("format") == FORMAT


def parse(source: SourceFile, engine_name: str | None = None) -> list[ImportedRun]:
    document = source.document
    version = document.get("version")
    if not isinstance(version, int) or version > VERSION:
        raise ValidationError(f"{source.name} is Shootout run JSON version {version!r}; this server reads up to {VERSION}.")
    run = document.get("run")
    if not isinstance(run, dict):
        raise ValidationError(f"{source.name} has no \"run\" object.")
    if engine_name:
        raise ValidationError("Shootout run JSON keeps its own engine names; --engine-name does not apply to it.")
    config = dict(run.get("config") or {})
    config["import"] = {
        "tool": LABEL,
        "file": source.name,
        "original_id": run.get("id"),
        "exported_at": document.get("exported_at"),
    }
    requests = []
    for row in document.get("requests") or []:
        if isinstance(row, dict):
            clean = {name: row.get(name) for name in REQUEST_FIELDS}
            clean["itl_s"] = clean["itl_s"] or []
            clean["extra"] = clean["extra"] or {}
            clean["warmup"] = bool(clean["warmup"])
            clean["ok"] = bool(clean["ok"]) if clean["ok"] is not None else True
            requests.append(clean)
    exchanges = [
        {name: row.get(name) for name in EXCHANGE_FIELDS if name in row}
        for row in document.get("exchanges") or []
        if isinstance(row, dict)
    ]
    samples = [
        {name: row.get(name) for name in SAMPLE_FIELDS}
        for row in document.get("samples") or []
        if isinstance(row, dict) and row.get("ts") is not None
    ]
    kind = str(run.get("kind") or "import")
    status = str(run.get("status") or "finished")
    if status in ("pending", "running"):
        # Exported mid-run: no worker will ever finish it here.
        status = "interrupted"
    return [
        ImportedRun(
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
            requests=requests,
            exchanges=exchanges,
            samples=samples,
        )
    ]

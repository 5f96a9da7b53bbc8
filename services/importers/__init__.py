"""Import other tools' benchmark results as runs, so they compare with ours.

Supported: vLLM `vllm bench serve` result JSON, SGLang `bench_serving` JSONL, NVIDIA
AIPerf profile exports (JSON, CSV, per-request JSONL), GuideLLM `benchmarks.json`, and
Shootout's own run JSON. Each importer module has `TOOL`, `LABEL`, `sniff(source)` and
`parse(source, engine_name)`; the format is detected from the content, not the file name.

Imported runs get kind "import" (Shootout JSON keeps its own kind), the tool's numbers
mapped onto the benchmark summary format, and per-request rows where the file has them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from sqlalchemy import insert

from db.models import Exchange, RequestResult, Run, Sample
from db.session import session_scope
from services.errors import ValidationError
from services.importers import aiperf, guidellm, sglang, shootout, vllm
from services.importers.common import ImportedRun, SourceFile, read_source

__all__ = ["IMPORTERS", "ImportResult", "ImportedRun", "detect", "formats", "import_file", "parse_file", "save_run"]

#: Order matters only for files two importers could claim: the most specific goes first.
IMPORTERS: dict[str, ModuleType] = {
    module.TOOL: module for module in (shootout, guidellm, aiperf, sglang, vllm)
}
MAX_FILE_BYTES = 1024**3
INSERT_BATCH = 5000


@dataclass(frozen=True)
class ImportResult:
    run_ids: list[int]
    tool: str
    label: str
    requests: int
    warnings: list[str] = field(default_factory=list)


def formats() -> dict[str, str]:
    """tool -> what it reads (for help texts and the upload box)."""
    return {tool: module.LABEL for tool, module in IMPORTERS.items()}


def detect(source: SourceFile) -> ModuleType:
    for module in IMPORTERS.values():
        if module.sniff(source):
            return module
    raise ValidationError(
        f"{source.name}: not a results file Shootout can read. Expected one of: "
        + "; ".join(formats().values())
        + "."
    )


def parse_file(
    data: bytes | str, filename: str, *, tool: str | None = None, engine_name: str | None = None, path: Path | None = None
) -> tuple[ModuleType, list[ImportedRun]]:
    """Read a results file into runs (nothing stored)."""
    if len(data) > MAX_FILE_BYTES:
        raise ValidationError(f"{filename} is larger than {MAX_FILE_BYTES // 1024**2} MiB.")
    source = read_source(data, filename, path)
    if tool:
        module = IMPORTERS.get(tool)
        if module is None:
            raise ValidationError(f"Unknown format {tool!r}. Known: {', '.join(IMPORTERS)}.")
        if not module.sniff(source):
            raise ValidationError(f"{filename} does not look like {module.LABEL}.")
    else:
        module = detect(source)
    try:
        runs = module.parse(source, engine_name=(engine_name or "").strip() or None)
    except ValidationError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as error:
        raise ValidationError(f"{filename}: looks like {module.LABEL} but could not be read ({error!r}).") from error
    except RecursionError:
        raise ValidationError(f"{filename}: nested too deeply to be a results file.") from None
    if not runs:
        raise ValidationError(f"{filename}: no results found in it.")
    return module, runs


def _batched(rows: list[dict], size: int = INSERT_BATCH):  # type: ignore[type-arg]
    for start in range(0, len(rows), size):
        yield rows[start : start + size]


def save_run(imported: ImportedRun, *, name: str | None = None, tags: list[str] | tuple[str, ...] = ()) -> int:
    """Store one imported run with its per-request rows, exchanges and samples; its id."""
    all_tags = list(dict.fromkeys([*imported.tags, *(t.strip() for t in tags if t.strip())]))
    with session_scope() as session:
        run = Run(
            kind=imported.kind,
            name=(name or imported.name)[:300],
            status=imported.status,
            config=imported.config,
            summary=imported.summary,
            engines=imported.engines,
            engine_names=imported.engine_names[:1000],
            model=imported.model,
            workload=imported.workload,
            progress=1.0,
            error=imported.error,
            notes=imported.notes,
            tags=all_tags,
            started_at=imported.started_at,
            finished_at=imported.finished_at,
        )
        if imported.created_at is not None:
            run.created_at = imported.created_at
        session.add(run)
        session.flush()
        # Core bulk inserts: an import may hold hundreds of thousands of requests.
        for batch in _batched(imported.requests):
            session.execute(insert(RequestResult), [{**row, "run_id": run.id} for row in batch])
        for batch in _batched(imported.exchanges):
            session.execute(insert(Exchange), [{**row, "run_id": run.id} for row in batch])
        for batch in _batched(imported.samples):
            session.execute(insert(Sample), [{**row, "run_id": run.id} for row in batch])
        return run.id


def import_file(
    source: Path | str | bytes,
    filename: str | None = None,
    *,
    tool: str | None = None,
    engine_name: str | None = None,
    name: str | None = None,
    tags: list[str] | tuple[str, ...] = (),
) -> ImportResult:
    """Import a results file (a path, or uploaded bytes with their file name) as runs."""
    path: Path | None = None
    if isinstance(source, (str, Path)) and not isinstance(source, bytes):
        path = Path(source)
        if not path.is_file():
            raise ValidationError(f"{path} does not exist or is not a file.")
        if path.stat().st_size > MAX_FILE_BYTES:
            raise ValidationError(f"{path.name} is larger than {MAX_FILE_BYTES // 1024**2} MiB.")
        data: bytes = path.read_bytes()
        filename = filename or path.name
    else:
        data = source
    if not filename:
        raise ValidationError("The imported file needs a name.")
    module, runs = parse_file(data, filename, tool=tool, engine_name=engine_name, path=path)
    run_ids = [save_run(run, name=name, tags=tags) for run in runs]
    warnings = [warning for run in runs for warning in run.warnings]
    return ImportResult(
        run_ids=run_ids,
        tool=module.TOOL,
        label=module.LABEL,
        requests=sum(len(run.requests) for run in runs),
        warnings=warnings,
    )

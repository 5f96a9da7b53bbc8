"""Import other tools' benchmark results as runs, so they compare with ours.

Supported: vLLM `vllm bench serve` result JSON, SGLang `bench_serving` JSONL, NVIDIA
AIPerf profile exports (JSON, CSV, per-request JSONL), GuideLLM `benchmarks.json`, and
Shootout's own run JSON. Each importer module has `TOOL`, `LABEL`, `sniff(source)` and
`parse(source, engine_name)`; the format is detected from the content, not the file name.

Imported runs get kind "import" (Shootout JSON keeps its own kind), the tool's numbers
mapped onto the benchmark summary format, and per-request rows where the file has them.
Files are read as streams (reading.py), at most SHOOTOUT_LIMIT_IMPORT_MB (services.team.limits);
Shootout's own JSON is stored as it is read, a batch of rows at a time.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from itertools import islice
from pathlib import Path
from types import ModuleType
from typing import IO, TypeVar

from sqlalchemy import insert
from sqlalchemy.exc import StatementError

from db.models import Exchange, RequestResult, Run, Sample
from db.session import session_scope
from services.bench import comparability
from services.bench.blocks import cost_json
from services.bench.results import EngineResults, results_by_engine, results_rows
from services.bench.summary import BenchSummary
from services.core import cost
from services.core.errors import ValidationError
from services.core.json_types import JsonOut
from services.importers import aiperf, guidellm, reading, sglang, shootout, vllm
from services.importers.common import (
    UNREAD_KEYS,
    ImportedRun,
    SourceFile,
    read_source,
    source_from,
    with_reasoning_flag,
)

__all__ = [
    "IMPORTERS",
    "ImportResult",
    "ImportedRun",
    "detect",
    "formats",
    "import_file",
    "parse_file",
    "save_run",
]

#: Order matters only for files two importers could claim: the most specific goes first.
IMPORTERS: dict[str, ModuleType] = {
    module.TOOL: module for module in (shootout, guidellm, aiperf, sglang, vllm)
}
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
    data: bytes | str,
    filename: str,
    *,
    tool: str | None = None,
    engine_name: str | None = None,
    path: Path | None = None,
) -> tuple[ModuleType, list[ImportedRun]]:
    """Read a results file held in memory into runs (nothing stored)."""
    source = read_source(data, filename, path)
    return _parse(source, tool, engine_name)


def _module(source: SourceFile, tool: str | None) -> ModuleType:
    if not tool:
        return detect(source)
    module = IMPORTERS.get(tool)
    if module is None:
        raise ValidationError(f"Unknown format {tool!r}. Known: {', '.join(IMPORTERS)}.")
    if not module.sniff(source):
        raise ValidationError(f"{source.name} does not look like {module.LABEL}.")
    return module


@contextmanager
def _readable(name: str, label: str) -> Iterator[None]:
    """What a parser or a streamed row may raise on a file of the right kind but broken
    content, as one line."""
    try:
        yield
    except ValidationError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as error:
        raise ValidationError(
            f"{name}: looks like {label} but could not be read ({error!r})."
        ) from error
    except RecursionError:
        raise ValidationError(f"{name}: nested too deeply to be a results file.") from None
    except StatementError as error:
        raise ValidationError(
            f"{name}: looks like {label} but could not be stored ({type(error.orig).__name__}: "
            f"{str(error.orig).splitlines()[0][:120]})."
        ) from None


def _parse(
    source: SourceFile, tool: str | None, engine_name: str | None
) -> tuple[ModuleType, list[ImportedRun]]:
    module = _module(source, tool)
    with _readable(source.name, module.LABEL):
        runs = module.parse(source, engine_name=(engine_name or "").strip() or None)
    if not runs:
        raise ValidationError(f"{source.name}: no results found in it.")
    for run in runs:
        # What the file says of how it measured, kept with the run (services.bench.comparability).
        run.summary.setdefault(
            comparability.SUMMARY_KEY,
            comparability.fingerprints_of_import(run.config, BenchSummary.from_json(run.summary)),
        )
    return module, runs


#: A row of one table: a request row, an exchange's or a sample's columns.
Row = TypeVar("Row")


def _batched(rows: Iterable[Row], counted: list[int], size: int = INSERT_BATCH) -> Iterator[list[Row]]:
    iterator = iter(rows)
    while batch := list(islice(iterator, size)):
        counted[0] += len(batch)
        yield batch


def save_run(
    imported: ImportedRun, *, name: str | None = None, tags: list[str] | tuple[str, ...] = ()
) -> int:
    """Store one imported run with its per-request rows, exchanges and samples; its id."""
    return _save(imported, name=name, tags=tags)[0]


def _save(
    imported: ImportedRun, *, name: str | None, tags: list[str] | tuple[str, ...]
) -> tuple[int, int]:
    """Store a run; its id and how many request rows it got. Rows that are iterators (a
    streamed file) are read here, a batch at a time, in the run's one transaction: a file
    broken halfway stores nothing."""
    all_tags = list(dict.fromkeys([*imported.tags, *(t.strip() for t in tags if t.strip())]))
    requests = [0]
    with session_scope() as session:
        run = Run(
            kind=imported.kind,
            name=(name or imported.name)[:300],
            status=imported.status,
            config=imported.config,
            summary=with_reasoning_flag(imported.summary),
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
        for batch in _batched(imported.requests, requests):
            session.execute(insert(RequestResult), [{**row, "run_id": run.id} for row in batch])
        for model, rows in ((Exchange, imported.exchanges), (Sample, imported.samples)):
            for columns in _batched(rows, [0]):
                session.execute(insert(model), [{**row, "run_id": run.id} for row in columns])
        return run.id, requests[0]


def priced(imported: ImportedRun, usd_per_hour: float | None) -> ImportedRun:
    """The run with the price given at import and the cost of each engine and step at it
    (services/core/cost.py, from the throughputs the file gave); unchanged without a price."""
    if usd_per_hour is None:
        return imported
    summary = dict(imported.summary)
    engines = results_by_engine(summary.get("engines"))
    summary["engines"] = {name: _with_cost(block, usd_per_hour) for name, block in engines.items()}
    if "sweep" in summary:
        summary["sweep"] = [_with_cost(row, usd_per_hour) for row in results_rows(summary["sweep"])]
    config = {**imported.config, "usd_per_hour": usd_per_hour}
    return replace(imported, summary=summary, config=config)


def _with_cost(block: EngineResults, usd_per_hour: float) -> JsonOut:
    priced = cost.cost_of_block(usd_per_hour, block.to_json())
    return replace(block, cost=cost_json(priced.to_json())).to_json()


def import_file(
    source: Path | str | bytes | IO[bytes],
    filename: str | None = None,
    *,
    tool: str | None = None,
    engine_name: str | None = None,
    name: str | None = None,
    tags: list[str] | tuple[str, ...] = (),
    usd_per_hour: float | str | None = None,
) -> ImportResult:
    """Import a results file (a path, or an upload's bytes or file object with its file name)
    as runs, reading it as a stream (services.importers.reading). `usd_per_hour` prices another
    tool's run (a Shootout export keeps the cost its run stored)."""
    price = cost.parse_usd_per_hour(usd_per_hour)
    if isinstance(source, str):
        source = Path(source)
    with reading.open_upload(source, filename) as upload:
        if reading.is_blank(upload):
            raise ValidationError(f"{upload.name} is empty.")
        scanned = reading.scan(upload, skip=shootout.LISTS | UNREAD_KEYS)
        if (
            scanned is not None
            and scanned.kind == "object"
            and scanned.small.get("format") == shootout.FORMAT
            and tool in (None, shootout.TOOL)
        ):
            with _readable(upload.name, shootout.LABEL):
                run = shootout.parse_stream(upload, scanned.small, (engine_name or "").strip() or None)
                run_id, requests = _save(run, name=name, tags=tags)
            return ImportResult(
                run_ids=[run_id], tool=shootout.TOOL, label=shootout.LABEL, requests=requests
            )
        module, runs = _parse(source_from(upload, scanned), tool, engine_name)
        saved = [_save(priced(run, price), name=name, tags=tags) for run in runs]
    return ImportResult(
        run_ids=[run_id for run_id, _ in saved],
        tool=module.TOOL,
        label=module.LABEL,
        requests=sum(count for _, count in saved),
        warnings=[warning for run in runs for warning in run.warnings],
    )

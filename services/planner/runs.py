"""Stored benchmark runs, as the planner needs them: achieved decode tokens/s per engine,
with the batch and context they ran at, to set against the roofline bound.

Reads each engine's block of the run summary (services/bench/summary.py); runs or engines
without an output throughput (older runs, failed runs, other kinds) are skipped rather than
guessed. Each entry keeps
the model names and GPU names the run recorded, so `runs_for_plan` can tell which runs
measured the planned model on the planned GPU (see `matching`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import func, select

from db.models import Run, Sample
from db.session import session_scope
from services.bench.comparability import Comparability, run_fingerprint
from services.bench.comparability.hardware import hardware_names
from services.bench.results import EngineResults
from services.bench.summary import BenchSummary
from services.core import units
from services.planner import matching
from services.planner.catalog import all_models, get_gpu, get_model


@dataclass(frozen=True)
class StoredThroughput:
    run_id: int
    run_name: str
    engine: str
    model: str | None
    created_at: datetime | None
    output_tok_s: float
    batch: int
    context: int | None
    #: Every model name the run gave this engine (its block, the run's models map, the run).
    models: tuple[str, ...] = ()
    #: GPU names from the summary, config, engine block or recorded telemetry; empty if none.
    hardware: tuple[str, ...] = ()
    #: How the figures were produced (services.bench.comparability): its cautions qualify a share.
    fingerprint: Comparability = field(default_factory=Comparability)

    @property
    def label(self) -> str:
        name = self.run_name or f"run {self.run_id}"
        model = self.model or "model not recorded"
        hardware = ", ".join(self.hardware) or "hardware not recorded"
        return (
            f"#{self.run_id} {name} · {self.engine} · {model} on {hardware} · "
            f"{self.output_tok_s:,.1f} tok/s (batch ≈ {self.batch})"
        )


@dataclass(frozen=True)
class RunMatch:
    """One stored entry and whether it measured the planned model on the planned GPU."""

    entry: StoredThroughput
    comparable: bool
    reasons: list[str] = field(default_factory=list)  # why not, in words; empty when comparable


@dataclass(frozen=True)
class PlanRuns:
    comparable: list[RunMatch]
    others: list[RunMatch]

    @property
    def all(self) -> list[RunMatch]:
        return self.comparable + self.others


def _batch(block: EngineResults, configured: object) -> int:
    """The concurrency the engine actually ran at: time-weighted mean, else max, else configured
    (a stored config's "concurrency", as it was stored)."""
    for number in (
        block.concurrency_mean,
        block.concurrency_max,
        units.number(configured),
    ):
        if number and number > 0:
            return max(1, round(number))
    return 1


def _context(block: EngineResults) -> int | None:
    """Mean tokens in context during decode: the prompt plus half the answer."""
    completed, prompt, output = block.completed, block.input_tokens, block.output_tokens
    if not completed or prompt is None or output is None:
        return None
    return max(1, round((prompt + output / 2) / completed))


def _unique(values: list[str | None]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(v.strip() for v in values if isinstance(v, str) and v.strip()))


def _telemetry_gpus(session: Any, run_ids: list[int]) -> dict[int, list[str]]:
    """GPU names the recorder saw during each run: the label of the first sample per GPU."""
    if not run_ids:
        return {}
    first = (
        select(func.min(Sample.id))
        .where(Sample.run_id.in_(run_ids), Sample.source.like("gpu:%"))
        .group_by(Sample.run_id, Sample.source)
    )
    names: dict[int, list[str]] = {}
    for run_id, values in session.execute(
        select(Sample.run_id, Sample.values).where(Sample.id.in_(first))
    ):
        label = values.get("_label") if isinstance(values, dict) else None
        if isinstance(label, str) and label.strip() and label.strip() != "GPU":
            names.setdefault(run_id, []).append(label.strip())
    return names


def stored_throughputs(limit: int = 200) -> list[StoredThroughput]:
    """Newest first: one entry per engine of each stored run that recorded output tokens/s."""
    entries: list[StoredThroughput] = []
    with session_scope() as session:
        runs = session.scalars(
            select(Run).where(Run.archived.is_(False)).order_by(Run.created_at.desc()).limit(limit)
        ).all()
        telemetry = _telemetry_gpus(session, [run.id for run in runs])
        for run in runs:
            summary = BenchSummary.from_json(run.summary)
            config = run.config if isinstance(run.config, dict) else {}
            for engine, block in summary.engines.items():
                rate = block.output_throughput_tok_s
                if not rate or rate <= 0:
                    continue
                models = _unique([block.model, summary.served_model(engine), run.model])
                hardware = _unique(
                    [*hardware_names(block.extra, summary.extra, config), *telemetry.get(run.id, [])]
                )
                entries.append(
                    StoredThroughput(
                        run_id=run.id,
                        run_name=run.name or "",
                        engine=str(engine),
                        model=models[0] if models else None,
                        created_at=run.created_at,
                        output_tok_s=rate,
                        batch=_batch(block, config.get("concurrency")),
                        context=_context(block),
                        models=models,
                        hardware=hardware,
                        fingerprint=run_fingerprint(run.config, run.summary, run.engines, engine),
                    )
                )
    return entries


def runs_for_plan(model_key: str, gpu_key: str, limit: int = 200) -> PlanRuns:
    """Stored entries split into those that ran the planned model on the planned GPU and the rest.

    A run that recorded no model or no hardware is not comparable: a percentage of the
    wrong bound reads as a fact. The rest stay available for a deliberate pick.
    """
    model, gpu, models = get_model(model_key), get_gpu(gpu_key), all_models()
    comparable: list[RunMatch] = []
    others: list[RunMatch] = []
    for entry in stored_throughputs(limit):
        reasons: list[str] = []
        if not entry.models:
            reasons.append("it recorded no model")
        elif not matching.model_matches(entry.models, model, models):
            reasons.append(f"it ran {' / '.join(entry.models)}, not {model.name}")
        if not entry.hardware:
            reasons.append("it recorded no GPU (none in its summary, config or telemetry)")
        elif not matching.gpu_matches(entry.hardware, gpu):
            reasons.append(f"it ran on {', '.join(entry.hardware)}, not {gpu.name}")
        (others if reasons else comparable).append(RunMatch(entry, not reasons, reasons))
    return PlanRuns(comparable, others)

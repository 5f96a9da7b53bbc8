"""A run's cost and energy per step, as the HTML report and the steps CSV carry them.

One row per engine's reported result, or per sweep step (a tuning run: per configuration, and
per level of its sweep). The figures are the ones the run stored when it finished (cost from
services/core/cost.py at the price the run used, energy from services/telemetry/energy): nothing is
recomputed here. Cost and energy are per step, not per request: a request does not own a share
of the hour or of the joules (docs/cli-formats.md, "Steps CSV").
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from typing import Any

import pandas as pd

from services.bench.results import EngineResults
from services.bench.summary import BenchSummary
from services.bench.view.costs import cost_columns
from services.bench.view.tables import energy_columns
from services.core import cost
from services.core.json_types import JsonOut
from services.core.safe_text import csv_cell
from services.runstate.lifecycle import RunKind
from services.telemetry.energy.records import EnergyResult
from services.tune.summary import TuneSummary

#: The steps CSV's columns, in order (documented in docs/cli-formats.md).
CSV_COLUMNS = (
    "run_id",
    "engine",
    "step",
    "completed",
    "output_tok_s",
    "goodput_rps",
    "cost",
    "usd_per_hour",
    "usd_per_1m_output",
    "usd_per_1m_total",
    "usd_per_1m_output_goodput",
    "energy",
    "energy_j",
    "j_per_output_token",
    "output_tokens_per_j",
    "energy_method",
    "energy_source",
    "energy_scope",
)
#: The kinds of run whose steps have a load, a throughput and so a cost and an energy.
KINDS_WITH_STEPS = (RunKind.BENCHMARK, RunKind.IMPORT, RunKind.TUNE)
#: The `energy` cell of a run stored before energy was measured at all.
NOT_RECORDED = "not recorded (run from before energy)"


@dataclass(frozen=True)
class StepRow:
    engine: str
    #: The step's load in words ("concurrency 4"); "" for an engine's reported result.
    step: str
    completed: int | None
    output_tok_s: float | None
    goodput_rps: float | None
    cost: cost.Cost
    #: None: the run stored no energy block (a run from before energy, an import).
    energy: EnergyResult | None
    #: The stored block, for the shared table cells (services/bench/view).
    block: EngineResults

    @property
    def energy_text(self) -> str:
        """ "measured", or "not measured here: <reason>", or NOT_RECORDED: never 0 J."""
        if self.energy is None:
            return NOT_RECORDED
        return "measured" if self.energy.measured else self.energy.label


def _row(engine: str, step: str, results: EngineResults) -> StepRow:
    return StepRow(
        engine=engine,
        step=step,
        completed=results.completed,
        output_tok_s=results.output_throughput_tok_s,
        goodput_rps=results.goodput_rps,
        cost=cost.Cost.from_json(results.cost),
        energy=EnergyResult.from_json(results.energy),
        block=results,
    )


def _level(value: float | None) -> str:
    return f"level {value:g}" if value is not None else ""


def step_rows(kind: str, summary: JsonOut | None) -> list[StepRow]:
    """Every step of a run with a result; [] for a kind without steps (playground, parity)."""
    if kind not in KINDS_WITH_STEPS:
        return []
    if kind == RunKind.TUNE:
        rows: list[StepRow] = []
        for config in TuneSummary.from_json(summary).tuned:
            rows.extend(_row(config.label or "?", _level(level), block) for level, block in config.steps)
        return rows
    results = BenchSummary.from_json(summary)
    if results.sweep:
        labels = results.step_labels()
        return [
            _row(
                row.engine or "?",
                labels.get(row.step, f"step {row.step}") if row.step is not None else "",
                row,
            )
            for row in results.sweep
        ]
    return [_row(name, "", block) for name, block in results.engines_that_ran().items()]


def steps_frame(kind: str, summary: JsonOut | None, *, goodput: bool) -> pd.DataFrame:
    """The rows as the report shows them: cost ("not priced" without a price) and energy
    (J per output token, output tokens per J, how measured, or why not)."""
    records = []
    for row in step_rows(kind, summary):
        energy = (
            energy_columns(row.block) if row.energy is not None else {"energy measured by": NOT_RECORDED}
        )
        records.append(
            {
                "engine": row.engine,
                "step": row.step,
                "output tok/s": None if row.output_tok_s is None else round(row.output_tok_s, 1),
                **cost_columns(row.cost, goodput=goodput),
                **energy,
            }
        )
    frame = pd.DataFrame.from_records(records)
    if frame.empty:
        return frame
    if not frame["step"].astype(bool).any():
        frame = frame.drop(columns="step")
    return frame.dropna(axis="columns", how="all")


def steps_csv(run_id: int, kind: str, summary: JsonOut | None) -> bytes:
    """The steps as CSV: raw numbers (empty where there is none, never 0), with `cost` and
    `energy` saying in words why a figure is missing."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(CSV_COLUMNS)
    for row in step_rows(kind, summary):
        energy = row.energy if row.energy is not None and row.energy.measured else None
        figures = row.cost
        values: tuple[Any, ...] = (
            run_id,
            row.engine,
            row.step,
            row.completed,
            row.output_tok_s,
            row.goodput_rps,
            "priced" if figures.priced else cost.NOT_PRICED,
            figures.usd_per_hour,
            figures.usd_per_1m_output,
            figures.usd_per_1m_total,
            figures.usd_per_1m_output_goodput,
            row.energy_text,
            energy.joules if energy else None,
            energy.j_per_output_token if energy else None,
            energy.output_tokens_per_j if energy else None,
            energy.method if energy else None,
            energy.source if energy else None,
            energy.scope if energy else None,
        )
        writer.writerow([csv_cell(value) for value in values])
    return buffer.getvalue().encode("utf-8")

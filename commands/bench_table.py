"""`shootout bench`'s printed results: the table, the cost, the self-check and the caveats."""

from __future__ import annotations

from typing import Any

from services.bench.caveats import run_caveats
from services.bench.results import EngineResults
from services.bench.spec import slo_of
from services.bench.summary import BenchSummary
from services.core import units
from services.core.json_types import JsonOut
from services.telemetry.energy.records import EnergyResult


def _row(label: str, block: EngineResults, level: str = "") -> str:
    # The table's one unit for times is ms (its header says so).
    times = [
        units.to_ms(stats.at(q) if stats is not None else None)
        for stats in (block.ttft_s, block.itl_s)
        for q in ("p50", "p99")
    ]
    return (
        f"{label[:24]:24s} {level:>7} {block.completed:6d} {block.failed:6d} "
        f"{block.request_throughput_rps or 0.0:8.2f} {block.output_throughput_tok_s or 0.0:10.1f} "
        + " ".join(f"{'-':>9}" if t is None else f"{t:9.1f}" for t in times)
    )


def _level(value: Any) -> str:
    return f"{value:g}" if isinstance(value, (int, float)) else "-"


def _load_level(row: EngineResults | None, dimension: str) -> float | int | None:
    """A sweep step's level on the dimension the sweep varied; None for a single-step run."""
    if row is None:
        return None
    return row.concurrency if dimension == "concurrency" else row.rate if dimension == "rate" else None


def results_table(payload: JsonOut, config: JsonOut | None = None) -> str:
    """The results table, the self-check, then the run's caveats as every page says them
    (services.bench.caveats); the --json document stays the stored summary, caveats left out."""
    # CLI start: the bench views bring plotly and pandas (about 1 s); the table is printed after the run.
    from services.bench.view.costs import cheapest_line, cost_lines
    from services.bench.view.split import kind_labels, split_lines
    from services.bench.view.tables import energy_line, reasoning_line

    summary = BenchSummary.from_json(payload)
    sweep, dimension = summary.sweep, summary.sweep_dimension
    load = summary.load or ""
    if sweep:  # the stored load is the sweep's base; say what actually ran
        levels = list(dict.fromkeys(_level(_load_level(row, dimension)) for row in sweep))
        load = f"{dimension} {', '.join(levels)}, {load.split(', ', 1)[-1]} per step"
    lines = [f"run #{payload['run_id']} {payload['status']}: {load}, {summary.workload or ''}"]
    header = (
        f"{'engine':24s} {dimension[:7]:>7} {'done':>6} {'failed':>6} {'req/s':>8} {'out tok/s':>10} "
        f"{'TTFT p50':>9} {'TTFT p99':>9} {'ITL p50':>9} {'ITL p99':>9}  (ms)"
    )
    if sweep:
        # Every step, then each engine's chosen one (highest throughput, or the SLO search's answer).
        lines.append(
            f"steps ({'SLO search' if sweep[0].phase == 'search' else 'sweep'} over {dimension}):"
        )
        lines.append(header)
        lines += [_row(row.engine or "?", row, _level(_load_level(row, dimension))) for row in sweep]
        # Each step's energy when measured; a reason it was not is said once per engine below.
        measured = [
            f"  {row.engine or '?'} at {_level(_load_level(row, dimension))}: {line}"
            for row in sweep
            if (line := energy_line(row))
            and (step_energy := EnergyResult.from_json(row.energy)) is not None
            and step_energy.measured
        ]
        if measured:
            lines.append("energy per step:")
            lines += measured
        lines.append("per engine, the step reported as its result:")
    lines.append(header)
    for name, block in summary.engines.items():
        chosen = summary.reported_step(name)
        lines.append(_row(name, block, _level(_load_level(chosen, dimension)) if sweep else ""))
        if thinking := reasoning_line(block):
            lines.append(f"{'':24s} {thinking}")
        if energy := energy_line(block):
            lines.append(f"{'':24s} {energy}")
        if block.errors_by_class:
            errors = ", ".join(f"{k}: {v}" for k, v in sorted(block.errors_by_class.items()))
            lines.append(f"{'':24s} failures by class: {errors}")
    lines.append("cost (the price per hour the run used):")
    lines += [f"  {line}" for line in cost_lines(summary)]
    if config and (cheapest := cheapest_line(summary, slo_of(config))):
        lines.append(f"  {cheapest}")
    split = split_lines(summary, kind_labels(config))
    if split:
        lines.append("where the time went (the engine's own times; ms):")
        lines += [f"  {line}" for line in split]
    caveats = run_caveats(config, summary)
    check = caveats.self_check
    if check.state is not None:
        # The verdict and what it means first, then each load's evidence (its raw figures).
        lines.append(f"self-check: {check.title}")
        lines += [f"  {line}" for line in check.advice_lines]
        lines += [f"  evidence: {line}" for line in check.evidence_lines]
    # The notes say a short output length, an early stop and the SLO search's answer, which
    # this table said in its own words before: one wording everywhere.
    if caveats.load or caveats.notes:
        lines.append("caveats:")
        lines += [f"  {line}" for line in (*caveats.load, *caveats.notes)]
    return "\n".join(lines)

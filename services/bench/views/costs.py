"""A run's cost per engine (and per sweep step) as the Benchmarks page, the CLI table and the
exports show it: the price the run used and $ per 1M tokens from services/cost.py, which
the summary stored when the run finished. A run without a price reads "not priced", never $0."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from services import cost
from services.bench.stats import SloSpec, block_meets_slo
from services.bench.summary import BenchSummary

PRICE_COLUMN = "price ($/h)"
OUTPUT_COLUMN = "$/1M output tok"
TOTAL_COLUMN = "$/1M total tok"
GOODPUT_COLUMN = "$/1M output tok at goodput"


@dataclass(frozen=True)
class CostRow:
    engine: str
    #: The sweep step's load in words ("concurrency 4"); "" for an engine's reported result.
    step: str
    cost: cost.Cost


def cost_rows(summary: BenchSummary | dict[str, Any], *, steps: bool = False) -> list[CostRow]:
    """One row per engine that ran (its reported result), or per sweep step with `steps`."""
    results = BenchSummary.from_json(summary)
    if steps and results.sweep:
        labels = results.step_labels()
        rows = []
        for row in results.sweep:
            step = row.get("step")
            label = labels.get(step, "") if isinstance(step, int) else ""
            rows.append(
                CostRow(
                    str(row.get("engine", "?")), label, cost.Cost.from_json(row.get(cost.SUMMARY_KEY))
                )
            )
        return rows
    return [
        CostRow(name, "", cost.Cost.from_json(block.get(cost.SUMMARY_KEY)))
        for name, block in results.engines_that_ran().items()
    ]


def cost_columns(figures: cost.Cost, *, goodput: bool = True) -> dict[str, str]:
    """The cost cells of one row, as words ("not priced" for a run without a price)."""
    if not figures.priced:
        cells = dict.fromkeys((PRICE_COLUMN, OUTPUT_COLUMN, TOTAL_COLUMN), cost.NOT_PRICED)
    else:
        cells = {
            PRICE_COLUMN: f"{figures.usd_per_hour:g}",
            OUTPUT_COLUMN: cost.format_usd(figures.usd_per_1m_output),
            TOTAL_COLUMN: cost.format_usd(figures.usd_per_1m_total),
        }
    if goodput:
        cells[GOODPUT_COLUMN] = (
            cost.format_usd(figures.usd_per_1m_output_goodput) if figures.priced else cost.NOT_PRICED
        )
    return cells


def cost_table(summary: BenchSummary | dict[str, Any], *, steps: bool = False) -> pd.DataFrame:
    """One row per engine (or step): the price used and $ per 1M output, total and goodput
    output tokens; the goodput column only when the run had SLOs."""
    results = BenchSummary.from_json(summary)
    goodput = results.slo is not None
    rows = [
        {
            "engine": row.engine,
            **({"step": row.step} if steps and results.sweep else {}),
            **cost_columns(row.cost, goodput=goodput),
        }
        for row in cost_rows(results, steps=steps)
    ]
    return pd.DataFrame(rows)


def cost_lines(summary: BenchSummary | dict[str, Any]) -> list[str]:
    """The CLI's cost lines: one per engine's reported result."""
    results = BenchSummary.from_json(summary)
    goodput = results.slo is not None
    lines = []
    for row in cost_rows(results):
        cells = cost_columns(row.cost, goodput=goodput)
        if not row.cost.priced:
            lines.append(f"{row.engine}: {cost.NOT_PRICED}")
            continue
        text = f"{row.engine}: {cells[PRICE_COLUMN]} $/h, {cells[OUTPUT_COLUMN]} per 1M output tokens, {cells[TOTAL_COLUMN]} per 1M total tokens"
        if goodput:
            text += f", {cells[GOODPUT_COLUMN]} per 1M output tokens at goodput"
        lines.append(text)
    return lines


def cheapest_line(summary: BenchSummary | dict[str, Any], slo: SloSpec) -> str | None:
    """Which engine (at which step of a sweep) serves a million tokens for the least money
    while meeting the SLOs: per output token at goodput with SLOs, else per output token.
    None when nothing is priced; says so when nothing priced meets the SLOs."""
    results = BenchSummary.from_json(summary)
    blocks = results.sweep or [
        {"engine": name, **block} for name, block in results.engines_that_ran().items()
    ]
    labels = results.step_labels()
    candidates = []
    any_priced = False
    for block in blocks:
        figures = cost.Cost.from_json(block.get(cost.SUMMARY_KEY))
        any_priced = any_priced or figures.priced
        value = figures.usd_per_1m_output_goodput if slo.active else figures.usd_per_1m_output
        if value is not None and block_meets_slo(block, slo):
            step = block.get("step")
            where = f" at {labels[step]}" if isinstance(step, int) and step in labels else ""
            candidates.append((value, f"{block.get('engine', '?')}{where}"))
    if not any_priced:
        return None
    counted = "output tokens at goodput" if slo.active else "output tokens"
    if not candidates:
        return f"Cheapest meeting the SLOs: none ({slo.label()}, {slo.attainment:.0%} of requests) among the priced."
    value, where = min(candidates)
    among = "meeting the SLOs" if slo.active else "(no SLOs set)"
    return f"Cheapest {among}: {where}, {cost.format_usd(value)} per 1M {counted}."

"""A run's cost per engine (and per sweep step) as the Benchmarks page, the CLI table and the
exports show it: the price the run used and $ per 1M tokens from services/core/cost.py, which
the summary stored when the run finished. A run without a price reads "not priced", never $0."""

from __future__ import annotations

from dataclasses import dataclass, replace

import pandas as pd
import plotly.graph_objects as go

from services.bench.results import EngineResults
from services.bench.stats import SloSpec, block_meets_slo
from services.bench.summary import BenchSummary
from services.core import cost, units

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


def cost_rows(summary: BenchSummary, *, steps: bool = False) -> list[CostRow]:
    """One row per engine that ran (its reported result), or per sweep step with `steps`."""
    results = BenchSummary.from_json(summary)
    if steps and results.sweep:
        labels = results.step_labels()
        rows = []
        for row in results.sweep:
            label = labels.get(row.step, "") if row.step is not None else ""
            rows.append(CostRow(row.engine or "?", label, cost.Cost.from_json(row.cost)))
        return rows
    return [
        CostRow(name, "", cost.Cost.from_json(block.cost))
        for name, block in results.engines_that_ran().items()
    ]


#: A priced step whose requests all missed the SLOs: no token that counts, so no price per one.
NO_GOODPUT = "no goodput (no request met the SLOs)"


def cost_columns(figures: cost.Cost, *, goodput: bool = True) -> dict[str, str]:
    """The cost cells of one row, as words ("not priced" for a run without a price)."""
    if not figures.priced:
        cells = dict.fromkeys((PRICE_COLUMN, OUTPUT_COLUMN, TOTAL_COLUMN), cost.NOT_PRICED)
    else:
        cells = {
            PRICE_COLUMN: f"{figures.usd_per_hour:g}",
            OUTPUT_COLUMN: units.usd(figures.usd_per_1m_output, missing=cost.NOT_PRICED),
            TOTAL_COLUMN: units.usd(figures.usd_per_1m_total, missing=cost.NOT_PRICED),
        }
    if goodput:
        if not figures.priced:
            cells[GOODPUT_COLUMN] = cost.NOT_PRICED
        elif figures.usd_per_1m_output_goodput is None:
            # Priced, but no request met the SLOs: "not priced" here read as a missing price.
            cells[GOODPUT_COLUMN] = NO_GOODPUT
        else:
            cells[GOODPUT_COLUMN] = units.usd(figures.usd_per_1m_output_goodput, missing=cost.NOT_PRICED)
    return cells


def cost_table(summary: BenchSummary, *, steps: bool = False) -> pd.DataFrame:
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


def cost_lines(summary: BenchSummary) -> list[str]:
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
        if goodput and cells[GOODPUT_COLUMN] == NO_GOODPUT:
            text += f", {NO_GOODPUT}"
        elif goodput:
            text += f", {cells[GOODPUT_COLUMN]} per 1M output tokens at goodput"
        lines.append(text)
    return lines


def cheapest_line(summary: BenchSummary, slo: SloSpec) -> str | None:
    """Which engine (at which step of a sweep) serves a million tokens for the least money
    while meeting the SLOs: per output token at goodput with SLOs, else per output token.
    None when nothing is priced; says so when nothing priced meets the SLOs."""
    results = BenchSummary.from_json(summary)
    blocks = results.sweep or [
        replace(block, engine=name) for name, block in results.engines_that_ran().items()
    ]
    labels = results.step_labels()
    candidates = []
    any_priced = False
    for block in blocks:
        figures = cost.Cost.from_json(block.cost)
        any_priced = any_priced or figures.priced
        value = figures.usd_per_1m_output_goodput if slo.active else figures.usd_per_1m_output
        if value is not None and block_meets_slo(block, slo):
            step = block.step
            where = f" at {labels[step]}" if step is not None and step in labels else ""
            candidates.append((value, f"{block.engine or '?'}{where}"))
    if not any_priced:
        return None
    counted = "output tokens at goodput" if slo.active else "output tokens"
    if not candidates:
        return f"Cheapest meeting the SLOs: none ({slo.label()}, {slo.attainment:.0%} of requests) among the priced."
    value, where = min(candidates)
    among = "meeting the SLOs" if slo.active else "(no SLOs set)"
    return f"Cheapest {among}: {where}, {units.usd(value, missing=cost.NOT_PRICED)} per 1M {counted}."


@dataclass(frozen=True)
class CostPoint:
    """One engine's step (or one tune configuration at one level): what a user sees of its
    speed against what a million tokens cost."""

    series: str
    label: str
    per_user_tok_s: float
    usd_per_1m: float


def per_user_tok_s(block: EngineResults) -> float | None:
    """A user's output tokens per second: 1 / median TPOT (InferenceX's "interactivity")."""
    median = block.tpot_s.p50 if block.tpot_s is not None else None
    return 1.0 / median if median is not None and median > 0 else None


def cost_point(series: str, label: str, block: EngineResults) -> CostPoint | None:
    """The point of a priced block with a TPOT; None otherwise (not priced is not $0)."""
    speed = per_user_tok_s(block)
    usd = cost.Cost.from_json(block.cost).usd_per_1m_output
    if speed is None or usd is None or not block.completed:
        return None
    return CostPoint(series, label, speed, usd)


def cost_frontier(points: list[CostPoint]) -> list[CostPoint]:
    """The points no other beats on both axes (as fast for a user or faster, and as cheap or
    cheaper, one strictly), by speed: the choices worth paying for."""
    front = [
        p
        for p in points
        if not any(
            o.per_user_tok_s >= p.per_user_tok_s
            and o.usd_per_1m <= p.usd_per_1m
            and (o.per_user_tok_s > p.per_user_tok_s or o.usd_per_1m < p.usd_per_1m)
            for o in points
        )
    ]
    return sorted(front, key=lambda p: p.per_user_tok_s)


def sweep_cost_points(summary: BenchSummary) -> list[CostPoint]:
    """A sweep's priced steps, one series per engine (a single-step run: one point per engine)."""
    results = BenchSummary.from_json(summary)
    labels = results.step_labels()
    if results.sweep:
        found = [
            cost_point(
                row.engine or "?",
                f"{row.engine or '?'} {labels.get(row.step, '')}".strip()
                if row.step is not None
                else row.engine or "?",
                row,
            )
            for row in results.sweep
        ]
    else:
        found = [cost_point(name, name, block) for name, block in results.engines_that_ran().items()]
    return [p for p in found if p is not None]


def cost_frontier_figure(points: list[CostPoint]) -> go.Figure | None:
    """$ per 1M output tokens against tokens/s per user, one series per engine (or
    configuration), the frontier across them drawn as a line; None with fewer than two points."""
    if len(points) < 2:
        return None
    figure = go.Figure()
    by_series: dict[str, list[CostPoint]] = {}
    for point in points:
        by_series.setdefault(point.series, []).append(point)
    for name, mine in by_series.items():
        mine = sorted(mine, key=lambda p: p.per_user_tok_s)
        figure.add_trace(
            go.Scatter(
                x=[p.per_user_tok_s for p in mine],
                y=[p.usd_per_1m for p in mine],
                mode="markers",
                name=name,
                text=[p.label for p in mine],
                hovertemplate="%{text}<br>%{x:.1f} tok/s per user, $%{y:.4f} per 1M output tokens",
            )
        )
    front = cost_frontier(points)
    figure.add_trace(
        go.Scatter(
            x=[p.per_user_tok_s for p in front],
            y=[p.usd_per_1m for p in front],
            mode="lines",
            name="frontier",
            line={"dash": "dot", "color": "#444"},
            hoverinfo="skip",
        )
    )
    figure.update_layout(
        title="Cost against speed per user (lower right is better)",
        xaxis_title="output tokens/s per user (1 / median TPOT)",
        yaxis_title="$ per 1M output tokens",
        height=380,
        margin={"t": 40, "b": 40},
        uirevision="constant",
    )
    return figure

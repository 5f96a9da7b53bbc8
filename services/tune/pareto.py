"""The trade-off of a tuning run: which configurations no other beats on both throughput and
latency (the Pareto front), and which one wins under the SLOs, with its reason in one line.

Pure functions over plain numbers, so tests pin exact fixtures.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from services.bench.results import EngineResults
from services.bench.stats import SloSpec, block_meets_slo
from services.core import cost, units
from services.telemetry.energy.records import EnergyResult, format_energy
from services.tune.summary import TuneConfigEntry, TunedConfig, tuned_configs

#: A configuration's entry as stored (its label, status, metrics, sweep), or as read.
Entry = TuneConfigEntry | TunedConfig


@dataclass(frozen=True)
class Point:
    """One measured configuration (at one load level, for a sweep)."""

    label: str
    config: str
    throughput: float
    latency: float


def pareto_front(points: Sequence[Point]) -> list[Point]:
    """The points that no other point dominates (throughput at least as high AND latency at
    least as low, one of them strictly), by latency then throughput. Equal points are all kept."""
    front = []
    for point in points:
        dominated = any(
            other.throughput >= point.throughput
            and other.latency <= point.latency
            and (other.throughput > point.throughput or other.latency < point.latency)
            for other in points
        )
        if not dominated:
            front.append(point)
    return sorted(front, key=lambda p: (p.latency, -p.throughput))


def _p90(block: EngineResults, metric: str) -> float | None:
    stats = block.latency(metric)
    return stats.p90 if stats is not None else None


def points_of(results: Sequence[Entry], latency_metric: str) -> list[Point]:
    """Points (output tokens/s against p90 of `latency_metric`) of the configurations that ran:
    one per configuration, or one per load level of a sweep."""
    points = []
    for result in tuned_configs(results):
        for level, block in result.steps:
            throughput = block.output_throughput_tok_s
            latency = _p90(block, latency_metric)
            if throughput is None or latency is None or not block.completed:
                continue
            label = result.label + (f" @ {level:g}" if level is not None else "")
            points.append(
                Point(label=label, config=result.label, throughput=throughput, latency=latency)
            )
    return points


@dataclass(frozen=True)
class Choice:
    label: str | None
    reason: str


def meets(block: EngineResults, slo: SloSpec) -> bool:
    return block_meets_slo(block, slo)


def _ran(results: Sequence[Entry]) -> list[tuple[TunedConfig, EngineResults]]:
    """The configurations that completed a request, each with its results."""
    return [
        (result, result.metrics)
        for result in tuned_configs(results)
        if result.metrics is not None and result.metrics.completed
    ]


def best_configuration(results: Sequence[Entry], slo: SloSpec) -> Choice:
    """The configuration with the highest goodput among those meeting the SLOs (with no SLOs:
    the highest output throughput), ties to the lower p90 TTFT; None when none qualifies."""
    ran = _ran(results)
    if not ran:
        return Choice(None, "No configuration completed a request.")
    qualifying = [(r, block) for r, block in ran if meets(block, slo)]
    if not qualifying:
        closest, block = max(ran, key=lambda pair: pair[1].slo_attainment or 0.0)
        share = block.slo_attainment or 0.0
        return Choice(
            None,
            f"No configuration met the SLOs ({slo.label()}, {slo.attainment:.0%} of requests); the "
            f"closest was {closest.label} with {share:.0%}.",
        )

    def ranked(block: EngineResults) -> float:
        return (block.goodput_rps if slo.active else block.output_throughput_tok_s) or 0.0

    def rank(pair: tuple[TunedConfig, EngineResults]) -> tuple[float, float]:
        block = pair[1]
        return (ranked(block), -(_p90(block, "ttft_s") or float("inf")))

    ordered = sorted(qualifying, key=rank, reverse=True)
    winner, winning = ordered[0]
    value = ranked(winning)
    measure, unit = ("goodput", "req/s") if slo.active else ("output throughput", "tok/s")
    among = (
        f"of the {len(qualifying)} configurations meeting {slo.label()}"
        if slo.active
        else f"of {len(ran)} configurations (no SLOs set)"
    )
    reason = f"{winner.label}: the highest {measure} ({value:.3g} {unit}) {among}"
    if len(ordered) > 1:
        runner_up, behind = ordered[1]
        reason += f"; next {runner_up.label} at {ranked(behind):.3g}"
    return Choice(winner.label, reason + ".")


def cost_figure(block: EngineResults, with_slos: bool) -> tuple[float | None, str]:
    """A configuration's cost per 1M output tokens as stored with it, and what it counts: at
    goodput (the tokens within the SLOs) when SLOs are set, else every output token."""
    figures = cost.Cost.from_json(block.cost)
    if with_slos:
        return figures.usd_per_1m_output_goodput, "output tokens at goodput"
    return figures.usd_per_1m_output, "output tokens"


def energy_figure(block: EngineResults) -> tuple[float | None, str]:
    """A configuration's joules per output token as stored with it, and in words: "0.13 J",
    "not measured here: <reason>", or "" for a run from before energy (never 0 J)."""
    energy = EnergyResult.from_json(block.energy)
    if energy is None:
        return None, ""
    if not energy.measured:
        return None, energy.label
    value = energy.j_per_output_token
    return value, format_energy("j_per_output_token", value)


def cheapest_configuration(results: Sequence[Entry], slo: SloSpec) -> Choice:
    """The configuration with the lowest cost per 1M output tokens (at goodput with SLOs) among
    those meeting the SLOs; None, saying why, when none qualifies or the run had no price."""
    qualifying = [(r, block) for r, block in _ran(results) if meets(block, slo)]
    if not qualifying:
        return Choice(None, "No configuration met the SLOs, so none is the cheapest that does.")
    priced = [(cost_figure(block, slo.active)[0], r, block) for r, block in qualifying]
    known = [(value, r, block) for value, r, block in priced if value is not None]
    if not known:
        return Choice(None, f"Cost per 1M tokens: {cost.NOT_PRICED} (give a price per hour).")
    value, winner, winning = min(known, key=lambda found: found[0])
    counted = cost_figure(winning, slo.active)[1]
    among = f"meeting {slo.label()}" if slo.active else "(no SLOs set)"
    joules, energy = energy_figure(winning)
    energy = (
        f"; {energy} per output token"
        if joules is not None
        else (f"; energy {energy}" if energy else "")
    )
    return Choice(
        winner.label,
        f"{winner.label}: the cheapest of the {len(known)} configurations {among}, "
        f"{units.usd(value, missing=cost.NOT_PRICED)} per 1M {counted}{energy}.",
    )

"""The trade-off of a tuning run: which configurations no other beats on both throughput and
latency (the Pareto front), and which one wins under the SLOs, with its reason in one line.

Pure functions over plain numbers, so tests pin exact fixtures.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from services.bench.stats import SloSpec, block_meets_slo
from services.core import cost
from services.telemetry.energy.records import EnergyResult, format_energy


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


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _p90(block: dict[str, Any], metric: str) -> float | None:
    stats = block.get(metric)
    return _number(stats.get("p90")) if isinstance(stats, dict) else None


def points_of(results: Sequence[dict[str, Any]], latency_metric: str) -> list[Point]:
    """Points (output tokens/s against p90 of `latency_metric`) of the configurations that ran:
    one per configuration, or one per load level of a sweep."""
    points = []
    for result in results:
        blocks = result.get("sweep") or ([result["metrics"]] if result.get("metrics") else [])
        for block in blocks:
            throughput = _number(block.get("output_throughput_tok_s"))
            latency = _p90(block, latency_metric)
            if throughput is None or latency is None or not block.get("completed"):
                continue
            level = block.get("level")
            label = result["label"] + (f" @ {level:g}" if isinstance(level, (int, float)) else "")
            points.append(
                Point(label=label, config=result["label"], throughput=throughput, latency=latency)
            )
    return points


@dataclass(frozen=True)
class Choice:
    label: str | None
    reason: str


def meets(block: dict[str, Any], slo: SloSpec) -> bool:
    return block_meets_slo(block, slo)


def best_configuration(results: Sequence[dict[str, Any]], slo: SloSpec) -> Choice:
    """The configuration with the highest goodput among those meeting the SLOs (with no SLOs:
    the highest output throughput), ties to the lower p90 TTFT; None when none qualifies."""
    ran = [r for r in results if r.get("metrics") and r["metrics"].get("completed")]
    if not ran:
        return Choice(None, "No configuration completed a request.")
    qualifying = [r for r in ran if meets(r["metrics"], slo)]
    if not qualifying:
        closest = max(ran, key=lambda r: _number(r["metrics"].get("slo_attainment")) or 0.0)
        share = _number(closest["metrics"].get("slo_attainment")) or 0.0
        return Choice(
            None,
            f"No configuration met the SLOs ({slo.label()}, {slo.attainment:.0%} of requests); the "
            f"closest was {closest['label']} with {share:.0%}.",
        )
    key = "goodput_rps" if slo.active else "output_throughput_tok_s"

    def rank(result: dict[str, Any]) -> tuple[float, float]:
        block = result["metrics"]
        return (_number(block.get(key)) or 0.0, -(_p90(block, "ttft_s") or float("inf")))

    ordered = sorted(qualifying, key=rank, reverse=True)
    winner = ordered[0]
    value = _number(winner["metrics"].get(key)) or 0.0
    measure, unit = ("goodput", "req/s") if slo.active else ("output throughput", "tok/s")
    among = (
        f"of the {len(qualifying)} configurations meeting {slo.label()}"
        if slo.active
        else f"of {len(ran)} configurations (no SLOs set)"
    )
    reason = f"{winner['label']}: the highest {measure} ({value:.3g} {unit}) {among}"
    if len(ordered) > 1:
        runner_up = ordered[1]
        reason += f"; next {runner_up['label']} at {_number(runner_up['metrics'].get(key)) or 0.0:.3g}"
    return Choice(winner["label"], reason + ".")


def cost_figure(block: dict[str, Any], with_slos: bool) -> tuple[float | None, str]:
    """A configuration's cost per 1M output tokens as stored with it, and what it counts: at
    goodput (the tokens within the SLOs) when SLOs are set, else every output token."""
    figures = cost.Cost.from_json(block.get(cost.SUMMARY_KEY))
    if with_slos:
        return figures.usd_per_1m_output_goodput, "output tokens at goodput"
    return figures.usd_per_1m_output, "output tokens"


def energy_figure(block: dict[str, Any]) -> tuple[float | None, str]:
    """A configuration's joules per output token as stored with it, and in words: "0.13 J",
    "not measured here: <reason>", or "" for a run from before energy (never 0 J)."""
    energy = EnergyResult.from_json(block.get("energy"))
    if energy is None:
        return None, ""
    if not energy.measured:
        return None, energy.label
    value = energy.j_per_output_token
    return value, format_energy("j_per_output_token", value)


def cheapest_configuration(results: Sequence[dict[str, Any]], slo: SloSpec) -> Choice:
    """The configuration with the lowest cost per 1M output tokens (at goodput with SLOs) among
    those meeting the SLOs; None, saying why, when none qualifies or the run had no price."""
    qualifying = [
        r
        for r in results
        if r.get("metrics") and r["metrics"].get("completed") and meets(r["metrics"], slo)
    ]
    if not qualifying:
        return Choice(None, "No configuration met the SLOs, so none is the cheapest that does.")
    priced = [(cost_figure(r["metrics"], slo.active)[0], r) for r in qualifying]
    known = [(value, r) for value, r in priced if value is not None]
    if not known:
        return Choice(None, f"Cost per 1M tokens: {cost.NOT_PRICED} (give a price per hour).")
    value, winner = min(known, key=lambda pair: pair[0])
    counted = cost_figure(winner["metrics"], slo.active)[1]
    among = f"meeting {slo.label()}" if slo.active else "(no SLOs set)"
    joules, energy = energy_figure(winner["metrics"])
    energy = (
        f"; {energy} per output token"
        if joules is not None
        else (f"; energy {energy}" if energy else "")
    )
    return Choice(
        winner["label"],
        f"{winner['label']}: the cheapest of the {len(known)} configurations {among}, "
        f"{cost.format_usd(value)} per 1M {counted}{energy}.",
    )

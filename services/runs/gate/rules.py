"""The gate's thresholds: `--fail-on "ttft_p90:+10%,output_tok_s:-5%"` read into records.

A latency threshold is a rise (`+N%`: fail when the candidate is more than N% slower), a
throughput threshold a fall (`-N%`); cost and joules per output token rise, output tokens per
joule fall. Anything else is a `GateSyntaxError` whose message says
what was expected (the CLI exits 2 with it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from services.core.errors import ValidationError
from services.runs.records import (
    COST_METRICS,
    ENERGY_METRICS,
    LATENCY_METRICS,
    STAT_LABELS,
    TABLE_STATS,
    THROUGHPUT_METRICS,
)

#: Short names of the throughput metrics, as --fail-on writes them.
THROUGHPUT_NAMES: dict[str, str] = {
    "output_tok_s": "output_throughput_tok_s",
    "total_tok_s": "total_token_throughput_tok_s",
    "request_rps": "request_throughput_rps",
    "goodput_rps": "goodput_rps",
}
#: What a million tokens cost at the run's stored price (services/core/cost.py): a rise is the regression.
COST_NAMES: dict[str, str] = {
    "usd_1m_output": "usd_per_1m_output",
    "usd_1m_total": "usd_per_1m_total",
    "usd_1m_goodput": "usd_per_1m_output_goodput",
}
#: Energy over each step's window as each run stored it (services/telemetry/energy): joules per
#: output token regress by rising, output tokens per joule by falling. A run whose energy was not
#: measured has no figure, so its check reads "not measured", never a change from 0.
ENERGY_NAMES: dict[str, str] = {
    "j_per_output_token": "j_per_output_token",
    "output_tok_per_j": "output_tokens_per_j",
}
LATENCY_NAMES: dict[str, str] = {metric.removesuffix("_s"): metric for metric in LATENCY_METRICS}
_ITEM = re.compile(r"^(?P<name>[a-z0-9_]+):(?P<sign>[+-])(?P<limit>\d+(?:\.\d+)?)%$")
EXAMPLE = "ttft_p90:+10%,output_tok_s:-5%"


class GateSyntaxError(ValidationError):
    """A --fail-on that does not read: exit 2, as bad arguments do."""


@dataclass(frozen=True)
class Threshold:
    """One check: `metric` (a summary metric), `stat` (None for a throughput), the direction a
    regression goes (+1: up, -1: down) and how far it may go, per cent."""

    name: str
    metric: str
    stat: str | None
    direction: int
    limit_pct: float

    @property
    def text(self) -> str:
        return f"{self.name}:{'+' if self.direction > 0 else '-'}{self.limit_pct:g}%"

    @property
    def label(self) -> str:
        if self.metric in COST_METRICS:
            return COST_METRICS[self.metric]
        if self.metric in ENERGY_METRICS:
            return ENERGY_METRICS[self.metric][0]
        if self.stat is None:
            return THROUGHPUT_METRICS[self.metric][0]
        return f"{LATENCY_METRICS[self.metric]} {STAT_LABELS[self.stat]}"

    def breached(self, change_pct: float) -> bool:
        return change_pct * self.direction > self.limit_pct


def known_names() -> list[str]:
    latencies = [f"{short}_{stat}" for short in LATENCY_NAMES for stat in TABLE_STATS]
    return [*latencies, *THROUGHPUT_NAMES, *COST_NAMES, *ENERGY_NAMES]


def _threshold(item: str) -> Threshold:
    found = _ITEM.match(item)
    if not found:
        raise GateSyntaxError(
            f"--fail-on: {item!r} is not METRIC:+N% or METRIC:-N% (for example {EXAMPLE})."
        )
    name, sign, limit = found["name"], found["sign"], float(found["limit"])
    direction = 1 if sign == "+" else -1
    if name in THROUGHPUT_NAMES:
        metric, stat, worse = THROUGHPUT_NAMES[name], None, -1
    elif name in COST_NAMES:
        metric, stat, worse = COST_NAMES[name], None, 1
    elif name in ENERGY_NAMES:
        metric, stat = ENERGY_NAMES[name], None
        # Higher is better for tokens per joule: a fall is the regression.
        worse = -1 if ENERGY_METRICS[metric][2] else 1
    else:
        short, _, stat_name = name.rpartition("_")
        if short not in LATENCY_NAMES or stat_name not in TABLE_STATS:
            raise GateSyntaxError(
                f"--fail-on: unknown metric {name!r}; known: {', '.join(known_names())}."
            )
        metric, stat, worse = LATENCY_NAMES[short], stat_name, 1
    if direction != worse:
        way = "a rise: write +N%" if worse > 0 else "a fall: write -N%"
        raise GateSyntaxError(f"--fail-on: {name} gets worse by {way} (got {item!r}).")
    return Threshold(name=name, metric=metric, stat=stat, direction=direction, limit_pct=limit)


def parse_fail_on(text: str | None) -> list[Threshold]:
    """`"ttft_p90:+10%,output_tok_s:-5%"` -> its thresholds, in order."""
    items = [part.strip() for part in (text or "").split(",") if part.strip()]
    if not items:
        raise GateSyntaxError(f"--fail-on is empty; give checks such as {EXAMPLE}.")
    thresholds = [_threshold(item.lower()) for item in items]
    names = [t.name for t in thresholds]
    if len(set(names)) != len(names):
        raise GateSyntaxError("--fail-on names a metric twice.")
    return thresholds

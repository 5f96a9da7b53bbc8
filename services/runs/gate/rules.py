"""The gate's thresholds: `--fail-on "ttft_p90:+10%,output_tok_s:-5%"` read into records.

A latency threshold is a rise (`+N%`: fail when the candidate is more than N% slower), a
throughput threshold a fall (`-N%`); cost and joules per output token rise, output tokens per
joule fall. Failed requests are `error_rate:+Npp` (a rise) and `success_rate:-Npp` (a fall), in
absolute percentage points (`%` reads the same there): a clean baseline has no errors, so a
relative change means nothing. A check ending in `?` is optional: a figure missing on either side
skips it instead of failing the gate. Anything else is a `GateSyntaxError` whose message says
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
#: Failed requests, in absolute percentage points of the measured requests: the error share
#: regresses by rising, the success share by falling.
REQUEST_NAMES: dict[str, str] = {"error_rate": "error_rate", "success_rate": "success_rate"}
REQUEST_LABELS: dict[str, str] = {"error_rate": "Error rate", "success_rate": "Success rate"}
LATENCY_NAMES: dict[str, str] = {metric.removesuffix("_s"): metric for metric in LATENCY_METRICS}
_ITEM = re.compile(
    r"^(?P<name>[a-z0-9_]+):(?P<sign>[+-])(?P<limit>\d+(?:\.\d+)?)(?P<unit>%|pp)(?P<optional>\?)?$"
)
EXAMPLE = "ttft_p90:+10%,output_tok_s:-5%"
#: The error check every gate makes although --fail-on does not name it: more than one failed
#: request in a hundred beyond the baseline's fails. Optional (a run that did not count its
#: failures skips it); naming error_rate replaces it.
DEFAULT_ERROR_LIMIT_PP = 1.0


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
    #: Written with `?`: a figure missing on either side skips the check (else: not measured fails).
    optional: bool = False
    #: Added by the gate, not named in --fail-on (the default error check).
    implicit: bool = False

    @property
    def points(self) -> bool:
        """Its limit is in absolute percentage points (failed requests), not a relative change."""
        return self.metric in REQUEST_NAMES

    @property
    def limit_text(self) -> str:
        return f"{'+' if self.direction > 0 else '-'}{self.limit_pct:g}{'pp' if self.points else '%'}"

    @property
    def text(self) -> str:
        return f"{self.name}:{self.limit_text}{'?' if self.optional else ''}"

    @property
    def label(self) -> str:
        if self.metric in REQUEST_LABELS:
            return REQUEST_LABELS[self.metric]
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
    return [*latencies, *THROUGHPUT_NAMES, *COST_NAMES, *ENERGY_NAMES, *REQUEST_NAMES]


def _threshold(item: str) -> Threshold:
    found = _ITEM.match(item)
    if not found:
        raise GateSyntaxError(
            f"--fail-on: {item!r} is not METRIC:+N% or METRIC:-N% (for example {EXAMPLE}; "
            "a trailing ? makes a check optional)."
        )
    name, sign, limit = found["name"], found["sign"], float(found["limit"])
    direction = 1 if sign == "+" else -1
    if found["unit"] == "pp" and name not in REQUEST_NAMES:
        raise GateSyntaxError(
            f"--fail-on: {name} takes a relative limit (N%); percentage points (pp) are for "
            f"error_rate and success_rate (got {item!r})."
        )
    if name in REQUEST_NAMES:
        metric, stat, worse = REQUEST_NAMES[name], None, 1 if name == "error_rate" else -1
    elif name in THROUGHPUT_NAMES:
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
    return Threshold(
        name=name,
        metric=metric,
        stat=stat,
        direction=direction,
        limit_pct=limit,
        optional=found["optional"] is not None,
    )


def default_error_check() -> Threshold:
    """The error check a gate makes when --fail-on names neither error_rate nor success_rate."""
    return Threshold(
        name="error_rate",
        metric="error_rate",
        stat=None,
        direction=1,
        limit_pct=DEFAULT_ERROR_LIMIT_PP,
        optional=True,
        implicit=True,
    )


def with_default_checks(thresholds: list[Threshold]) -> list[Threshold]:
    """The named checks, and the default error check unless failed requests are named."""
    if any(t.metric in REQUEST_NAMES for t in thresholds):
        return list(thresholds)
    return [*thresholds, default_error_check()]


def parse_fail_on(text: str | None) -> list[Threshold]:
    """`"ttft_p90:+10%,output_tok_s:-5%"` -> its thresholds, in order (the default error check is
    added by the gate, `with_default_checks`)."""
    items = [part.strip() for part in (text or "").split(",") if part.strip()]
    if not items:
        raise GateSyntaxError(f"--fail-on is empty; give checks such as {EXAMPLE}.")
    thresholds = [_threshold(item.lower()) for item in items]
    names = [t.name for t in thresholds]
    if len(set(names)) != len(names):
        raise GateSyntaxError("--fail-on names a metric twice.")
    return thresholds

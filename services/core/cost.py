"""The one definition of cost: dollars per million tokens from a price per hour and a throughput.

An hour at `usd_per_hour` serves `tokens_per_s * 3600` tokens, so a million tokens cost
`usd_per_hour * 1e6 / (tokens_per_s * 3600)`. The goodput variant divides by the rate of the
tokens of requests that met every SLO over the same duration: the cost of the tokens that count.
No price (or no throughput) is None, shown as "not priced", never 0: a free-looking engine would
win every comparison. This module imports no feature; the benchmark summary, exports and views
call it (docs/measuring.md, "Cost").
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from services.core import units
from services.core.errors import ValidationError
from services.core.json_types import JsonOut

SECONDS_PER_HOUR = 3600.0
PER_TOKENS = 1_000_000.0
#: Above this an hourly price is more likely a monthly or yearly one typed in the wrong field.
MAX_USD_PER_HOUR = 10_000.0
NOT_PRICED = "not priced"

#: The summary block's key for a step's cost (format in docs/cli-formats.md).
SUMMARY_KEY = "cost"


def usd_per_million(usd_per_hour: float | None, tokens_per_s: float | None) -> float | None:
    """Dollars per 1M tokens at `tokens_per_s`; None without a price or a positive throughput."""
    if usd_per_hour is None or tokens_per_s is None:
        return None
    if not (math.isfinite(usd_per_hour) and math.isfinite(tokens_per_s)) or tokens_per_s <= 0:
        return None
    return usd_per_hour * PER_TOKENS / (tokens_per_s * SECONDS_PER_HOUR)


@dataclass(frozen=True)
class Cost:
    """One step's cost: the price the run used and what a million tokens cost at it."""

    usd_per_hour: float | None = None
    usd_per_1m_output: float | None = None
    usd_per_1m_total: float | None = None
    #: Only the output tokens of requests within the SLOs; None without SLOs or a price.
    usd_per_1m_output_goodput: float | None = None

    @property
    def priced(self) -> bool:
        return self.usd_per_hour is not None

    def to_json(self) -> JsonOut:
        return {
            "usd_per_hour": self.usd_per_hour,
            "usd_per_1m_output": self.usd_per_1m_output,
            "usd_per_1m_total": self.usd_per_1m_total,
            "usd_per_1m_output_goodput": self.usd_per_1m_output_goodput,
        }

    @classmethod
    def from_json(cls, data: Any) -> Cost:
        """Whatever a summary stored (nothing, for a run from before prices): never raises."""
        data = data if isinstance(data, dict) else {}
        return cls(**{key: units.number(data.get(key)) for key in cls().to_json()})


def cost_of(
    usd_per_hour: float | None,
    *,
    output_tok_s: float | None,
    total_tok_s: float | None,
    goodput_output_tok_s: float | None = None,
) -> Cost:
    """A step's cost from its measured throughputs (tokens/s over the step's duration)."""
    return Cost(
        usd_per_hour=usd_per_hour,
        usd_per_1m_output=usd_per_million(usd_per_hour, output_tok_s),
        usd_per_1m_total=usd_per_million(usd_per_hour, total_tok_s),
        usd_per_1m_output_goodput=usd_per_million(usd_per_hour, goodput_output_tok_s),
    )


def cost_of_block(usd_per_hour: float | None, block: JsonOut) -> Cost:
    """A summary block's cost, from the throughputs services/bench/stats.py wrote in it (the
    block as JSON: services/core cannot name its record)."""
    return cost_of(
        usd_per_hour,
        output_tok_s=units.number(block.get("output_throughput_tok_s")),
        total_tok_s=units.number(block.get("total_token_throughput_tok_s")),
        goodput_output_tok_s=units.number(block.get("goodput_output_tok_s")),
    )


_PLAIN_NUMBER = re.compile(r"^\s*[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?\s*$")


def parse_usd_per_hour(text: str | float | None) -> float | None:
    """A price per hour from a flag or a form field: empty is no price (None); anything else must
    be a plain positive number of dollars per hour. Raises ValidationError with a message for
    the user on a currency-formatted string, a non-positive or an absurd price."""
    if text is None:
        return None
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value = float(text)
        shown = f"{text}"
    else:
        shown = str(text).strip()
        if not shown:
            return None
        if not _PLAIN_NUMBER.match(shown):
            raise ValidationError(
                f"Price per hour {shown!r} is not a plain number: give dollars per hour with a "
                "dot for decimals and no currency sign or thousands separator (e.g. 3.50)."
            )
        value = float(shown)
    if not math.isfinite(value) or value <= 0:
        raise ValidationError(
            f"Price per hour {shown} must be above 0 dollars per hour (leave it empty for no price)."
        )
    if value > MAX_USD_PER_HOUR:
        raise ValidationError(
            f"Price {shown} $/h is above {MAX_USD_PER_HOUR:,.0f} $/h: is it really per hour "
            "(not per month or year)? Give the hourly price."
        )
    return value

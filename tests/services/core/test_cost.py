"""services/core/cost.py: the one definition of $ per 1M tokens, and the price a user types."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from services.core import cost, units
from services.core.errors import ValidationError

prices = st.floats(min_value=0.01, max_value=cost.MAX_USD_PER_HOUR)
rates = st.floats(min_value=0.01, max_value=1e6)
durations = st.floats(min_value=0.1, max_value=1e5)


@given(prices, rates, durations)
def test_cost_times_tokens_over_duration_is_the_hourly_price(
    price: float, rate: float, seconds: float
) -> None:
    per_million = cost.usd_per_million(price, rate)
    assert per_million is not None
    tokens = rate * seconds
    spent = per_million * tokens / cost.PER_TOKENS
    assert math.isclose(spent / seconds * cost.SECONDS_PER_HOUR, price, rel_tol=1e-9)


@given(prices, prices, rates)
def test_cost_is_monotonic_in_price(a: float, b: float, rate: float) -> None:
    low, high = sorted((a, b))
    assert cost.usd_per_million(low, rate) <= cost.usd_per_million(high, rate)  # type: ignore[operator]


@given(prices, rates, rates)
def test_cost_falls_as_throughput_rises(price: float, a: float, b: float) -> None:
    slow, fast = sorted((a, b))
    assert cost.usd_per_million(price, fast) <= cost.usd_per_million(price, slow)  # type: ignore[operator]


@given(st.one_of(st.none(), rates))
def test_no_price_is_none_never_zero(rate: float | None) -> None:
    assert cost.usd_per_million(None, rate) is None
    figures = cost.cost_of(None, output_tok_s=rate, total_tok_s=rate, goodput_output_tok_s=rate)
    assert figures == cost.Cost()
    assert not figures.priced
    assert units.usd(figures.usd_per_1m_output, missing=cost.NOT_PRICED) == "not priced"


@pytest.mark.parametrize("rate", [None, 0.0, -1.0, math.inf, math.nan])
def test_no_throughput_is_none(rate: float | None) -> None:
    assert cost.usd_per_million(2.0, rate) is None


def test_one_hour_of_a_known_step() -> None:
    # 2 $/h at 1000 output tok/s: 3.6M tokens an hour, so 1M cost 2/3.6 dollars.
    block = {
        "output_throughput_tok_s": 1000.0,
        "total_token_throughput_tok_s": 4000.0,
        "goodput_output_tok_s": 500.0,
    }
    figures = cost.cost_of_block(2.0, block)
    assert figures.usd_per_hour == 2.0
    assert figures.usd_per_1m_output == pytest.approx(2 / 3.6)
    assert figures.usd_per_1m_total == pytest.approx(2 / 14.4)
    assert figures.usd_per_1m_output_goodput == pytest.approx(4 / 3.6)
    assert cost.Cost.from_json(figures.to_json()) == figures


def test_goodput_cost_is_none_without_slos() -> None:
    block = {
        "output_throughput_tok_s": 10.0,
        "total_token_throughput_tok_s": 20.0,
        "goodput_output_tok_s": None,
    }
    assert cost.cost_of_block(1.0, block).usd_per_1m_output_goodput is None


@pytest.mark.parametrize("stored", [None, {}, "x", {"usd_per_hour": "3", "usd_per_1m_output": True}])
def test_from_json_never_raises(stored: object) -> None:
    assert cost.Cost.from_json(stored) == cost.Cost()


@pytest.mark.parametrize(
    ("text", "value"), [("3.5", 3.5), (" 2 ", 2.0), ("1e2", 100.0), ("", None), (None, None), (4, 4.0)]
)
def test_parse_price(text: str | float | None, value: float | None) -> None:
    assert cost.parse_usd_per_hour(text) == value


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("$3.50", "not a plain number"),
        ("3,50", "not a plain number"),
        ("1,000", "not a plain number"),
        ("3.50 USD", "not a plain number"),
        ("-1", "above 0"),
        ("0", "above 0"),
        (0.0, "above 0"),
        ("inf", "not a plain number"),
        ("20000", "really per hour"),
        (1e9, "really per hour"),
    ],
)
def test_bad_prices_say_why(text: str | float, says: str) -> None:
    with pytest.raises(ValidationError, match=says):
        cost.parse_usd_per_hour(text)


def test_format() -> None:
    assert units.usd(None, missing=cost.NOT_PRICED) == "not priced"
    assert units.usd(0.5) == "$0.5000"
    assert units.usd(1234.5) == "$1,234.50"

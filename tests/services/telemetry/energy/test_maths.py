"""The energy arithmetic: counter deltas with wrap-around, power integration, per token."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from services.telemetry.energy.maths import energy_per_token, integrate_power, joules_between


def test_a_counter_that_rose_gives_its_difference() -> None:
    assert joules_between(1000.5, 1250.0) == 249.5
    assert joules_between(7.0, 7.0) == 0.0


def test_a_counter_with_a_range_wraps_once() -> None:
    # RAPL: 262143.328850 J range; read near its top, then just past 0.
    assert joules_between(262_100.0, 40.0, wrap_j=262_143.32885) == pytest.approx(83.32885)


def test_a_counter_without_a_range_that_went_down_was_reset_not_measured() -> None:
    assert joules_between(5000.0, 10.0) is None
    assert joules_between(5000.0, 10.0, wrap_j=1000.0) is None  # start past the range: not a wrap


@given(
    wrap=st.floats(min_value=1.0, max_value=1e6),
    start_share=st.floats(min_value=0.0, max_value=1.0),
    spent_share=st.floats(min_value=0.0, max_value=0.999),
)
def test_wrapping_round_trips(wrap: float, start_share: float, spent_share: float) -> None:
    start, spent = wrap * start_share, wrap * spent_share
    end = (start + spent) % wrap
    assert joules_between(start, end, wrap) == pytest.approx(spent, abs=1e-6 * wrap)


def test_power_samples_integrate_by_the_trapezoid_rule() -> None:
    assert integrate_power([(0.0, 100.0), (1.0, 300.0), (3.0, 300.0)]) == 200.0 + 600.0
    assert integrate_power([(5.0, 100.0)]) == 0.0
    assert integrate_power([]) == 0.0


def test_per_token_figures_and_their_absence() -> None:
    both = energy_per_token(120.0, 400)
    assert (both.j_per_output_token, both.output_tokens_per_j) == (0.3, 400 / 120)
    for joules, tokens in ((None, 400), (120.0, None), (120.0, 0), (-1.0, 10)):
        missing = energy_per_token(joules, tokens)
        assert (missing.j_per_output_token, missing.output_tokens_per_j) == (None, None)
    idle = energy_per_token(0.0, 10)
    assert (idle.j_per_output_token, idle.output_tokens_per_j) == (0.0, None)

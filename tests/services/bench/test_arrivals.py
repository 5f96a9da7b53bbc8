"""Arrival processes and load shapes: seeded, exact, and the ramp keeps the process's shape."""

from __future__ import annotations

import itertools
import math
import random
import statistics

import pytest

from services.bench.arrivals import (
    LoadSpec,
    arrival_offsets,
    ramp_time,
    sweep_values,
    worker_start_offsets,
)
from services.core.errors import ValidationError


def take(iterator, n):
    return list(itertools.islice(iterator, n))


def test_poisson_arrivals_are_seeded_and_exact() -> None:
    first = take(arrival_offsets(10.0, seed=7), 5)
    again = take(arrival_offsets(10.0, seed=7), 5)
    other = take(arrival_offsets(10.0, seed=8), 5)
    assert first == again
    assert first != other
    # The same numbers by hand: cumulative exponential gaps of rate 1, divided by the rate.
    rng = random.Random("arrivals:7")
    expected, total = [], 0.0
    for _ in range(5):
        total += rng.expovariate(1.0)
        expected.append(total / 10.0)
    assert first == pytest.approx(expected, abs=1e-12)


def test_poisson_mean_rate_and_gamma_burstiness() -> None:
    offsets = take(arrival_offsets(20.0, seed=1), 20_000)
    assert 20_000 / offsets[-1] == pytest.approx(20.0, rel=0.03)
    gaps = [b - a for a, b in itertools.pairwise(offsets)]
    # Exponential gaps: coefficient of variation 1.
    assert statistics.pstdev(gaps) / statistics.mean(gaps) == pytest.approx(1.0, rel=0.05)
    bursty = take(arrival_offsets(20.0, arrival="gamma", burstiness=0.25, seed=1), 20_000)
    bursty_gaps = [b - a for a, b in itertools.pairwise(bursty)]
    assert 20_000 / bursty[-1] == pytest.approx(20.0, rel=0.05)
    # Gamma with shape k: CV = 1/sqrt(k) = 2 for k = 0.25.
    assert statistics.pstdev(bursty_gaps) / statistics.mean(bursty_gaps) == pytest.approx(2.0, rel=0.1)


def test_constant_arrivals() -> None:
    assert take(arrival_offsets(4.0, arrival="constant"), 4) == [0.25, 0.5, 0.75, 1.0]


def test_linear_ramp_inverts_the_cumulative_rate() -> None:
    # From 0 to 10 req/s over 10 s: Λ(t) = t²/2 during the ramp, 50 arrivals by t = 10.
    assert ramp_time(50.0, 10.0, 10.0, 0.0) == pytest.approx(10.0)
    assert ramp_time(12.5, 10.0, 10.0, 0.0) == pytest.approx(5.0)
    # After the ramp: 10 per second.
    assert ramp_time(60.0, 10.0, 10.0, 0.0) == pytest.approx(11.0)
    # Starting at 2 req/s: Λ(t) = 2t + 0.4 t², Λ(5) = 20.
    assert ramp_time(20.0, 10.0, 10.0, 2.0) == pytest.approx(5.0)
    constant = take(arrival_offsets(5.0, arrival="constant", ramp_up_s=4.0), 40)
    # Fewer arrivals in the first second of the ramp than in the last one.
    assert sum(1 for t in constant if t < 1.0) < sum(1 for t in constant if 3.0 <= t < 4.0)


def test_worker_starts() -> None:
    assert worker_start_offsets(4, 0.0) == [0.0] * 4
    assert worker_start_offsets(4, 2.0) == [0.0, 0.5, 1.0, 1.5]


def test_sweep_values() -> None:
    assert sweep_values(1, 16, 5, integer=True) == [1, 2, 4, 8, 16]
    assert sweep_values(1, 2, 5, integer=True) == [1, 2]
    assert sweep_values(2.0, 10.0, 3, geometric=False) == [2.0, 6.0, 10.0]
    with pytest.raises(ValidationError):
        sweep_values(0, 10, 3)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (LoadSpec(mode="closed"), "Unknown load mode"),
        (LoadSpec(mode="concurrency", concurrency=0), "at least 1"),
        (LoadSpec(mode="rate", rate=None), "request rate"),
        (LoadSpec(mode="rate", rate=math.inf), "request rate"),
        (LoadSpec(requests=None, duration_s=None), "Bound the run"),
        (LoadSpec(burstiness=0), "Burstiness"),
        (LoadSpec(concurrency=100_000), "between 1 and"),
    ],
)
def test_load_validation_messages(spec: LoadSpec, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        spec.validate()


def test_load_labels() -> None:
    assert LoadSpec(concurrency=8, requests=100).label() == "concurrency 8, 100 requests"
    label = LoadSpec(
        mode="rate",
        rate=2.5,
        arrival="gamma",
        burstiness=0.5,
        concurrency=4,
        requests=None,
        duration_s=30,
    ).label()
    assert label == "2.5 req/s gamma b=0.5 cap 4, 30 s"

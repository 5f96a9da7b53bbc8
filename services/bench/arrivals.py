"""When requests leave: load shapes and arrival processes, seeded and exact.

| mode | what it does |
|---|---|
| concurrency | closed loop: `concurrency` workers, each sends its next request when the previous ends |
| rate | open loop: requests arrive at `rate` per second (Poisson, gamma with `burstiness`, or constant); `concurrency` optionally caps how many are in flight (the rest wait in a client queue, reported as queue time) |
| trace | the arrival times of a real trace, sped up by `trace_speed` |

`ramp_up_s` ramps the rate linearly from `ramp_start_rate` (open loop) or starts the closed-loop
workers one by one over that time. A run ends after `requests` requests or `duration_s`
seconds, whichever comes first; `warmup_requests` go first and are left out of the results.

Arrival times come from unit-rate gaps (exponential for Poisson, gamma with mean 1 and shape
`burstiness` otherwise: below 1 burstier, above 1 smoother) mapped through the inverse of the
cumulative rate, so a ramp changes the rate and never the shape of the process.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from dataclasses import dataclass

from services.core.errors import ValidationError

LOAD_MODES = ("concurrency", "rate", "trace")
ARRIVAL_PROCESSES = ("poisson", "gamma", "constant")

MAX_CONCURRENCY = 4096


@dataclass(frozen=True)
class LoadSpec:
    """How hard and for how long: the load shape of one run (or one sweep step)."""

    mode: str = "concurrency"
    concurrency: int | None = 1
    rate: float | None = None
    arrival: str = "poisson"
    burstiness: float = 1.0
    ramp_up_s: float = 0.0
    ramp_start_rate: float = 0.0
    requests: int | None = 100
    duration_s: float | None = None
    warmup_requests: int = 0
    trace_speed: float = 1.0
    seed: int = 0

    def validate(self) -> LoadSpec:
        if self.mode not in LOAD_MODES:
            raise ValidationError(
                f"Unknown load mode {self.mode!r}; choose one of {', '.join(LOAD_MODES)}."
            )
        if self.mode == "concurrency" and not self.concurrency:
            raise ValidationError("A closed-loop run needs a concurrency of at least 1.")
        if self.concurrency is not None and not 1 <= self.concurrency <= MAX_CONCURRENCY:
            raise ValidationError(f"Concurrency must be between 1 and {MAX_CONCURRENCY}.")
        if self.mode == "rate" and (
            self.rate is None or not (self.rate > 0 and math.isfinite(self.rate))
        ):
            raise ValidationError("An open-loop run needs a request rate above 0 per second.")
        if self.arrival not in ARRIVAL_PROCESSES:
            raise ValidationError(
                f"Unknown arrival process {self.arrival!r}; choose one of {', '.join(ARRIVAL_PROCESSES)}."
            )
        if not self.burstiness > 0:
            raise ValidationError(
                "Burstiness must be above 0 (1 = Poisson, below 1 burstier, above 1 smoother)."
            )
        if self.ramp_up_s < 0 or self.ramp_start_rate < 0:
            raise ValidationError("Ramp-up time and start rate cannot be negative.")
        if self.requests is None and self.duration_s is None:
            raise ValidationError("Bound the run by a number of requests or by a duration.")
        if self.requests is not None and self.requests < 1:
            raise ValidationError("A run needs at least 1 request.")
        if self.duration_s is not None and not self.duration_s > 0:
            raise ValidationError("The duration must be above 0 seconds.")
        if self.warmup_requests < 0:
            raise ValidationError("Warm-up requests cannot be negative.")
        if not self.trace_speed > 0:
            raise ValidationError("The trace speed must be above 0.")
        return self

    def label(self) -> str:
        if self.mode == "concurrency":
            shape = f"concurrency {self.concurrency}"
        elif self.mode == "rate":
            shape = f"{self.rate:g} req/s {self.arrival}"
            if self.arrival == "gamma":
                shape += f" b={self.burstiness:g}"
            if self.concurrency:
                shape += f" cap {self.concurrency}"
        else:
            shape = f"trace x{self.trace_speed:g}"
        bound = f"{self.requests} requests" if self.requests is not None else ""
        if self.duration_s is not None:
            bound += (" or " if bound else "") + f"{self.duration_s:g} s"
        return f"{shape}, {bound}"


def unit_gaps(arrival: str, burstiness: float, rng: random.Random) -> Iterator[float]:
    """Gaps with mean 1 of the chosen process."""
    if arrival == "constant":
        while True:
            yield 1.0
    elif arrival == "gamma" and burstiness != 1.0:
        scale = 1.0 / burstiness
        while True:
            yield rng.gammavariate(burstiness, scale)
    else:
        while True:
            yield rng.expovariate(1.0)


def ramp_time(work: float, rate: float, ramp_up_s: float, start_rate: float) -> float:
    """The time t at which the cumulative rate integral reaches `work` (inverse of Λ).

    Λ(t) = r0·t + (r - r0)·t²/(2T) during the ramp, then r per second.
    """
    if ramp_up_s <= 0 or start_rate >= rate:
        return work / rate
    ramp_work = (start_rate + rate) * ramp_up_s / 2
    if work >= ramp_work:
        return ramp_up_s + (work - ramp_work) / rate
    a = (rate - start_rate) / (2 * ramp_up_s)
    b = start_rate
    return (-b + math.sqrt(b * b + 4 * a * work)) / (2 * a)


def arrival_offsets(
    rate: float,
    *,
    arrival: str = "poisson",
    burstiness: float = 1.0,
    seed: int = 0,
    ramp_up_s: float = 0.0,
    ramp_start_rate: float = 0.0,
) -> Iterator[float]:
    """Endless seconds-after-start of successive arrivals at `rate` per second."""
    rng = random.Random(f"arrivals:{seed}")
    work = 0.0
    for gap in unit_gaps(arrival, burstiness, rng):
        work += gap
        yield ramp_time(work, rate, ramp_up_s, ramp_start_rate)


def worker_start_offsets(concurrency: int, ramp_up_s: float) -> list[float]:
    """When each closed-loop worker starts: all at once, or evenly over the ramp."""
    if ramp_up_s <= 0 or concurrency <= 1:
        return [0.0] * concurrency
    return [index * ramp_up_s / concurrency for index in range(concurrency)]


def sweep_values(
    start: float, stop: float, steps: int, *, geometric: bool = True, integer: bool = False
) -> list[float]:
    """Load levels of a sweep from `start` to `stop` (doubling-like when geometric)."""
    if steps < 1 or start <= 0 or stop < start:
        raise ValidationError("A sweep needs 0 < start <= stop and at least one step.")
    if steps == 1:
        values = [start]
    elif geometric:
        ratio = (stop / start) ** (1 / (steps - 1))
        values = [start * ratio**i for i in range(steps)]
    else:
        values = [start + (stop - start) * i / (steps - 1) for i in range(steps)]
    if integer:
        ints: list[float] = []
        for value in values:
            rounded = max(1, round(value))
            if not ints or rounded > ints[-1]:
                ints.append(rounded)
        return ints
    return [round(value, 6) for value in values]

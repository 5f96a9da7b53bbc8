"""The energy arithmetic, each figure in one function."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


def joules_between(start: float, end: float, wrap_j: float | None = None) -> float | None:
    """Joules spent between two readings of one cumulative counter.

    A counter that went down wrapped once when it has a range (RAPL starts again from 0 after
    `wrap_j`); without one (NVML, DCGM) it was reset (driver reloaded, GPU reset) and the window
    cannot be measured: None, never a negative or made-up figure."""
    if end >= start:
        return end - start
    if wrap_j is None or wrap_j <= 0 or start > wrap_j:
        return None
    return wrap_j - start + end


def integrate_power(samples: Iterable[tuple[float, float]]) -> float:
    """Joules from (seconds, watts) samples in time order: the trapezoid rule, so a window
    with power rising or falling counts the mean of each interval's ends."""
    total = 0.0
    previous: tuple[float, float] | None = None
    for at, watts in samples:
        if previous is not None and at > previous[0]:
            total += (at - previous[0]) * (watts + previous[1]) / 2.0
        previous = (at, watts)
    return total


@dataclass(frozen=True)
class PerToken:
    j_per_output_token: float | None
    output_tokens_per_j: float | None


def energy_per_token(joules: float | None, output_tokens: float | None) -> PerToken:
    """Joules per output token and output tokens per joule; None where energy or tokens are
    missing (a step with no output spends energy on nothing countable: no figure, not 0)."""
    if joules is None or joules < 0 or not output_tokens or output_tokens <= 0:
        return PerToken(None, None)
    return PerToken(joules / output_tokens, output_tokens / joules if joules > 0 else None)

"""The command line's number types: each option takes a whole number or a finite number within
bounds its users can hold, or argparse prints one line naming the option and exits 2.

A bare `type=int` took any size (`runs list --page 99999999999999999999` reached SQLite and came
back as an OverflowError traceback) and a bare `type=float` took nan and inf (`scrape --timeout
inf` ended in the clock's OverflowError, `plan --reserve-gib nan` in a ValueError).
tests/commands/test_arguments.py holds every number option of every subcommand to these types.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

from services.core.ids import MAX_ID

#: The longest wait, window or duration an option takes: a week. Past it a clock's sleep
#: overflows (a timeout of 1e20 s) long before anyone would wait for it.
MAX_SECONDS = 7 * 24 * 3600.0
#: Tokens of one prompt or answer, requests of one run: the benchmark's own ceilings.
MAX_TOKENS = 1_000_000
MAX_COUNT = 1_000_000
#: Requests per second of an open loop.
MAX_RATE = 1_000_000.0
#: A sampling seed: what engines read into a signed 64-bit integer.
MAX_SEED = 2**63 - 1


def _short(text: str) -> str:
    return repr(text if len(text) <= 30 else text[:30] + "…")


def whole(low: int = 0, high: int = MAX_ID) -> Callable[[str], int]:
    """A whole number from `low` to `high` (digits only, so a 5,000-digit argument is refused
    without being converted)."""
    expects = f"a whole number from {low:,} to {high:,}".replace(",", " ")
    digits = len(str(max(abs(low), abs(high))))

    def parse(text: str) -> int:
        body = text.strip().removeprefix("-").removeprefix("+")
        if not (body.isascii() and body.isdigit() and len(body) <= digits):
            raise argparse.ArgumentTypeError(f"expected {expects}, got {_short(text)}")
        value = int(text.strip())
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"expected {expects}, got {_short(text)}")
        return value

    parse.__name__ = "whole number"  # argparse names the type in its fallback message
    return parse


def number(low: float = 0.0, high: float = math.inf, *, above: bool = False) -> Callable[[str], float]:
    """A finite number from `low` (or above it, with `above`) to `high`: nan, inf and
    1e400 are refused."""
    bound = f"above {low:g}" if above else f"at least {low:g}"
    expects = f"a number {bound}" + (f" and at most {high:g}" if math.isfinite(high) else "")

    def parse(text: str) -> float:
        try:
            value = float(text.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {expects}, got {_short(text)}") from None
        inside = value > low if above else value >= low
        if not (math.isfinite(value) and inside and value <= high):
            raise argparse.ArgumentTypeError(f"expected {expects}, got {_short(text)}")
        return value

    parse.__name__ = "number"
    return parse


def seconds(*, zero: bool = False) -> Callable[[str], float]:
    """A duration in seconds: above 0 (or 0 too, with `zero`), at most MAX_SECONDS."""
    return number(0.0, MAX_SECONDS, above=not zero)


def seed() -> Callable[[str], int]:
    return whole(0, MAX_SEED)

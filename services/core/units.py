"""Figures as people read them: one rule per kind of figure, the same on every surface (the
pages, the CLI, the HTML and Markdown reports, the gate), and one reader of a number.

The rules (docs/measuring.md, "The figures of one request"):

- a duration: under 1 s in ms, from 1 s in s. In ms whole from 100 ms, one decimal from 1 ms,
  three below (850 ms, 41.2 ms, 0.134 ms); in s two decimals (1.37 s). 0.9996 s reads 1.00 s,
  as it would round.
- durations side by side (a row, a column, a chart, a sentence): one unit for all, seconds once
  any reaches 1 s (`duration_unit`); under 1 s in seconds three decimals, as many figures as in
  ms (0.850 s beside 1.20 s).
- a rate: one decimal under 1,000, whole from 1,000, with its unit (45.6 tok/s, 1,234 tok/s).
- a count: whole, thousands separated (1,234).
- money: four decimals under $1, two from $1 ($0.0123, $12.50).
- a change (after / before - 1): a signed whole per cent (-85%, +3%); one decimal where a whole
  one would read 100% and is not (-99.7%).
- a share of a whole: one decimal under 10%, whole from 10% (8.3%, 42%).
- a size: decimal units, one decimal (269.0 MB).

What is not a finite number (None, NaN, an infinity, a boolean, text) is never written as a
figure: every writer gives `missing` ("—" unless a surface has its own mark, such as "-" in a
fixed-width CLI column). `number` is the one reader that turns stored JSON into a figure, and
`to_ms` the one conversion for a table or chart whose axis is in ms.

Markdown text is escaped by services.core.safe_text (`md_line`, `md_text`), the one escaper.
Core: imports no feature.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable
from typing import Literal

#: What a writer gives for a figure that is not there (unknown, not measured, not a number).
MISSING = "—"

TimeUnit = Literal["s", "ms"]


# ---------------------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------------------


def number(value: object) -> float | None:
    """A finite number, as a float; None for anything else: None, a boolean, text, NaN, an
    infinity, an integer too large for a float (a stored JSON `1e999` or 400 digits)."""
    if type(value) is float:  # the common case, read per sample: no ABC check
        return value if math.isfinite(value) else None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    try:
        result = float(value)
    except (OverflowError, TypeError, ValueError):
        return None
    return result if math.isfinite(result) else None


def number_text(value: object) -> float | None:
    """`number`, and text that holds a number (a CSV cell, a field of someone else's JSON
    written as text: " 1.5 "); "nan", "inf" and anything else: None."""
    if isinstance(value, str):
        try:
            return number(float(value))
        except ValueError:
            return None
    return number(value)


def to_ms(seconds: object, digits: int | None = None) -> float | None:
    """Seconds as a number of milliseconds for a table or chart in ms (rounded to `digits`
    where given); None where `seconds` is not a finite number."""
    value = number(seconds)
    if value is None:
        return None
    return value * 1000 if digits is None else round(value * 1000, digits)


# ---------------------------------------------------------------------------------------
# Durations
# ---------------------------------------------------------------------------------------


def _in_seconds(seconds: float) -> bool:
    # 0.9996 s would read "1,000 ms": it reads 1.00 s, as it is shown.
    return round(abs(seconds), 3) >= 1


def duration_unit(values: Iterable[object]) -> TimeUnit:
    """The one unit of durations shown side by side: "s" once any of them reaches a second
    (what is not a number is passed over), else "ms"."""
    return "s" if any(_in_seconds(v) for v in map(number, values) if v is not None) else "ms"


def duration(
    seconds: object,
    unit: TimeUnit | None = None,
    *,
    missing: str = MISSING,
    more_decimals: int = 0,
) -> str:
    """A duration given in seconds: under 1 s in ms, from 1 s in s, or in `unit` where figures
    shown together share one (`duration_unit`). `more_decimals` adds to each form's decimals,
    for figures set side by side that differ but would read alike."""
    value = number(seconds)
    if value is None:
        return missing
    value += 0.0  # -0.0 reads 0
    more = max(0, more_decimals)
    if (unit or ("s" if _in_seconds(value) else "ms")) == "s":
        return f"{value:,.{2 + more}f} s" if _in_seconds(value) else f"{value:.{3 + more}f} s"
    ms = value * 1000
    if round(abs(ms), 1) >= 100:
        return f"{ms:,.{more}f} ms"
    return f"{ms:.{1 + more}f} ms" if round(abs(ms), 3) >= 1 else f"{ms:.{3 + more}f} ms"


def duration_ms(ms: object, unit: TimeUnit | None = None, *, missing: str = MISSING) -> str:
    """`duration` of a figure stored in ms (a self-check's loop lag, a demo's p90 TTFT)."""
    value = number(ms)
    return missing if value is None else duration(value / 1000, unit, missing=missing)


# ---------------------------------------------------------------------------------------
# Rates, counts, money, per cents, sizes
# ---------------------------------------------------------------------------------------


def rate(value: object, unit: str = "tok/s", *, missing: str = MISSING) -> str:
    """A rate with its unit: 45.6 tok/s, 1,234 tok/s, 2.5 req/s."""
    found = number(value)
    if found is None:
        return missing
    return f"{found:,.1f} {unit}" if round(abs(found), 1) < 1000 else f"{found:,.0f} {unit}"


def count(value: object, *, missing: str = MISSING) -> str:
    """A count, whole, thousands separated: 1,234."""
    found = number(value)
    return missing if found is None else f"{found:,.0f}"


def usd(value: object, *, missing: str = MISSING) -> str:
    """Dollars: $0.0123 under a dollar, $12.50 from one."""
    found = number(value)
    if found is None:
        return missing
    return f"${found:,.4f}" if abs(found) < 1 else f"${found:,.2f}"


def percent(value: object, signed: bool = True, *, missing: str = MISSING) -> str:
    """A relative change (after / before - 1) as a whole per cent: -0.853 reads "-85%"; one
    that would round to a misleading 100% keeps a decimal (-99.7%). Unsigned, a fraction of a
    whole read the same way (a match rate: 97%)."""
    found = number(value)
    if found is None:
        return missing
    if round(found * 100) == 0:
        return "0%"
    digits = 1 if round(abs(found) * 100) == 100 and abs(found) != 1 else 0
    return f"{found * 100:+.{digits}f}%" if signed else f"{found * 100:.{digits}f}%"


def share(value: object, *, missing: str = MISSING) -> str:
    """A share of a whole: 0.083 reads "8.3%", 0.42 "42%" (a small share keeps a decimal)."""
    found = number(value)
    if found is None:
        return missing
    return f"{found * 100:.1f}%" if abs(found) < 0.1 else f"{found * 100:.0f}%"


def size(value: object, *, missing: str = MISSING) -> str:
    """A size in bytes, in decimal units: 269.0 MB, 512 B."""
    found = number(value)
    if found is None:
        return missing
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if abs(found) >= scale:
            return f"{found / scale:.1f} {unit}"
    return f"{found:.0f} B"

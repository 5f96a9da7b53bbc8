"""Lenient readers of stored JSON: a run's summary comes from this version, an older one or an
imported file, so a field may be missing or of another type. Each reader returns the value
when it has the expected type, else a neutral one, and never raises (the typed summaries in
services/bench, tune, demos and parity read through these)."""

from __future__ import annotations

import math
from typing import Any


def mapping(value: Any) -> dict[str, Any]:
    """A JSON object as a fresh dict (anything else: empty)."""
    return dict(value) if isinstance(value, dict) else {}


def text(value: Any) -> str | None:
    """A string, the empty one included (anything else: None)."""
    return value if isinstance(value, str) else None


def nonempty_text(value: Any) -> str | None:
    """A string with something in it (anything else, "" included: None)."""
    return value if isinstance(value, str) and value else None


def number(value: Any) -> float | None:
    """A finite JSON number (booleans, NaN, infinities and anything else: None)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def count(value: Any) -> int:
    """A count: a finite number, truncated; anything else counts as 0."""
    found = number(value)
    return int(found) if found is not None else 0

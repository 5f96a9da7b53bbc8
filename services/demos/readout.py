"""What a step shows on the projector: a few big numbers and one chart (stored as data, drawn
by services.demos.charts), and the figures in them written as people read them (1.37 s, 45 ms,
-85%, 1,234 tok/s)."""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal


@dataclass(frozen=True)
class BigNumber:
    """One figure shown large on the projector: "vllm-cpu · cached turn: 0.20 s (-85%)"."""

    label: str
    text: str
    value: float | None = None
    delta: str | None = None
    #: "inverse" when a fall is good news (latency), as st.metric's delta_color takes it.
    delta_color: Literal["normal", "inverse", "off"] = "off"
    #: The longer description (a tooltip on the page); labels stay short for a slide.
    help: str | None = None


@dataclass
class Series:
    name: str
    x: list[Any] = field(default_factory=list)
    y: list[float | None] = field(default_factory=list)
    text: list[str] | None = None


@dataclass
class ChartSpec:
    """One chart per step, stored as data (plotly figures are built at render time,
    so a stored demo replays with the theme of whoever opens it)."""

    title: str
    x_title: str
    y_title: str
    kind: Literal["bar", "line"] = "bar"
    series: list[Series] = field(default_factory=list)
    x_log: bool = False
    y_log: bool = False
    #: Treat x values as categories (chat turns, concurrency levels): evenly spaced, no 1.5.
    x_category: bool = False
    #: A horizontal reference line per series name (e.g. the roofline bound), with its label.
    references: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ChartSpec:
        series = [Series(**item) for item in data.get("series") or []]
        fields = {k: v for k, v in data.items() if k in cls.__dataclass_fields__ and k != "series"}
        return cls(series=series, **fields)


# ---------------------------------------------------------------- number helpers


def median(values: Iterable[float | None]) -> float | None:
    clean = [v for v in values if v is not None and math.isfinite(v)]
    return statistics.median(clean) if clean else None


def mean(values: Iterable[float | None]) -> float | None:
    clean = [v for v in values if v is not None and math.isfinite(v)]
    return statistics.fmean(clean) if clean else None


def change(before: float | None, after: float | None) -> float | None:
    """Relative change after/before - 1 (-0.85 = fell 85%)."""
    if before is None or after is None or before <= 0:
        return None
    return after / before - 1


def fmt_s(value: float | None, unit: Literal["s", "ms"] | None = None) -> str:
    """Seconds as people read them on a slide: 1.37 s, 0.20 s, 45 ms; in `unit` when figures
    shown side by side must share one (`one_time_unit`)."""
    if value is None:
        return "n/a"
    if unit == "s" or (unit is None and value >= 0.1):
        return f"{value:.2f} s" if value >= 0.1 or value == 0 else f"{value:.3f} s"
    if unit == "ms" or value >= 0.001:
        return f"{value * 1000:.0f} ms" if value >= 0.001 or value == 0 else f"{value * 1000:.2f} ms"
    return f"{value * 1e6:.0f} µs"


#: A figure fmt_s wrote: a number and a time unit, nothing else.
_TIME_TEXT = re.compile(r"^-?[0-9][0-9.,]* (s|ms|µs)$")


def one_time_unit(texts: Sequence[str], values: Sequence[float | None]) -> list[str]:
    """Times shown side by side (a step's big numbers, one chart's labels) in one unit
    (issue 47: "0.19 s" beside "21 ms"): seconds when any is 0.1 s or more, else ms. Texts
    that are not a time fmt_s wrote are kept."""
    timed = [
        i
        for i, (text, value) in enumerate(zip(texts, values, strict=True))
        if value is not None and _TIME_TEXT.match(text)
    ]
    if len(timed) < 2:
        return list(texts)
    unit: Literal["s", "ms"] = "s" if any((values[i] or 0) >= 0.1 for i in timed) else "ms"
    return [fmt_s(values[i], unit) if i in timed else text for i, text in enumerate(texts)]


def fmt_pct(value: float | None, signed: bool = True) -> str:
    """-0.853 -> "-85%"; a value that would round to a misleading 100% keeps a decimal (-99.7%)."""
    if value is None:
        return "n/a"
    if round(value * 100) == 0:
        return "0%"
    digits = 1 if round(abs(value) * 100) == 100 and abs(value) != 1 else 0
    return f"{value * 100:+.{digits}f}%" if signed else f"{value * 100:.{digits}f}%"


def fmt_share(value: float | None) -> str:
    """A usage share: 0.083 -> "8.3%", 0.42 -> "42%" (small shares keep a decimal)."""
    if value is None:
        return "n/a"
    return f"{value * 100:.1f}%" if abs(value) < 0.1 else f"{value * 100:.0f}%"


def fmt_rate(value: float | None, unit: str = "tok/s") -> str:
    if value is None:
        return "n/a"
    if value >= 100:
        return f"{value:,.0f} {unit}"
    return f"{value:.1f} {unit}"


def fmt_bytes(value: float | None) -> str:
    if value is None:
        return "n/a"
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if value >= size:
            return f"{value / size:.1f} {unit}"
    return f"{value:.0f} B"


@dataclass
class StepOutcome:
    """What one step measured. `data` holds the raw figures the conclusion reads."""

    numbers: list[BigNumber] = field(default_factory=list)
    chart: ChartSpec | None = None
    finding: str = ""
    data: dict[str, Any] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "numbers": [asdict(n) for n in self.numbers],
            "chart": self.chart.to_dict() if self.chart else None,
            "finding": self.finding,
            "data": self.data,
            "errors": list(self.errors),
        }

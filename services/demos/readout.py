"""What a step shows on the projector: a few big numbers and one chart (stored as data, drawn
by services.demos.charts), its figures written by services.core.units (1.37 s, 45.0 ms, -85%,
1,234 tok/s)."""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from services.core import units


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


#: A time a units.duration wrote: a number and a time unit, nothing else ("µs" as older
#: demos stored it).
_TIME_TEXT = re.compile(r"^-?[0-9][0-9.,]* (s|ms|µs)$")


def one_time_unit(texts: Sequence[str], values: Sequence[float | None]) -> list[str]:
    """Times shown side by side (a step's big numbers, one chart's labels) in one unit
    (issue 47: "0.19 s" beside "21 ms"), units.duration_unit's. Texts that are not a time
    written by units.duration are kept."""
    timed = [
        i
        for i, (text, value) in enumerate(zip(texts, values, strict=True))
        if value is not None and _TIME_TEXT.match(text)
    ]
    if len(timed) < 2:
        return [units.duration(values[i]) if i in timed else text for i, text in enumerate(texts)]
    unit = units.duration_unit(values[i] for i in timed)
    return [units.duration(values[i], unit) if i in timed else text for i, text in enumerate(texts)]


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

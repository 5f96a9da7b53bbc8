"""What a guided demo is made of: a scenario, its steps, what a step measured, and the
conclusion written from those measurements.

A scenario plans its steps for the engines the presenter picked; each step runs a small
scripted experiment through a `DemoContext` (services.demos.context) and returns a
`StepOutcome`: a few large numbers, one chart, a one-sentence finding and the raw
figures. The conclusion is a pure function of the stored steps, so a replay renders
from the database alone and the threshold logic is unit-tested on known numbers.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from services.core.errors import ValidationError

if TYPE_CHECKING:
    from services.demos.context import DemoContext
    from services.engines.endpoints import EngineRecord


# ---------------------------------------------------------------- measured records


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


@dataclass(frozen=True)
class StepPlan:
    key: str
    title: str
    explanation: str
    run: Callable[[DemoContext], StepOutcome]


@dataclass(frozen=True)
class Conclusion:
    """The measured conclusion: a headline, one line per engine, and per engine the
    verdict the lines were written from (machine-readable, for `demo --json` and tests)."""

    headline: str
    lines: list[str] = field(default_factory=list)
    verdicts: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return join_sentences([self.headline, *self.lines])


# ---------------------------------------------------------------- options


@dataclass(frozen=True)
class OptionSpec:
    """A setting of a scenario the presenter may change (CLI: --set key=value)."""

    key: str
    label: str
    default: Any
    kind: Literal["int", "float", "int_list", "choice", "text"] = "int"
    help: str = ""
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()

    def parse(self, raw: Any) -> Any:
        """The typed value of `raw` (a string from the CLI or a widget value)."""
        try:
            if self.kind == "int":
                value: Any = int(raw)
                self._check_range(value)
            elif self.kind == "float":
                value = float(raw)
                if not math.isfinite(value):
                    raise ValueError
                self._check_range(value)
            elif self.kind == "int_list":
                items = raw if isinstance(raw, (list, tuple)) else str(raw).replace(";", ",").split(",")
                value = [int(str(item).strip()) for item in items if str(item).strip()]
                if not value:
                    raise ValueError
                for item in value:
                    self._check_range(item)
            elif self.kind == "choice":
                value = str(raw)
                if self.choices and value not in self.choices:
                    raise ValidationError(
                        f"{self.label}: choose one of {', '.join(self.choices)} (got {value!r})."
                    )
            else:
                value = str(raw).strip()
        except ValidationError:
            raise
        except (TypeError, ValueError):
            what = {
                "int": "a whole number",
                "float": "a number",
                "int_list": "whole numbers separated by commas",
            }
            raise ValidationError(
                f"{self.label} must be {what.get(self.kind, 'text')} (got {raw!r})."
            ) from None
        return value

    def _check_range(self, value: float) -> None:
        if self.minimum is not None and value < self.minimum:
            raise ValidationError(f"{self.label} must be at least {self.minimum:g} (got {value:g}).")
        if self.maximum is not None and value > self.maximum:
            raise ValidationError(f"{self.label} must be at most {self.maximum:g} (got {value:g}).")


# ---------------------------------------------------------------- scenario


class Scenario:
    """One mechanism of LLM serving, shown by a short scripted experiment."""

    name: ClassVar[str]
    title: ClassVar[str]
    #: What it is called in the engines' own documentation.
    mechanism: ClassVar[str]
    explanation: ClassVar[str]
    default_engines: ClassVar[tuple[str, ...]] = ("llamacpp-4slot", "vllm-cpu", "llamacpp-1slot")
    options: ClassVar[tuple[OptionSpec, ...]] = ()
    duration_hint: ClassVar[str] = "about a minute on the local CPU engines"
    min_engines: ClassVar[int] = 1

    def plan(self, engines: Sequence[EngineRecord], options: dict[str, Any]) -> list[StepPlan]:
        raise NotImplementedError

    def conclude(
        self, steps: Sequence[dict[str, Any]], engines: Sequence[str], options: dict[str, Any]
    ) -> Conclusion:
        raise NotImplementedError

    def resolve_options(self, given: dict[str, Any] | None) -> dict[str, Any]:
        """Defaults filled in, each value typed and checked; unknown keys are an error."""
        given = dict(given or {})
        known = {o.key: o for o in self.options}
        unknown = sorted(set(given) - set(known))
        if unknown:
            listing = ", ".join(known) or "none"
            raise ValidationError(
                f"Scenario {self.name!r} has no setting {', '.join(unknown)}; its settings: {listing}."
            )
        return {
            key: spec.parse(given[key]) if key in given else spec.default for key, spec in known.items()
        }

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "mechanism": self.mechanism,
            "explanation": self.explanation,
            "default_engines": list(self.default_engines),
            "duration_hint": self.duration_hint,
            "options": [asdict(o) for o in self.options],
        }


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


def join_sentences(lines: Iterable[str]) -> str:
    return " ".join(line.strip() for line in lines if line and line.strip())


def engine_data(steps: Sequence[dict[str, Any]], key: str) -> dict[str, Any]:
    """The `data` of the stored step with this key ({} when it did not run)."""
    for step in steps:
        if step.get("key") == key:
            return step.get("data") or {}
    return {}

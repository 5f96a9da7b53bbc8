"""What a step shows on the projector: a few big numbers and one chart (stored as data, drawn
by services.demos.charts), its figures written by services.core.units (1.37 s, 45.0 ms, -85%,
1,234 tok/s)."""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal, NotRequired, TypedDict

from services.core import units
from services.core.json_types import JsonOut


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


#: An x value of a chart: a category (an engine, "turn 2") or a number.
XValue = str | float | None


class NumberJson(TypedDict):
    """A BigNumber as a stored step holds it (older demos stored no `help`)."""

    label: str
    text: str
    value: float | None
    delta: str | None
    delta_color: Literal["normal", "inverse", "off"]
    help: NotRequired[str | None]


class SeriesJson(TypedDict):
    name: str
    x: list[XValue]
    y: list[float | None]
    text: list[str] | None


class ReferenceLine(TypedDict):
    """A horizontal line across a chart at `y`, with its label."""

    y: float
    label: NotRequired[str]


class ChartJson(TypedDict):
    """A ChartSpec as a stored step holds it."""

    title: str
    x_title: str
    y_title: str
    kind: NotRequired[Literal["bar", "line"]]
    series: NotRequired[list[SeriesJson]]
    x_log: NotRequired[bool]
    y_log: NotRequired[bool]
    x_category: NotRequired[bool]
    references: NotRequired[list[ReferenceLine]]


@dataclass
class Series:
    name: str
    x: Sequence[XValue] = field(default_factory=list)
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
    references: list[ReferenceLine] = field(default_factory=list)

    def to_dict(self) -> ChartJson:
        return {
            "title": self.title,
            "x_title": self.x_title,
            "y_title": self.y_title,
            "kind": self.kind,
            "series": [
                {
                    "name": s.name,
                    "x": list(s.x),
                    "y": list(s.y),
                    "text": None if s.text is None else list(s.text),
                }
                for s in self.series
            ],
            "x_log": self.x_log,
            "y_log": self.y_log,
            "x_category": self.x_category,
            "references": [ReferenceLine(**r) for r in self.references],
        }

    @classmethod
    def from_dict(cls, data: ChartJson) -> ChartSpec:
        # A stored chart without a title or axis titles raises, as it always has; the rest default.
        defaults = cls("", "", "")
        return cls(
            title=data["title"],
            x_title=data["x_title"],
            y_title=data["y_title"],
            kind=data.get("kind", defaults.kind),
            series=[Series(**item) for item in data.get("series") or []],
            x_log=data.get("x_log", defaults.x_log),
            y_log=data.get("y_log", defaults.y_log),
            x_category=data.get("x_category", defaults.x_category),
            references=list(data.get("references", defaults.references)),
        )


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


# ---------------------------------------------------------------- stored figures
# What steps store in their `data` and scenarios read back (their conclusion, a later step's
# chart): one key per figure, each with its type, so that a misspelt figure is a type error.
# Stored steps of older versions read through the same types: every key may be missing.


class WaveFigures(TypedDict, total=False):
    """One wave of requests sent together (common.wave_figures); the KV-pressure waves add
    the engine's metrics over the wave."""

    concurrency: int
    ok: int
    failed: int
    error: str | None
    output_tokens: int
    wall_s: float
    throughput_tok_s: float | None
    decode_tok_s: float | None
    ttft_mean_s: float | None
    e2e_mean_s: float | None
    e2e_max_s: float
    parallel: float | None
    kv_peak: float | None
    kv_reason: str | None
    waiting_peak: float | None
    waiting_reason: str | None
    running_peak: float | None
    preemptions: float | None
    preemptions_reason: str | None
    metrics_error: str | None


class ChatTurn(TypedDict):
    """One turn of the prefix-cache chat."""

    turn: int
    ttft_s: float | None
    prompt_tokens: int | None
    cached_tokens: int | None


class ParityFigures(TypedDict, total=False):
    """One engine's answers pooled against the reference's (services/parity's
    PooledComparison, and the median margin at the divergence)."""

    compared: int
    exact_match_rate: float | None
    diverged: int
    divergence_positions: list[int]
    divergence_median: float | None
    divergence_p10: float | None
    divergence_p90: float | None
    token_agreement_mean: float | None
    logprob_diff_mean: float | None
    topk_rate: float | None
    units: list[str]
    margin_median: float | None


class EngineFigures(TypedDict, total=False):
    """One engine's figures in a step that measured the engines one after another; each
    scenario fills its own keys (the comment above each group names it)."""

    error: str | None
    # prefix-cache, repeated prompt
    cold_ttft_s: float | None
    warm_ttft_s: float | None
    prompt_tokens: int | None
    cold_cached_tokens: int | None
    cached_tokens: int | None
    hit_rate: float | None
    hit_rate_reason: str | None
    verdict: str
    # prefix-cache, chat
    turns: list[ChatTurn]
    first_ttft_s: float | None
    later_ttft_s: float | None
    later_turns_change: float | None
    # parallel-sampling
    unsupported: bool
    e2e_s: float | None
    ttft_s: float | None
    tokens: int | None
    choices: int
    throughput_tok_s: float | None
    kv_peak: float | None
    kv_reason: str | None
    # decode-bound, bandwidth
    weights_bytes: float | None
    weights_format: str | None
    weights_source: str | None
    bytes_per_step: float | None
    bound_tok_s_batch1: float | None
    bound_tok_s_batchN: float | None
    limited_by_batchN: str | None
    context: int
    # decode-bound, decode
    decode_tok_s: float | None
    bound_tok_s: float | None
    ok: int | None
    parallel: float | None
    # structured-output
    requests: int
    answered: int
    valid: int
    valid_rate: float | None
    why_invalid: list[str]
    example: str | None
    # same-model
    sent: int
    task_score: float | None
    tok_s: float | None
    parity: ParityFigures


class SlotRow(TypedDict):
    """One slot count of the how-many-slots demo."""

    slots: int
    label: str
    status: str
    tok_s: float | None
    ttft_p90_ms: float | None
    reason: str | None


class StepData(TypedDict, total=False):
    """A step's raw figures, which the conclusion reads."""

    #: Steps that measured the engines one after another: each one's figures.
    engines: dict[str, EngineFigures]
    #: Steps of one engine's waves: the engine, its waves, and its verdict's JSON (read back
    #: only through the scenario's verdict record).
    engine: str
    levels: list[WaveFigures]
    verdict: JsonOut
    # parallel-sampling and decode-bound: the step's n or batch
    n: int
    batch: int
    # decode-bound, bandwidth
    bandwidth_bytes_s: float
    bandwidth_source: str
    measured: bool
    warnings: list[str]
    # how-many-slots
    rows: list[SlotRow]
    tune_run: int
    # same-model
    reference: str


class StepShown(TypedDict):
    """What a step's outcome writes into its stored step (summary.StepBlock)."""

    numbers: list[NumberJson]
    chart: ChartJson | None
    finding: str
    data: StepData
    errors: list[str]


def number_json(number: BigNumber) -> NumberJson:
    return {
        "label": number.label,
        "text": number.text,
        "value": number.value,
        "delta": number.delta,
        "delta_color": number.delta_color,
        "help": number.help,
    }


@dataclass
class StepOutcome:
    """What one step measured. `data` holds the raw figures the conclusion reads."""

    numbers: list[BigNumber] = field(default_factory=list)
    chart: ChartSpec | None = None
    finding: str = ""
    data: StepData = field(default_factory=lambda: StepData())
    errors: list[str] = field(default_factory=list)

    def to_dict(self) -> StepShown:
        return {
            "numbers": [number_json(n) for n in self.numbers],
            "chart": self.chart.to_dict() if self.chart else None,
            "finding": self.finding,
            "data": self.data,
            "errors": list(self.errors),
        }
